package cluster

import (
	"path/filepath"
	"testing"

	"github.com/lni/vfs"
)

// A received snapshot's files start their writeback as each chunk is
// closed, and hold what was written; other files are the default ones.
func TestReceivingFS(t *testing.T) {
	fs := receivingFS{vfs.Default}
	dir := t.TempDir()
	recv := filepath.Join(dir, "snapshot-0000000000000010-3.receiving")
	if err := fs.MkdirAll(recv, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(recv, "snapshot-0000000000000010.gbsnap")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(writebackFile); !ok {
		t.Fatalf("a received snapshot's file is %T, not a writebackFile", f)
	}
	if _, err := f.Write([]byte("first chunk,")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = fs.OpenForAppend(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(writebackFile); !ok {
		t.Fatalf("a received snapshot's file opened to append is %T", f)
	}
	if _, err := f.Write([]byte(" second chunk")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	_ = r.Close()
	if got := string(buf[:n]); got != "first chunk, second chunk" {
		t.Fatalf("the file holds %q", got)
	}

	other, err := fs.Create(filepath.Join(dir, "log-000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, ok := other.(writebackFile); ok {
		t.Fatal("a file outside a received snapshot's directory is wrapped")
	}
}
