package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
)

// Retryable-write history: what the statements of a logical session's
// latest retryable write did, so that a retry of them returns that
// instead of running them again (MongoDB keeps the same in
// config.transactions). The command layer owns the meaning of a
// statement's outcome; to the store it is opaque bytes.
//
//	s/h<lsid:16>[<home:12>]              -> session head: txnNumber:8 BE, lastUse (Unix ms):8 BE, span:4 BE
//	s/r<lsid:16><stmtId:4 BE>[<home:12>] -> statement: txnNumber:8 BE, then its outcome
//
// home is the physical partition the writing transaction wrote in
// (keys.go): a session that wrote in several has a head in each, and
// readers merge them.
//
// lsid is the session's UUID. A statement key holds the outcome of the
// last transaction number that recorded that statement id (the command
// layer may let one outcome stand for a run of statements from that id
// on); outcomes of an older transaction number are stale and ignored by
// readers, until a later one overwrites them or ResetSession deletes
// them. span is one past the highest statement id written since the last
// reset: a bound on how many statement keys the session holds. Statement outcomes are
// written by Txn.PutSessionStatements in the transaction that writes
// the statement's documents, so after a crash a write and its record
// exist both or neither.

// SessionIDLen is the length of a logical session id (a UUID).
const SessionIDLen = 16

// sessionDeleteChunk bounds the keys one transaction of DeleteSession
// or ResetSession deletes.
const sessionDeleteChunk = 10_000

// SessionHead is what a session's head key holds.
type SessionHead struct {
	TxnNumber int64     // the highest transaction number seen
	LastUse   time.Time // when a statement was last recorded
	// Span is one past the highest statement id recorded since the
	// session was last reset: at least as many keys as it holds.
	Span int32
}

// SessionStatement is the outcome of one statement, by its id.
type SessionStatement struct {
	ID      int32
	Outcome []byte
}

func checkSessionID(lsid []byte) error {
	if len(lsid) != SessionIDLen {
		return fmt.Errorf("session id of %d bytes, want %d", len(lsid), SessionIDLen)
	}
	return nil
}

func encodeSessionHead(h SessionHead) []byte {
	b := make([]byte, 0, 20)
	b = binary.BigEndian.AppendUint64(b, uint64(h.TxnNumber))
	b = binary.BigEndian.AppendUint64(b, uint64(h.LastUse.UnixMilli()))
	return binary.BigEndian.AppendUint32(b, uint32(h.Span))
}

func decodeSessionHead(v []byte) (SessionHead, error) {
	if len(v) != 20 {
		return SessionHead{}, fmt.Errorf("session head of %d bytes: %w", len(v), ErrCorrupted)
	}
	return SessionHead{
		TxnNumber: int64(binary.BigEndian.Uint64(v)),
		LastUse:   time.UnixMilli(int64(binary.BigEndian.Uint64(v[8:]))),
		Span:      int32(binary.BigEndian.Uint32(v[16:])),
	}, nil
}

