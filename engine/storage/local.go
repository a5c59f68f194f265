package storage

import "github.com/parsecdb/parsec/engine/store"

// Local is Storage on one Badger database in this process. Most methods
// are store's own; the adapters below only hand the engine its
// transactions as the interfaces above.
func Local(s *store.Store) Storage { return local{s} }

type local struct{ *store.Store }

func (l local) View(fn func(Txn) error) error {
	return l.Store.View(func(t *store.Txn) error { return fn(txn{t}) })
}

func (l local) Update(fn func(Txn) error) error {
	return l.Store.Update(func(t *store.Txn) error { return fn(txn{t}) })
}

func (l local) Begin() (Transaction, error) {
	t, err := l.Store.Begin()
	if err != nil {
		return nil, err
	}
	return transaction{t}, nil
}

func (l local) Snapshot() (Snapshot, error) {
	sn, err := l.Store.Snapshot()
	if err != nil {
		return nil, err
	}
	return snapshot{sn}, nil
}

// txn is a *store.Txn as a Txn: one pointer, so making the interface
// value allocates nothing.
type txn struct{ *store.Txn }

func (t txn) IndexReader(c *store.Collection, ix *store.Index, reverse bool) IndexReader {
	return t.Txn.IndexReader(c, ix, reverse)
}

type transaction struct{ *store.Transaction }

func (t transaction) View(fn func(Txn) error) error {
	return t.Transaction.View(func(tx *store.Txn) error { return fn(txn{tx}) })
}

func (t transaction) Update(fn func(Txn) error) error {
	return t.Transaction.Update(func(tx *store.Txn) error { return fn(txn{tx}) })
}

type snapshot struct{ *store.Snapshot }

func (sn snapshot) View(fn func(Txn) error) error {
	return sn.Snapshot.View(func(t *store.Txn) error { return fn(txn{t}) })
}
