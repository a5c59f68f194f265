package store

import (
	"errors"
	"fmt"
)

// updateFitting writes items in transactions the kv can commit: write
// gets a transaction and a part of items, writes what belongs in it, and
// returns the items of the part it left for another transaction (those of
// another group than the first's: Txn.Plan). A transaction larger than one
// commit holds (ErrTooLarge; Badger takes 15 % of a memtable) is tried
// again with half as many items, and the later ones take no more than the
// last that fit, down to one: loops that batch by count so write items of
// any size.
func updateFitting[T any](s *Store, items []T, write func(tx *Txn, part []T) (later []T, err error)) error {
	take := len(items)
	for len(items) > 0 {
		take = min(take, len(items))
		var later []T
		err := s.Update(func(tx *Txn) error {
			var err error
			later, err = write(tx, items[:take])
			return err
		})
		if errors.Is(err, ErrTooLarge) && take > 1 {
			take /= 2
			continue
		}
		if err != nil {
			return err
		}
		if len(later) >= take {
			return fmt.Errorf("store: a transaction took none of its %d items", take)
		}
		rest := make([]T, 0, len(later)+len(items)-take)
		items = append(append(rest, later...), items[take:]...)
	}
	return nil
}
