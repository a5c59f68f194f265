package unified

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// failPointRecord is a fail point to switch off after the test.
type failPointRecord struct {
	client *mongo.Client
	name   string
}

// special runs a testRunner operation; they return no result and fail the
// test when their assertion does not hold.
func (t *testRun) special(ctx context.Context, op Operation) error {
	a := newArgs(op.Name, op.Arguments)
	switch op.Name {
	case "failPoint", "targetedFailPoint":
		fp, err := a.requiredDoc("failPoint")
		if err != nil {
			return err
		}
		var client *mongo.Client
		if op.Name == "failPoint" {
			name, _, err := a.str("client")
			if err != nil {
				return err
			}
			c, err := t.entities.client(name)
			if err != nil {
				return err
			}
			client = c.client
		} else {
			s, err := t.sessionArg(a)
			if err != nil {
				return err
			}
			if !s.pinned {
				return failf("targetedFailPoint: session not pinned", "targetedFailPoint: session %s is not pinned to a mongos", s.id)
			}
			client = s.client.client
		}
		if err := a.finish(); err != nil {
			return err
		}
		name, _ := fp.Lookup("configureFailPoint").StringValueOK()
		if err := client.Database("admin").RunCommand(ctx, fp).Err(); err != nil {
			return failf("failPoint: configureFailPoint failed: "+describeError(err), "%s: configureFailPoint %s: %v", op.Name, name, err)
		}
		t.failPoints = append(t.failPoints, failPointRecord{client: client, name: name})
		return nil

	case "assertSessionTransactionState":
		s, err := t.sessionArg(a)
		if err != nil {
			return err
		}
		state, _, err := a.str("state")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		if s.state != state {
			return failf("assertSessionTransactionState failed", "session %s transaction state is %s, want %s", s.id, s.state, state)
		}
		return nil

	case "assertSessionPinned", "assertSessionUnpinned", "assertSessionDirty", "assertSessionNotDirty":
		s, err := t.sessionArg(a)
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		var got, want bool
		switch op.Name {
		case "assertSessionPinned":
			got, want = s.pinned, true
		case "assertSessionUnpinned":
			got, want = s.pinned, false
		case "assertSessionDirty":
			got, want = s.dirty || s.client.sessionDirty(s.lsid), true
		default:
			got, want = s.dirty || s.client.sessionDirty(s.lsid), false
		}
		if got != want {
			return failf(op.Name+" failed", "%s: session %s does not hold", op.Name, s.id)
		}
		return nil

	case "assertSameLsidOnLastTwoCommands", "assertDifferentLsidOnLastTwoCommands":
		name, _, err := a.str("client")
		if err != nil {
			return err
		}
		c, err := t.entities.client(name)
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		x, y, err := c.lastStartedLsids()
		if err != nil {
			return failf(op.Name+" failed", "%s: %v", op.Name, err)
		}
		same := Equal(docValue(x), docValue(y)) == nil
		if same != (op.Name == "assertSameLsidOnLastTwoCommands") {
			return failf(op.Name+" failed", "%s: lsids %s and %s", op.Name, x, y)
		}
		return nil

	case "assertCollectionExists", "assertCollectionNotExists":
		db, coll, err := namespaceArgs(a)
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		names, err := t.r.internal.Database(db).ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}})
		if err != nil {
			return failf(op.Name+": listCollections failed: "+describeError(err), "%s: listCollections: %v", op.Name, err)
		}
		exists := slices.Contains(names, coll)
		if exists != (op.Name == "assertCollectionExists") {
			return failf(op.Name+" failed", "%s: collection %s.%s exists=%v", op.Name, db, coll, exists)
		}
		return nil

	case "assertIndexExists", "assertIndexNotExists":
		db, coll, err := namespaceArgs(a)
		if err != nil {
			return err
		}
		index, _, err := a.str("indexName")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		specs, err := t.r.internal.Database(db).Collection(coll).Indexes().ListSpecifications(ctx)
		if err != nil {
			return failf(op.Name+": listIndexes failed: "+describeError(err), "%s: listIndexes: %v", op.Name, err)
		}
		exists := slices.ContainsFunc(specs, func(s mongo.IndexSpecification) bool { return s.Name == index })
		if exists != (op.Name == "assertIndexExists") {
			return failf(op.Name+" failed", "%s: index %s on %s.%s exists=%v", op.Name, index, db, coll, exists)
		}
		return nil

	case "createEntities":
		vals, _, err := a.array("entities")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		list := make([]bson.Raw, len(vals))
		for i, v := range vals {
			list[i] = v.Document()
		}
		return t.createEntities(list)

	case "wait":
		ms, _, err := a.integer("ms")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return nil

	case "assertNumberConnectionsCheckedOut":
		name, _, err := a.str("client")
		if err != nil {
			return err
		}
		c, err := t.entities.client(name)
		if err != nil {
			return err
		}
		n, _, err := a.integer("connections")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		c.mu.Lock()
		got := c.checkedOut
		c.mu.Unlock()
		if int64(got) != n {
			return failf(op.Name+" failed", "%s: %d connections checked out, want %d", op.Name, got, n)
		}
		return nil

	case "waitForEvent", "assertEventCount":
		name, _, err := a.str("client")
		if err != nil {
			return err
		}
		c, err := t.entities.client(name)
		if err != nil {
			return err
		}
		want, err := a.requiredDoc("event")
		if err != nil {
			return err
		}
		n, _, err := a.integer("count")
		if err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		count := func() int64 {
			var k int64
			for _, typ := range []string{"command", "cmap"} {
				for _, e := range c.events(typ) {
					if t.matchEvent(want, e) == nil {
						k++
					}
				}
			}
			return k
		}
		if op.Name == "assertEventCount" {
			if got := count(); got != n {
				return failf(op.Name+" failed", "%s: %d matching events, want %d", op.Name, got, n)
			}
			return nil
		}
		deadline := time.Now().Add(10 * time.Second)
		for count() < n {
			if time.Now().After(deadline) {
				return failf(op.Name+" timed out", "%s: fewer than %d events %s after 10s", op.Name, n, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	return notImplemented(op.Name, "testRunner")
}

func (t *testRun) sessionArg(a *args) (*sessionEntity, error) {
	name, ok, err := a.str("session")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("runner: %s needs a session", a.op)
	}
	return t.entities.session(name)
}

func namespaceArgs(a *args) (string, string, error) {
	db, _, err := a.str("databaseName")
	if err != nil {
		return "", "", err
	}
	coll, _, err := a.str("collectionName")
	return db, coll, err
}

// disableFailPoints switches off the fail points the test configured.
func (t *testRun) disableFailPoints() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, fp := range t.failPoints {
		_ = fp.client.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: fp.name}, {Key: "mode", Value: "off"}}).Err()
	}
	t.failPoints = nil
}
