package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Multi-statement transactions.
//
// A Transaction is one Badger read-write transaction kept open across
// commands: its statements read what it wrote, nothing it writes is seen
// by others until Commit, and Abort throws it all away. Reads see the
// store as of Begin (snapshot isolation, as MongoDB's transactions).
//
// Write conflicts are found when they happen, as in MongoDB, not only at
// commit: a transaction that writes a document takes the document's key
// in the store's write-lock table until it ends. Another transaction that
// writes the same document fails at once with ErrConflict (the command
// layer's WriteConflict, which drivers retry as a TransientTransactionError),
// and a write outside any transaction waits until the holder ends, then
// runs against what it committed. Badger's own check at commit still
// catches a transaction whose read documents changed meanwhile.
//
// A transaction holds the fences of the collections it writes (fence.go)
// until it ends, so a drop or index change waits for it. It takes them
// with a short timeout instead of waiting (ErrLockTimeout), as MongoDB
// bounds a transaction's lock requests, so two transactions and two
// catalog changes cannot wait on one another for ever.

// ErrLockTimeout is a transaction that could not take a collection's
// fence in time: a catalog change of the collection is waiting or running.
var ErrLockTimeout = errors.New("timed out waiting for a collection lock")

// ErrTransactionEnded is a statement of a transaction already committed
// or aborted.
var ErrTransactionEnded = errors.New("transaction has ended")

// txnLockTimeout bounds a transaction's wait for a fence (MongoDB's
// maxTransactionLockRequestTimeoutMillis is 5 ms; a little more here,
// where a fence is held only while a catalog change writes).
const txnLockTimeout = 20 * time.Millisecond

// Transaction is a read-write transaction spanning several statements.
// Its methods may be called from several goroutines; statements run one
// at a time.
type Transaction struct {
	s     *Store
	mu    sync.Mutex
	tx    *Txn
	ended bool
	keys  []string      // keys locked in the store's table
	done  chan struct{} // closed when the transaction ends
	// lsid and txnNumber tag its change events (TagChanges).
	lsid      []byte
	txnNumber int64
	scope     txnScope // the physical partition it writes, when the store keeps it to one
}

// txnScope is the one physical partition a multi-statement transaction
// writes when the store keeps transactions to one
// (Options.OnePartitionTransactions): set by its first write.
type txnScope struct {
	set  bool
	coll uint32
	ns   string
	part int
}

// PartitionScopeError refuses a write of a multi-statement transaction
// to a physical partition other than the one it already wrote: in a
// cluster each physical partition commits through its own replicas, so
// a transaction is atomic within one (one logical partition of a
// sharded collection, or one unsharded collection), as in Cosmos DB.
type PartitionScopeError struct {
	Namespace, First string
	Partition, Had   int
}

func (e *PartitionScopeError) Error() string {
	return fmt.Sprintf("a transaction writes to one physical partition: this write is to partition %d of %s, its earlier writes to partition %d of %s",
		e.Partition, e.Namespace, e.Had, e.First)
}

// checkScope keeps a multi-statement transaction's writes in one
// physical partition when the store asks it (the write of key in c).
func (t *Txn) checkScope(c *Collection, key []byte) error {
	if t.owner == nil || !t.s.onePartition {
		return nil
	}
	part := 0
	if m := c.Map(); m != nil && m.Len() > 0 {
		part = m.At(m.Lookup(pointOf(key))).ID
	}
	sc := &t.owner.scope
	switch {
	case !sc.set:
		*sc = txnScope{set: true, coll: c.ID, ns: c.Namespace(), part: part}
	case sc.coll != c.ID || sc.part != part:
		return &PartitionScopeError{Namespace: c.Namespace(), First: sc.ns, Partition: part, Had: sc.part}
	}
	return nil
}

// Begin starts a transaction.
func (s *Store) Begin() (*Transaction, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	t := &Transaction{s: s, done: make(chan struct{})}
	t.tx = &Txn{s: s, t: s.db.NewTransaction(true), owner: t}
	return t, nil
}

// View runs fn in the transaction.
func (t *Transaction) View(fn func(*Txn) error) error { return t.run(fn) }