// SessionHead returns the head of session lsid, its heads in every
// partition merged (the highest transaction number, the latest use, the
// largest span); ok is false when the store knows nothing of the session.
func (s *Store) SessionHead(lsid []byte) (head SessionHead, ok bool, err error) {
	if err := checkSessionID(lsid); err != nil {
		return head, false, err
	}
	if s.closed.Load() {
		return head, false, ErrClosed
	}
	err = s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: sessionHeadsPrefix(lsid)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := it.Item().Value(func(v []byte) error {
				h, err := decodeSessionHead(v)
				if err != nil {
					return err
				}
				head = mergeHeads(head, h, ok)
				ok = true
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return SessionHead{}, false, mapKVErr(err)
	}
	return head, ok, nil
}

// mergeHeads is one session's heads a and b as one (a is empty unless
// haveA).
func mergeHeads(a, b SessionHead, haveA bool) SessionHead {
	if !haveA {
		return b
	}
	a.TxnNumber = max(a.TxnNumber, b.TxnNumber)
	if b.LastUse.After(a.LastUse) {
		a.LastUse = b.LastUse
	}
	a.Span = max(a.Span, b.Span)
	return a
}

// SessionStatements returns the outcomes recorded for session lsid under
// transaction number txnNumber, by statement id. The slices are copies.
func (s *Store) SessionStatements(lsid []byte, txnNumber int64) (map[int32][]byte, error) {
	if err := checkSessionID(lsid); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	out := map[int32][]byte{}
	prefix := sessionStmtsPrefix(lsid)
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()
			if len(key) != len(prefix)+4 && len(key) != len(prefix)+4+homeLen {
				return fmt.Errorf("session statement key %x: %w", key, ErrCorrupted)
			}
			id := int32(binary.BigEndian.Uint32(key[len(prefix):]))
			if err := item.Value(func(v []byte) error {
				if len(v) < 8 {
					return fmt.Errorf("session statement %x: %w", key, ErrCorrupted)
				}
				if int64(binary.BigEndian.Uint64(v)) == txnNumber {
					out[id] = append([]byte(nil), v[8:]...)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, mapKVErr(err)
	}
	return out, nil
}

// PutSessionStatements records, in the transaction, the outcomes of
// statements of session lsid under head.TxnNumber, and writes head. The
// slices must not change until the transaction ends.
func (t *Txn) PutSessionStatements(lsid []byte, head SessionHead, stmts []SessionStatement) error {
	if err := checkSessionID(lsid); err != nil {
		return err
	}
	for _, st := range stmts {
		v := make([]byte, 8, 8+len(st.Outcome))
		binary.BigEndian.PutUint64(v, uint64(head.TxnNumber))
		if err := t.t.Set(sessionStmtKey(lsid, st.ID, t.home), append(v, st.Outcome...)); err != nil {
			return mapKVErr(err)
		}
	}
	if err := t.t.Set(sessionHeadKey(lsid, t.home), encodeSessionHead(head)); err != nil {
		return mapKVErr(err)
	}
	return nil
}

// ResetSession deletes every statement outcome of session lsid and
// writes head: what a new transaction number does once the session holds
// many (fewer are left for PutSessionStatements to overwrite, or for
// readers to skip as stale).
func (s *Store) ResetSession(lsid []byte, head SessionHead) error {
	return s.clearSession(lsid, &head)
}

// DeleteSession forgets session lsid: its head and statement outcomes.
func (s *Store) DeleteSession(lsid []byte) error {
	return s.clearSession(lsid, nil)
}

// clearSession deletes the statement keys and heads of lsid, and writes
// head, or leaves the session without one when head is nil. The new
// head is written first (it outranks every head deleted after it), and
// the deletions go in write batches of at most sessionDeleteChunk keys:
// statements and heads may lie in several physical partitions, and a
// crash part way leaves only stale records, which readers skip.
func (s *Store) clearSession(lsid []byte, head *SessionHead) error {
	if err := checkSessionID(lsid); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	keep := sessionHeadKey(lsid, home{})
	if head != nil {
		if err := s.update(func(txn kv.Txn) error { return txn.Set(keep, encodeSessionHead(*head)) }); err != nil {
			return fmt.Errorf("clear session %x: %w", lsid, err)
		}
	}
	for _, prefix := range [][]byte{sessionStmtsPrefix(lsid), sessionHeadsPrefix(lsid)} {
		from := prefix
		for {
			var keys [][]byte
			var last []byte
			scanned := 0
			err := s.db.View(func(txn kv.Txn) error {
				it := txn.NewIterator(kv.IterOptions{Prefix: prefix})
				defer it.Close()
				for it.Seek(from); it.Valid() && scanned < sessionDeleteChunk; it.Next() {
					scanned++
					last = it.Item().KeyCopy(nil)
					if head == nil || !bytes.Equal(last, keep) {
						keys = append(keys, last)
					}
				}
				return nil
			})
			if err == nil && len(keys) > 0 {
				err = s.deleteKeys(keys)
			}
			if err != nil {
				return fmt.Errorf("clear session %x: %w", lsid, err)
			}
			if scanned < sessionDeleteChunk {
				break
			}
			from = append(last, 0)
		}
	}
	return nil
}

// IdleSessions returns the sessions whose heads were all last used
// before before.
func (s *Store) IdleSessions(before time.Time) ([][]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	var out [][]byte
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: sessionHeadPrefix})
		defer it.Close()
		var cur []byte // the session whose heads are being read
		idle := false
		done := func() {
			if cur != nil && idle {
				out = append(out, cur)
			}
		}
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			if len(k) < len(sessionHeadPrefix)+SessionIDLen {
				return fmt.Errorf("session head key %x: %w", k, ErrCorrupted)
			}
			lsid := k[len(sessionHeadPrefix) : len(sessionHeadPrefix)+SessionIDLen]
			if !bytes.Equal(lsid, cur) {
				done()
				cur, idle = append([]byte(nil), lsid...), true
			}
			if err := item.Value(func(v []byte) error {
				h, err := decodeSessionHead(v)
				if err != nil {
					return err
				}
				if !h.LastUse.Before(before) {
					idle = false
				}
				return nil
			}); err != nil {
				return err
			}
		}
		done()
		return nil
	})
	return out, mapKVErr(err)
}
