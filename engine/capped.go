package engine

import (
	"context"
	"errors"
	"time"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Capped collections (store/capped.go keeps their documents in insertion
// order and evicts the oldest): the options create and convertToCapped
// take, and tailable cursors.

// cappedSpec is what create or convertToCapped asked for.
type cappedSpec struct {
	capped          bool
	size, max       int64
	sizeSet, maxSet bool
}

// Limits of MongoDB's collection options.
const (
	maxCappedSize = 1 << 50 // 1 PB
	maxCappedDocs = 1 << 31
)

// parse reads one of capped, size and max (cmd names the command for
// messages); false when k is none of them.
func (cs *cappedSpec) parse(cmd, k string, v bsoncore.Value) (bool, error) {
	var err error
	switch k {
	case "capped":
		cs.capped, err = boolArg(cmd, k, v)
	case "size", "max":
		if v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			return true, nil // null is absent, as MongoDB's IDL reads it
		}
		if !isNumber(v) {
			return true, wrongTypes(cmd, k, v, "long, int, decimal, double")
		}
		f, _ := numberFloat(v)
		n := int64(f)
		if f >= 1<<62 {
			n = 1 << 62
		}
		if k == "size" {
			if n < 1 {
				return true, errorf(ErrValueNegative, "BSON field 'size' value must be >= 1, actual value '%d'", n)
			}
			cs.size, cs.sizeSet = n, true
		} else {
			cs.max, cs.maxSet = n, true
		}
	default:
		return false, nil
	}
	return true, err
}

// check applies MongoDB's rules to the options together: size is
// required with capped, and capped with size or max.
func (cs *cappedSpec) check() error {
	if cs.capped && !cs.sizeSet {
		return errorf(ErrInvalidOptions, "the 'size' field is required when 'capped' is true")
	}
	if (cs.sizeSet || cs.maxSet) && !cs.capped {
		return errorf(ErrInvalidOptions, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
	}
	if !cs.capped {
		return nil
	}
	if cs.size > maxCappedSize {
		return errorf(ErrBadValue, "size cannot exceed 1 PB")
	}
	if cs.max >= maxCappedDocs {
		return errorf(ErrBadValue, "max in a capped collection has to be < 2^31 or not set")
	}
	// MongoDB rounds the size up to a multiple of 256 bytes and takes a
	// max of 0 or less as none.
	cs.size = (cs.size + 0xff) &^ 0xff
	if cs.max < 0 {
		cs.max = 0
	}
	return nil
}

// options are the create options a capped collection lists, in MongoDB's
// order: capped, size, max.
func (cs *cappedSpec) options(b *bsoncore.DocumentBuilder) {
	if !cs.capped {
		return
	}
	b.AppendBoolean("capped", true)
	b.AppendInt64("size", cs.size)
	if cs.max > 0 {
		b.AppendInt64("max", cs.max)
	}
}

// newCollection is the store's description of the collection.
func (cs *cappedSpec) newCollection(opts bson.Raw) store.NewCollection {
	return store.NewCollection{Options: opts, Capped: cs.capped, CappedSize: cs.size, CappedMax: cs.max}
}

// cappedStats are the fields collStats and $collStats show for c:
// capped, and for a capped collection max and maxSize.
// (maxSize divided by scale).
func cappedStats(c *store.Collection, scale int64) bson.D {
	if c == nil || !c.Capped {
		return bson.D{{Key: "capped", Value: false}}
	}
	return bson.D{{Key: "capped", Value: true}, {Key: "max", Value: number(c.CappedMax)}, {Key: "maxSize", Value: number(c.CappedSize / scale)}}
}

// tailableNonCapped is find's error for tailable on a collection that is
// not capped.
func tailableNonCapped() *CommandError {
	return errorf(ErrBadValue, "error processing query: tailable cursor requested on non capped collection")
}

// tailSource is a tailable cursor's source: a scan of a capped
// collection in insertion order that, at the end, stays open and reads
// on after the last document it returned when asked again. With
// awaitData, a batch that finds nothing waits for a commit to the
// collection, up to the getMore's maxAwaitTimeMS.
type tailSource struct {
	e         *Engine
	coll      *store.Collection
	scan      *plan.Scan
	awaitData bool
	wait      time.Duration // how long an empty batch waits (getMore's maxTimeMS)
}

// defaultAwait is how long a getMore of an awaitData cursor (a tailable
// one, or a change stream's) waits when it does not say (MongoDB's one
// second).
const defaultAwait = time.Second

func (t *tailSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	deadline := time.Now().Add(t.wait)
	for {
		signal := t.e.store.CommitSignal(t.coll)
		if err := t.checkPosition(); err != nil {
			return nil, true, err
		}
		docs, done, err := t.scan.NextBatch(ctx, max, maxBytes)
		if err != nil || len(docs) > 0 || t.scan.LimitReached() {
			return docs, done && t.scan.LimitReached(), err
		}
		if !done {
			continue // examined without returning, stopped short: read on
		}
		t.scan.Tail()
		left := time.Until(deadline)
		if !t.awaitData || left <= 0 {
			return nil, false, nil
		}
		timer := time.NewTimer(left)
		select {
		case <-signal:
			timer.Stop()
		case <-timer.C:
			return nil, false, nil
		case <-ctx.Done():
			timer.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, false, nil // maxTimeMS bounds the wait: an empty batch
			}
			return nil, false, ctx.Err()
		}
	}
}

// checkPosition fails with CappedPositionLost when the last document the
// cursor returned was deleted (evicted) meanwhile: what it was about to
// read may be gone.
func (t *tailSource) checkPosition() error {
	last := t.scan.LastKey()
	if last == nil {
		return nil
	}
	gone := false
	err := t.e.store.View(func(tx storage.Txn) error {
		_, err := tx.Get(last)
		if errors.Is(err, store.ErrNotFound) {
			gone = true
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if gone {
		return errorf(ErrCappedPositionLost, "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", store.RecordID(t.coll, last))
	}
	return nil
}

func (t *tailSource) tally(i int) planStats { return t.scan.Tally(i) }

// checkTailable refuses what a tailable find cannot be combined with,
// as MongoDB does.
func checkTailable(a *findArgs) error {
	if a.singleBatch {
		return errorf(ErrBadValue, "cannot use tailable option with the 'singleBatch' option")
	}
	if len(a.sort) > 5 {
		el := mustElements(a.sort)
		if len(el) != 1 || el[0].Key() != "$natural" || !isOne(el[0].Value()) {
			return errorf(ErrBadValue, "cannot use tailable option with a sort other than {$natural: 1}")
		}
	}
	return nil
}
