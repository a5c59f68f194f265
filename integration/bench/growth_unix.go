//go:build unix

package main

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskUsage is what the files under dir occupy on disk, as du counts it:
// allocated 512-byte blocks (a sparse or preallocated file counts what it
// holds, not its length), each inode once; 0 when dir cannot be read.
func diskUsage(dir string) int64 {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed under the walk (compaction)
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		k := inode{uint64(st.Dev), uint64(st.Ino)}
		if !seen[k] {
			seen[k] = true
			total += int64(st.Blocks) * 512
		}
		return nil
	})
	return total
}
