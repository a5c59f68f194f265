package unified

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// entityMap holds one test's entities by name: *clientEntity,
// *mongo.Database, *mongo.Collection, *sessionEntity, *mongo.ChangeStream
// and saved BSON values (bson.RawValue).
type entityMap struct {
	mu    sync.Mutex
	m     map[string]any
	order []string
}

func newEntityMap() *entityMap { return &entityMap{m: map[string]any{}} }

func (e *entityMap) add(name string, v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.m[name]; dup {
		return fmt.Errorf("runner: entity %q already exists", name)
	}
	e.m[name] = v
	e.order = append(e.order, name)
	return nil
}

func (e *entityMap) get(name string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[name]
	if !ok {
		return nil, fmt.Errorf("runner: no entity %q", name)
	}
	return v, nil
}

// entityOf fetches a typed entity.
func entityOf[T any](e *entityMap, name, kind string) (T, error) {
	var zero T
	v, err := e.get(name)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("runner: entity %q is a %T, want a %s", name, v, kind)
	}
	return t, nil
}

func (e *entityMap) client(name string) (*clientEntity, error) {
	return entityOf[*clientEntity](e, name, "client")
}

func (e *entityMap) session(name string) (*sessionEntity, error) {
	return entityOf[*sessionEntity](e, name, "session")
}

// BSONEntity implements Resolver.
func (e *entityMap) BSONEntity(name string) (bson.RawValue, error) {
	return entityOf[bson.RawValue](e, name, "BSON value")
}

// SessionLsid implements Resolver.
func (e *entityMap) SessionLsid(name string) (bson.Raw, error) {
	s, err := e.session(name)
	if err != nil {
		return nil, err
	}
	return s.lsid, nil
}

// all returns the entities in creation order.
func (e *entityMap) all() []any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]any, 0, len(e.order))
	for _, n := range e.order {
		out = append(out, e.m[n])
	}
	return out
}

// sessionEntity is an explicit session with the state the format asserts
// (transaction state, pinning, dirtiness). The Go driver's public API does
// not expose those, so the runner tracks them with the driver's rules:
// startTransaction -> starting; an operation in it -> in_progress (and, on
// a sharded cluster, pinned to the router it ran on); commit/abort ->
// committed/aborted (still pinned); the next startTransaction or an
// operation outside a transaction unpins; a network error marks the
// session dirty; an error labelled TransientTransactionError unpins.
type sessionEntity struct {
	id     string
	sess   *mongo.Session
	client *clientEntity
	lsid   bson.Raw
	state  string
	pinned bool
	dirty  bool
	ended  bool
}

func (s *sessionEntity) end() {
	if s.ended {
		return
	}
	s.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.sess.EndSession(ctx)
}

// noteOperation updates the tracked state after an operation ran in the
// session and returned err.
func (s *sessionEntity) noteOperation(sharded bool, err error) {
	if err != nil && !isServerError(err) && !mongo.IsNetworkError(err) {
		return // rejected by the driver: nothing was sent
	}
	switch s.state {
	case "starting":
		s.state = "in_progress"
		s.pinned = sharded
	case "in_progress":
	default:
		s.pinned = false
	}
	if err != nil {
		if mongo.IsNetworkError(err) {
			s.dirty = true
		}
		if hasLabel(err, "TransientTransactionError") {
			s.pinned = false
		}
	}
}

// createEntities makes the entities a file or a createEntities operation
// lists.
func (t *testRun) createEntities(list []bson.Raw) error {
	for _, raw := range list {
		elems, err := raw.Elements()
		if err != nil {
			return err
		}
		if len(elems) != 1 {
			return fmt.Errorf("runner: entity with %d keys", len(elems))
		}
		kind, spec := elems[0].Key(), elems[0].Value().Document()
		if err := t.createEntity(kind, spec); err != nil {
			return err
		}
	}
	return nil
}

func (t *testRun) createEntity(kind string, spec bson.Raw) error {
	id, _ := spec.Lookup("id").StringValueOK()
	switch kind {
	case "client":
		c, err := newClient(t.r.host, t.r.cred, spec)
		if err != nil {
			return err
		}
		if err := t.entities.add(id, c); err != nil {
			c.close()
			return err
		}
		return nil
	case "database":
		a := newArgs("database entity", spec)
		a.skip("id")
		clientName, _, err := a.str("client")
		if err != nil {
			return err
		}
		c, err := t.entities.client(clientName)
		if err != nil {
			return err
		}
		name, _, err := a.str("databaseName")
		if err != nil {
			return err
		}
		opts := options.Database()
		if d, ok, err := a.doc("databaseOptions"); err != nil {
			return err
		} else if ok {
			o, err := parseRWOptions("databaseOptions", d)
			if err != nil {
				return err
			}
			if o.rc != nil {
				opts.SetReadConcern(o.rc)
			}
			if o.wc != nil {
				opts.SetWriteConcern(o.wc)
			}
			if o.rp != nil {
				opts.SetReadPreference(o.rp)
			}
		}
		if err := a.finish(); err != nil {
			return err
		}
		return t.entities.add(id, c.client.Database(name, opts))
	case "collection":
		a := newArgs("collection entity", spec)
		a.skip("id")
		dbName, _, err := a.str("database")
		if err != nil {
			return err
		}
		db, err := entityOf[*mongo.Database](t.entities, dbName, "database")
		if err != nil {
			return err
		}
		name, _, err := a.str("collectionName")
		if err != nil {
			return err
		}
		opts := options.Collection()
		if d, ok, err := a.doc("collectionOptions"); err != nil {
			return err
		} else if ok {
			o, err := parseRWOptions("collectionOptions", d)
			if err != nil {
				return err
			}
			if o.rc != nil {
				opts.SetReadConcern(o.rc)
			}
			if o.wc != nil {
				opts.SetWriteConcern(o.wc)
			}
			if o.rp != nil {
				opts.SetReadPreference(o.rp)
			}
		}
		if err := a.finish(); err != nil {
			return err
		}
		return t.entities.add(id, db.Collection(name, opts))
	case "session":
		return t.createSession(id, spec)
	}
	return fmt.Errorf("runner: entity type %s not implemented", kind)
}

