package cluster

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// TestCopyProgress: a replica counts the snapshot bytes its restore has
// taken in while it runs (all of them once it finished) and the bytes of
// the entries it applies after.
func TestCopyProgress(t *testing.T) {
	src := openBadger(t, filepath.Join(t.TempDir(), "src"))
	defer src.Close()
	dst := openBadger(t, filepath.Join(t.TempDir(), "dst"))
	defer dst.Close()
	a := newMachine(t, src, 3, "p/")
	for i := 1; i <= 200; i++ {
		b := NewBatch()
		b.Put(fmt.Appendf(nil, "p/%04d", i), bytes.Repeat([]byte{'v'}, 2000))
		if _, err := a.Update([]sm.Entry{{Index: uint64(i), Cmd: b.Encoded()}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.CopyProgress(); got.EntryBytes < 200*2000 || got.Restoring || got.SnapshotBytes != 0 {
		t.Errorf("after 200 entries of 2000-byte values: %+v", got)
	}
	point, err := a.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := a.SaveSnapshot(point, &snap, nil); err != nil {
		t.Fatal(err)
	}

	b := newMachine(t, dst, 3, "p/")
	if got := b.CopyProgress(); got != (CopyProgress{}) {
		t.Errorf("a new replica copied %+v", got)
	}
	// The stream arrives in two halves: between them the restore is
	// under way with at least the first half taken in.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- b.RecoverFromSnapshot(pr, nil) }()
	half := snap.Len() / 2
	if _, err := pw.Write(snap.Bytes()[:half]); err != nil {
		t.Fatal(err)
	}
	mid := b.CopyProgress()
	for deadline := time.Now().Add(5 * time.Second); mid.SnapshotBytes < int64(half) && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mid = b.CopyProgress()
	}
	if !mid.Restoring || mid.SnapshotBytes < int64(half) || mid.SnapshotBytes >= int64(snap.Len()) || mid.Restores != 0 {
		t.Errorf("half way through a %d-byte snapshot: %+v", snap.Len(), mid)
	}
	if _, err := pw.Write(snap.Bytes()[half:]); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	end := b.CopyProgress()
	if end.Restoring || end.Restores != 1 || end.SnapshotBytes != int64(snap.Len()) || end.EntryBytes != 0 || end.Bytes() < 200*2000 {
		t.Errorf("after the restore of a %d-byte snapshot: %+v", snap.Len(), end)
	}
	next := NewBatch()
	next.Put([]byte("p/next"), bytes.Repeat([]byte{'n'}, 500))
	if _, err := b.Update([]sm.Entry{{Index: 201, Cmd: next.Encoded()}}); err != nil {
		t.Fatal(err)
	}
	if got := b.CopyProgress(); got.SnapshotBytes != end.SnapshotBytes || got.EntryBytes != int64(len(next.Encoded())) {
		t.Errorf("after one entry of %d bytes: %+v", len(next.Encoded()), got)
	}
}
