package cluster

import (
	"io"
	"sync/atomic"
)

// CopyProgress is how much of its group's state a replica has copied in
// since it started: the snapshot it restores (or last restored) and the
// log entries it applied. A replica added to a group catches up by one
// or both: a snapshot when the leader's log is compacted, then the
// entries after it.
type CopyProgress struct {
	// Restoring says a snapshot restore is under way (or failed and
	// waits to be tried again).
	Restoring bool
	// Restores is how many snapshot restores finished.
	Restores int64
	// SnapshotBytes are the bytes of the snapshot being restored that
	// the restore has taken in so far (its keys and values, each with
	// its length), or all of the last one's once it finished.
	SnapshotBytes int64
	// EntryBytes are the bytes of the commands of the log entries the
	// replica applied (the batches' keys and values, with their framing).
	EntryBytes int64
}

// Bytes is what the replica copied in: the snapshot's and the entries'.
func (p CopyProgress) Bytes() int64 { return p.SnapshotBytes + p.EntryBytes }

// restoreCount counts RecoverFromSnapshot's progress: the restores
// begun, and the bytes of the snapshot stream the current (or last) one
// read.
type restoreCount struct {
	begun atomic.Int64
	bytes atomic.Int64
}

// begin starts counting a restore reading r.
func (c *restoreCount) begin(r io.Reader) io.Reader {
	c.bytes.Store(0)
	c.begun.Add(1)
	return countingReader{r: r, n: &c.bytes}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// CopyProgress is what this node's replica of group shardID copied in
// since it started (zero when it runs none).
func (n *Node) CopyProgress(shardID uint64) CopyProgress {
	if m := n.machine(shardID); m != nil {
		return m.CopyProgress()
	}
	return CopyProgress{}
}

// CopyProgress is what the replica copied in since it was made.
func (m *StateMachine) CopyProgress() CopyProgress {
	begun := m.restore.begun.Load()
	st := m.Stats()
	return CopyProgress{
		Restoring:     begun > st.Restores,
		Restores:      st.Restores,
		SnapshotBytes: m.restore.bytes.Load(),
		EntryBytes:    st.EntryBytes,
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