func (t *testRun) createSession(id string, spec bson.Raw) error {
	a := newArgs("session entity", spec)
	a.skip("id")
	clientName, _, err := a.str("client")
	if err != nil {
		return err
	}
	c, err := t.entities.client(clientName)
	if err != nil {
		return err
	}
	opts := options.Session()
	if so, ok, err := a.doc("sessionOptions"); err != nil {
		return err
	} else if ok {
		sa := newArgs("sessionOptions", so)
		if b, ok, err := sa.boolean("causalConsistency"); err != nil {
			return err
		} else if ok {
			opts.SetCausalConsistency(b)
		}
		if b, ok, err := sa.boolean("snapshot"); err != nil {
			return err
		} else if ok {
			opts.SetSnapshot(b)
		}
		if v, ok := sa.value("snapshotTime"); ok {
			ts, i, isTS := v.TimestampOK()
			if !isTS {
				ts, i, isTS = t.entityTimestamp(v)
			}
			if !isTS {
				return sa.typeErr("snapshotTime", v, "a timestamp or a timestamp entity")
			}
			opts.SetSnapshotTime(bson.Timestamp{T: ts, I: i})
		}
		if d, ok, err := sa.doc("defaultTransactionOptions"); err != nil {
			return err
		} else if ok {
			to, err := transactionOptions(d)
			if err != nil {
				return err
			}
			opts.SetDefaultTransactionOptions(to)
		}
		if err := sa.finish(); err != nil {
			return err
		}
	}
	if err := a.finish(); err != nil {
		return err
	}
	sess, err := c.client.StartSession(opts)
	if err != nil {
		return fmt.Errorf("startSession: %w", err)
	}
	s := &sessionEntity{id: id, sess: sess, client: c, lsid: append(bson.Raw(nil), sess.ID()...), state: "none"}
	if err := t.entities.add(id, s); err != nil {
		s.end()
		return err
	}
	return nil
}

// entityTimestamp resolves a string naming a saved timestamp entity.
func (t *testRun) entityTimestamp(v bson.RawValue) (uint32, uint32, bool) {
	name, ok := v.StringValueOK()
	if !ok {
		return 0, 0, false
	}
	saved, err := t.entities.BSONEntity(name)
	if err != nil {
		return 0, 0, false
	}
	return saved.TimestampOK()
}

// transactionOptions reads startTransaction's or a session's
// defaultTransactionOptions arguments.
func transactionOptions(d bson.Raw) (*options.TransactionOptionsBuilder, error) {
	a := newArgs("transaction options", d)
	to := options.Transaction()
	if err := applyTransactionArgs(a, to); err != nil {
		return nil, err
	}
	return to, a.finish()
}

func applyTransactionArgs(a *args, to *options.TransactionOptionsBuilder) error {
	if d, ok, err := a.doc("readConcern"); err != nil {
		return err
	} else if ok {
		rc, err := parseReadConcern(d)
		if err != nil {
			return err
		}
		to.SetReadConcern(rc)
	}
	if d, ok, err := a.doc("writeConcern"); err != nil {
		return err
	} else if ok {
		wc, err := parseWriteConcern(d)
		if err != nil {
			return err
		}
		to.SetWriteConcern(wc)
	}
	if d, ok, err := a.doc("readPreference"); err != nil {
		return err
	} else if ok {
		rp, err := parseReadPreference(d)
		if err != nil {
			return err
		}
		to.SetReadPreference(rp)
	}
	return nil
}

// closeAll ends sessions, closes change streams and disconnects clients.
func (e *entityMap) closeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var clients []*clientEntity
	for _, v := range e.all() {
		switch x := v.(type) {
		case *sessionEntity:
			x.end()
		case *mongo.ChangeStream:
			_ = x.Close(ctx)
		case *mongo.Cursor:
			_ = x.Close(ctx)
		case *clientEntity:
			clients = append(clients, x)
		}
	}
	for _, c := range clients {
		c.close()
	}
}
