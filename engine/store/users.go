package store

import (
	"errors"

	"github.com/parsecdb/parsec/engine/kv"
)

// Users are catalog entries: m/user/<db> 0x00 <name> -> the user's BSON
// document, opaque to the store (the engine's auth package defines it).
// Database and user names hold no zero byte (the engine validates them).

// PutUser stores the user document of db.name. With create, an existing
// user gives ErrExists; without, a missing one gives ErrNotFound.
func (s *Store) PutUser(db, name string, doc []byte, create bool) error {
	if s.closed.Load() {
		return ErrClosed
	}
	key := userKey(db, name)
	return s.update(func(txn kv.Txn) error {
		_, err := txn.Get(key)
		switch {
		case err == nil && create:
			return ErrExists
		case errors.Is(err, kv.ErrNotFound) && !create:
			return ErrNotFound
		case err != nil && !errors.Is(err, kv.ErrNotFound):
			return err
		}
		return txn.Set(key, doc)
	})
}

// User returns the user document of db.name, or ErrNotFound.
func (s *Store) User(db, name string) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	var doc []byte
	err := s.db.View(func(txn kv.Txn) error {
		item, err := txn.Get(userKey(db, name))
		if errors.Is(err, kv.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		doc, err = item.ValueCopy(nil)
		return err
	})
	return doc, mapKVErr(err)
}

// Users returns the user documents of db, or of every database when all,
// ordered by database and name.
func (s *Store) Users(db string, all bool) ([][]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	prefix := userPrefix(db)
	if all {
		prefix = []byte(userSpace)
	}
	var docs [][]byte
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: prefix, Prefetch: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			docs = append(docs, v)
		}
		return nil
	})
	return docs, mapKVErr(err)
}

// DeleteUsers deletes user name of db, or every user of db when name is
// "", and returns how many it deleted.
func (s *Store) DeleteUsers(db, name string) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var n int
	err := s.update(func(txn kv.Txn) error {
		n = 0
		if name != "" {
			key := userKey(db, name)
			if _, err := txn.Get(key); errors.Is(err, kv.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			n = 1
			return txn.Delete(key)
		}
		it := txn.NewIterator(kv.IterOptions{Prefix: userPrefix(db)})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, mapKVErr(err)
}

// HasUsers reports whether any user exists.
func (s *Store) HasUsers() (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	found := false
	err := s.db.View(func(txn kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: []byte(userSpace)})
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	return found, mapKVErr(err)
}