// Update runs fn in the transaction; what it writes is committed with the
// transaction, not now. A statement that fails leaves what it wrote in
// place: the caller aborts the transaction.
func (t *Transaction) Update(fn func(*Txn) error) error { return t.run(fn) }

func (t *Transaction) run(fn func(*Txn) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrTransactionEnded
	}
	if t.s.closed.Load() {
		return ErrClosed
	}
	return mapKVErr(fn(t.tx))
}

// Commit makes the transaction's writes durable and visible. It fails
// with ErrConflict when a document it read was changed since Begin;
// either way the transaction has ended.
func (t *Transaction) Commit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrTransactionEnded
	}
	err := t.tx.commit()
	t.end()
	if err != nil {
		return mapKVErr(err)
	}
	t.s.dirty.Store(true)
	t.s.afterCommit(t.tx)
	return nil
}

// Writes reports whether the transaction has written to collection id.
func (t *Transaction) Writes(id uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tx.checked[id]
}

// Abort ends the transaction without writing anything. It waits for a
// statement in progress; aborting an ended transaction does nothing.
func (t *Transaction) Abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.end()
	}
}

func (t *Transaction) end() {
	t.ended = true
	t.tx.t.Discard()
	t.tx.releaseFences()
	t.s.unlockKeys(t)
	close(t.done)
}

// set writes key. Badger keeps the slices it is given until commit; a
// multi-statement transaction commits in a later command, after the
// request buffers they may point into are reused, so it gets copies.
func (t *Txn) set(key, val []byte) error {
	if err := t.s.checkSizes(key, val); err != nil {
		return err
	}
	if t.owner != nil {
		key, val = bytes.Clone(key), bytes.Clone(val)
	}
	t.added += int64(len(key)+len(val)) + entryOverhead
	t.grows = true
	return t.t.Set(key, val)
}

// setRecord writes what a transaction records about its own writes (a
// change-log event): counted in the bytes it adds, but not as growth, so
// a delete on a full disk, which logs its event, is still taken.
func (t *Txn) setRecord(key, val []byte) error {
	grows := t.grows
	err := t.set(key, val)
	t.grows = grows
	return err
}

// del deletes key, as set writes it.
func (t *Txn) del(key []byte) error {
	if t.owner != nil {
		key = bytes.Clone(key)
	}
	t.added += int64(len(key)) + entryOverhead
	return t.t.Delete(key)
}

// writeLocks is the store's table of document keys written by open
// transactions.
type writeLocks struct {
	held atomic.Int64 // len(m): writes outside transactions skip the table while none is held
	mu   sync.Mutex
	m    map[string]*Transaction
}

// lockKey is called before a transaction writes the document at key. In a
// multi-statement transaction it takes the key, or fails with ErrConflict
// when another transaction holds it. Outside one it fails with a
// *lockWaitError when a transaction holds the key: Store.Update then
// waits for that transaction to end and runs again.
func (t *Txn) lockKey(key []byte) error {
	l := &t.s.locks
	if t.owner == nil && l.held.Load() == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	holder := l.m[string(key)]
	switch {
	case holder == t.owner:
		return nil
	case holder != nil && t.owner == nil:
		return &lockWaitError{done: holder.done}
	case holder != nil:
		return fmt.Errorf("%w: the document was written by another transaction in progress", ErrConflict)
	case t.owner == nil:
		return nil
	}
	if l.m == nil {
		l.m = map[string]*Transaction{}
	}
	l.m[string(key)] = t.owner
	l.held.Add(1)
	t.owner.keys = append(t.owner.keys, string(key))
	return nil
}

func (s *Store) unlockKeys(t *Transaction) {
	l := &s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range t.keys {
		if l.m[k] == t {
			delete(l.m, k)
			l.held.Add(-1)
		}
	}
	t.keys = nil
}

// lockWaitError is a write outside a transaction that met a document
// written by one in progress.
type lockWaitError struct{ done chan struct{} }

func (e *lockWaitError) Error() string { return "document is locked by a transaction in progress" }

// lockWaitLimit bounds how long a write outside a transaction waits for
// one to end before it gives up with ErrConflict. Transactions live at
// most a minute (the command layer aborts them then).
const lockWaitLimit = 2 * time.Minute
