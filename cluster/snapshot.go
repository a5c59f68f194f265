package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Snapshot stream, as SaveSnapshot writes it (dragonboat adds its own
// framing and checksums around it):
//
//	"PSNP" | version:1 | shardID:8 | applied:8 | uvarint(#spans) | spans
//	record* | uvarint(0) | count:8
//
// a span is uvarint(len) start uvarint(len) end; a record is uvarint(len)
// key uvarint(len) value with a non-empty key, in key order; count is the
// number of records.
const (
	snapshotMagic   = "PSNP"
	snapshotVersion = 1
)

// snapshotPoint is what PrepareSnapshot hands SaveSnapshot: a read
// transaction opened while Update could not run, so it sees exactly the
// state at applied.
type snapshotPoint struct {
	txn     *badger.Txn
	applied uint64
	owns    func(k, v []byte) bool // the group's ownership at the point
}

// PrepareSnapshot fixes the snapshot point.
func (m *StateMachine) PrepareSnapshot() (interface{}, error) {
	owns := m.owns
	if m.freeze != nil {
		owns = m.freeze()
	}
	return &snapshotPoint{txn: m.db.NewTransaction(false), applied: m.applied.Load(), owns: owns}, nil
}

// SaveSnapshot streams the group's spans as of the prepared point.
func (m *StateMachine) SaveSnapshot(ctx interface{}, w io.Writer, stop <-chan struct{}) error {
	p, ok := ctx.(*snapshotPoint)
	if !ok {
		return fmt.Errorf("snapshot context is %T", ctx)
	}
	defer p.txn.Discard()
	start := time.Now()
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	hdr := append([]byte(snapshotMagic), snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, m.shardID)
	hdr = binary.BigEndian.AppendUint64(hdr, p.applied)
	hdr = binary.AppendUvarint(hdr, uint64(len(m.spans)))
	for _, s := range m.spans {
		hdr = appendBytes(hdr, s.Start)
		hdr = appendBytes(hdr, s.End)
	}
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	var count uint64
	var rec []byte
	var werr error
	err := m.scanOwned(p.txn, p.owns, nil, nil, false, func(k, v []byte) bool {
		if count%1024 == 0 {
			select {
			case <-stop:
				werr = sm.ErrSnapshotStopped
				return false
			default:
			}
		}
		rec = appendBytes(appendBytes(rec[:0], k), v)
		if _, werr = bw.Write(rec); werr != nil {
			return false
		}
		count++
		return true
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	tail := binary.BigEndian.AppendUint64(binary.AppendUvarint(nil, 0), count)
	if _, err := bw.Write(tail); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	m.mu.Lock()
	m.stats.Snapshots++
	m.mu.Unlock()
	if m.logger != nil {
		m.logger.Info("streamed a snapshot of a group", "group", m.shardID, "applied", p.applied,
			"records", count, "bytes", cw.n, "duration", time.Since(start).Round(time.Millisecond).String())
	}
	return nil
}

// RecoverFromSnapshot replaces the group's spans with a snapshot's. It
// first writes the restoring marker, so a crash part way leaves a state
// Open recognises and clears; the applied index and the marker's removal
// are the last commit. The observed keys are replaced, not cleared first:
// ownership depends on them, and a crash part way must not leave a
// replica judging by the range it was created with (which may cover a
// split-off group's keys on this node); those the snapshot lacks go in
// the last commit.
func (m *StateMachine) RecoverFromSnapshot(r io.Reader, stop <-chan struct{}) error {
	start := time.Now()
	br := bufio.NewReaderSize(m.restore.begin(r), 64<<10)
	shardID, applied, spans, err := readSnapshotHeader(br)
	if err != nil {
		return err
	}
	if shardID != m.shardID {
		return fmt.Errorf("snapshot of group %d offered to group %d", shardID, m.shardID)
	}
	if !spansEqual(spans, m.spans) {
		return fmt.Errorf("group %d: snapshot spans %v differ from the replica's %v", m.shardID, spans, m.spans)
	}
	if err := m.db.Update(func(txn *badger.Txn) error {
		return txn.Set(restoringKey(m.shardID), nil)
	}); err != nil {
		return err
	}
	if err := m.clear(stop); err != nil {
		return err
	}
	cleared := time.Since(start)
	wb := m.db.NewWriteBatch()
	defer wb.Cancel()
	var count uint64
	var observed [][]byte // the snapshot's observed keys
	for {
		key, err := readField(br)
		if err != nil {
			return err
		}
		if len(key) == 0 {
			break
		}
		value, err := readField(br)
		if err != nil {
			return err
		}
		if !inSpans(m.spans, key) || m.owns != nil && !m.owns(key, value) {
			return fmt.Errorf("group %d: snapshot key %q is outside its spans", m.shardID, key)
		}
		if count%1024 == 0 {
			select {
			case <-stop:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		if err := wb.Set(key, value); err != nil {
			return err
		}
		if m.isObserved(key) {
			observed = append(observed, key)
		}
		count++
	}
	var want [8]byte
	if _, err := io.ReadFull(br, want[:]); err != nil {
		return fmt.Errorf("group %d: snapshot trailer: %w", m.shardID, err)
	}
	if binary.BigEndian.Uint64(want[:]) != count {
		return fmt.Errorf("group %d: snapshot holds %d records, its trailer says %d", m.shardID, count, binary.BigEndian.Uint64(want[:]))
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	stale, err := m.staleObserved(observed)
	if err != nil {
		return err
	}
	if err := m.db.Update(func(txn *badger.Txn) error {
		for _, k := range stale {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		if err := txn.Set(appliedKey(m.shardID), binary.BigEndian.AppendUint64(nil, applied)); err != nil {
			return err
		}
		return txn.Delete(restoringKey(m.shardID))
	}); err != nil {
		return err
	}
	m.applied.Store(applied)
	if err := m.loadObserved(); err != nil {
		return err
	}
	if m.gen != nil {
		m.gen.Add(1)
	}
	m.mu.Lock()
	m.stats.Restores++
	m.stats.RestoredKeys += int64(count)
	m.mu.Unlock()
	if m.logger != nil {
		m.logger.Info("restored a snapshot of a group", "group", m.shardID, "applied", applied,
			"records", count, "bytes", m.restore.bytes.Load(), "clearing", cleared.Round(time.Millisecond).String(),
			"duration", time.Since(start).Round(time.Millisecond).String())
	}
	return nil
}

func readSnapshotHeader(br *bufio.Reader) (shardID, applied uint64, spans []Span, err error) {
	var fixed [len(snapshotMagic) + 1 + 16]byte
	if _, err = io.ReadFull(br, fixed[:]); err != nil {
		return 0, 0, nil, fmt.Errorf("snapshot header: %w", err)
	}
	if !bytes.Equal(fixed[:4], []byte(snapshotMagic)) || fixed[4] != snapshotVersion {
		return 0, 0, nil, fmt.Errorf("not a version %d partition snapshot", snapshotVersion)
	}
	shardID = binary.BigEndian.Uint64(fixed[5:])
	applied = binary.BigEndian.Uint64(fixed[13:])
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<16 {
		return 0, 0, nil, fmt.Errorf("snapshot header: bad span count")
	}
	for range n {
		var s Span
		if s.Start, err = readField(br); err != nil {
			return 0, 0, nil, err
		}
		if s.End, err = readField(br); err != nil {
			return 0, 0, nil, err
		}
		spans = append(spans, s)
	}
	return shardID, applied, spans, nil
}

// maxSnapshotField bounds one key or value read from a snapshot (Badger's
// own limits are far below it).
const maxSnapshotField = 1 << 30

func readField(br *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, fmt.Errorf("snapshot record: %w", err)
	}
	if n > maxSnapshotField {
		return nil, fmt.Errorf("snapshot record of %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return nil, fmt.Errorf("snapshot record: %w", err)
	}
	return p, nil
}

// ownedItem is whether owns accepts a Badger item of a group's spans
// (always, for a group without Owns).
func ownedItem(owns func(key, value []byte) bool, item *badger.Item) (bool, error) {
	if owns == nil {
		return true, nil
	}
	owned := false
	err := item.Value(func(v []byte) error { owned = owns(item.Key(), v); return nil })
	return owned, err
}

// isObserved says key is under the group's Observe prefix.
func (m *StateMachine) isObserved(key []byte) bool {
	return len(m.observe) > 0 && bytes.HasPrefix(key, m.observe)
}

// staleObserved are the group's observed keys in Badger (that it owns)
// that a restored snapshot did not hold (keep: sorted, its keys).
func (m *StateMachine) staleObserved(keep [][]byte) ([][]byte, error) {
	if len(m.observe) == 0 {
		return nil, nil
	}
	var stale [][]byte
	err := m.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: m.observe})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			if _, kept := slices.BinarySearchFunc(keep, k, bytes.Compare); kept || !inSpans(m.spans, k) {
				continue
			}
			if owned, err := ownedItem(m.owns, it.Item()); err != nil {
				return err
			} else if !owned {
				continue
			}
			stale = append(stale, it.Item().KeyCopy(nil))
		}
		return nil
	})
	return stale, err
}

// clear deletes every key of the group's spans (that it owns) but its
// observed keys.
func (m *StateMachine) clear(stop <-chan struct{}) error {
	wb := m.db.NewWriteBatch()
	defer wb.Cancel()
	txn := m.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
	defer it.Close()
	n := 0
	for _, s := range m.spans {
		for it.Seek(s.Start); it.Valid() && bytes.Compare(it.Item().Key(), s.End) < 0; it.Next() {
			if n++; n%1024 == 0 {
				select {
				case <-stop:
					return sm.ErrSnapshotStopped
				default:
				}
			}
			if m.isObserved(it.Item().Key()) {
				continue
			}
			if owned, err := ownedItem(m.owns, it.Item()); err != nil {
				return err
			} else if !owned {
				continue
			}
			if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
		}
	}
	return wb.Flush()
}
