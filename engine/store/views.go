package store

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/parsecdb/parsec/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// ViewDefinition is a view's catalog entry: a read-only namespace whose
// documents are those of ViewOn (a collection or another view of the same
// database, which need not exist) passed through Pipeline. A view holds no
// documents, counters or indexes and has no collection id; it shares the
// collections' names (a name is a collection or a view, never both).
// Entries are immutable once published: changes replace the entry.
type ViewDefinition struct {
	DB     string
	Name   string
	ViewOn string
	// Pipeline is the view's aggregation pipeline (a BSON array of stage
	// documents), as given and already validated by the caller.
	Pipeline bson.RawArray
	Created  time.Time
	// Collation is the view's default collation, every option set;
	// empty: simple. It is fixed when the view is created.
	Collation bson.Raw
}

// storedView is a ViewDefinition as the catalog stores it (its pipeline
// a BSON array).
type storedView struct {
	DB       string        `bson:"db"`
	Name     string        `bson:"name"`
	ViewOn   string        `bson:"viewOn"`
	Pipeline bson.RawValue `bson:"pipeline"`
	Created  time.Time     `bson:"created"`

	Collation bson.Raw `bson:"collation,omitempty"` // empty: simple
}

// Namespace is "db.name".
func (v *ViewDefinition) Namespace() string { return v.DB + "." + v.Name }

// ViewDefinition returns the view db.name, or nil.
func (s *Store) ViewDefinition(db, name string) *ViewDefinition {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	return s.views[db+"."+name]
}

// ViewDefinitions returns db's views sorted by name.
func (s *Store) ViewDefinitions(db string) []*ViewDefinition {
	s.catMu.RLock()
	var out []*ViewDefinition
	for _, v := range s.views {
		if v.DB == db {
			out = append(out, v)
		}
	}
	s.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CreateView records the view v. ErrExists if a collection or a view
// already has its name.
func (s *Store) CreateView(v ViewDefinition) (*ViewDefinition, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	ns := v.Namespace()
	if s.colls[ns] != nil || s.views[ns] != nil {
		return nil, fmt.Errorf("view %s: %w", ns, ErrExists)
	}
	v.Created = time.Now().UTC()
	return s.putViewLocked(&v)
}

// ModifyView replaces the definition of the view v names (its viewOn and
// pipeline). ErrNotFound if there is no such view.
func (s *Store) ModifyView(v ViewDefinition) (*ViewDefinition, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	old := s.views[v.Namespace()]
	if old == nil {
		return nil, fmt.Errorf("view %s: %w", v.Namespace(), ErrNotFound)
	}
	v.Created, v.Collation = old.Created, old.Collation
	return s.putViewLocked(&v)
}

func (s *Store) putViewLocked(v *ViewDefinition) (*ViewDefinition, error) {
	if len(v.Pipeline) == 0 {
		v.Pipeline = bson.RawArray{5, 0, 0, 0, 0} // []
	}
	raw, err := bson.Marshal(storedView{DB: v.DB, Name: v.Name, ViewOn: v.ViewOn, Created: v.Created,
		Pipeline: bson.RawValue{Type: bson.TypeArray, Value: v.Pipeline}, Collation: v.Collation})
	if err != nil {
		return nil, err
	}
	ev := &ChangeEvent{Op: ChangeCreate, DB: v.DB, Coll: v.Name, Description: viewDescription(v)}
	if s.views[v.Namespace()] != nil {
		ev.Op = ChangeModify
	}
	if err := s.update(func(txn kv.Txn) error { return txn.Set(viewKey(v.DB, v.Name), raw) }, ev); err != nil {
		return nil, fmt.Errorf("define view %s: %w", v.Namespace(), err)
	}
	s.views[v.Namespace()] = v
	return v, nil
}

// DropView removes the view db.name. ErrNotFound if there is none.
func (s *Store) DropView(db, name string) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.views[db+"."+name] == nil {
		return fmt.Errorf("view %s.%s: %w", db, name, ErrNotFound)
	}
	return s.dropViewLocked(db, name)
}

func (s *Store) dropViewLocked(db, name string) error {
	ev := &ChangeEvent{Op: ChangeDrop, DB: db, Coll: name}
	if err := s.update(func(txn kv.Txn) error { return txn.Delete(viewKey(db, name)) }, ev); err != nil {
		return fmt.Errorf("drop view %s.%s: %w", db, name, err)
	}
	delete(s.views, db+"."+name)
	return nil
}

// dropViews removes every view of db.
func (s *Store) dropViews(db string) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	for _, v := range s.views {
		if v.DB == db {
			if err := s.dropViewLocked(v.DB, v.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadView adds a stored view entry while the catalog loads.
func (s *Store) loadView(k, raw []byte) error {
	var sv storedView
	if err := bson.Unmarshal(raw, &sv); err != nil {
		return fmt.Errorf("%w: view entry %q: %v", ErrCorrupted, k, err)
	}
	pipeline, ok := sv.Pipeline.ArrayOK()
	if !ok {
		return fmt.Errorf("%w: view entry %q: pipeline is a %v", ErrCorrupted, k, sv.Pipeline.Type)
	}
	v := &ViewDefinition{DB: sv.DB, Name: sv.Name, ViewOn: sv.ViewOn, Pipeline: bytes.Clone(pipeline), Created: sv.Created,
		Collation: bytes.Clone(sv.Collation)}
	s.views[v.Namespace()] = v
	return nil
}
