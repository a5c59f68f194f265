package cluster

import (
	"strings"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/vfs"
)

// receivingFS is the file system dragonboat gets: the default one, except
// that a received snapshot's file starts its writeback as each chunk of
// it is closed. dragonboat writes a snapshot it receives chunk by chunk
// and syncs it once, after the last chunk; without the early writeback
// that sync waits for the whole file (a quarter of a second for 128 MB
// here), and the leader, which learns the stream ended as soon as it
// sent the last chunk, meanwhile sends the target entries after the
// snapshot. The target, not yet knowing the snapshot, refuses them, and
// the leader streams the whole snapshot a second time beside the
// restore of the first.
type receivingFS struct{ config.IFS }

// receiving is whether name is in the directory of a snapshot being
// received ("snapshot-<index>-<from>.receiving").
func receiving(name string) bool {
	return strings.Contains(name, ".receiving")
}

func (f receivingFS) Create(name string) (vfs.File, error) {
	file, err := f.IFS.Create(name)
	if err != nil || !receiving(name) {
		return file, err
	}
	return writebackFile{file}, nil
}

func (f receivingFS) OpenForAppend(name string) (vfs.File, error) {
	file, err := f.IFS.OpenForAppend(name)
	if err != nil || !receiving(name) {
		return file, err
	}
	return writebackFile{file}, nil
}

// writebackFile starts writing its dirty pages back when it is closed.
type writebackFile struct{ vfs.File }

func (f writebackFile) Close() error {
	if fd, ok := f.File.(interface{ Fd() uintptr }); ok {
		startWriteback(fd.Fd())
	}
	return f.File.Close()
}
