package engine

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/ru"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Partitions as the command layer sees them: limits, document keys of
// sharded collections, point lookups, and throughput.

// PartitionLimits are Cosmos DB's partition rules, as flags so that tests
// can use small ones. Zero fields take the defaults.
type PartitionLimits struct {
	// MaxRUs is the most RU/s one physical partition serves (10,000):
	// throughput above partitions x MaxRUs splits partitions.
	MaxRUs int
	// MaxBytes is the most a physical partition holds before it splits
	// (50 GB); LogicalMaxBytes the most one logical partition may hold
	// (20 GB). Negative: no limit.
	MaxBytes        int64
	LogicalMaxBytes int64
	// DefaultThroughput is the manual RU/s of a collection created
	// without throughput in a database without shared throughput (400).
	DefaultThroughput int
	// MaxThroughput is the most RU/s (manual, or autoscale's maximum) a
	// collection or database may be given (Cosmos DB's 1,000,000 without
	// a support request).
	MaxThroughput int
}

// Cosmos DB's values.
const (
	DefaultPartitionMaxRUs          = 10_000
	DefaultPartitionMaxBytes        = 50 << 30
	DefaultLogicalPartitionMaxBytes = 20 << 30
	DefaultThroughputRUs            = 400
	DefaultMaxThroughput            = 1_000_000
)

func (l PartitionLimits) withDefaults() PartitionLimits {
	if l.MaxRUs <= 0 {
		l.MaxRUs = DefaultPartitionMaxRUs
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultPartitionMaxBytes
	}
	if l.LogicalMaxBytes == 0 {
		l.LogicalMaxBytes = DefaultLogicalPartitionMaxBytes
	}
	if l.DefaultThroughput <= 0 {
		l.DefaultThroughput = DefaultThroughputRUs
	}
	if l.MaxThroughput <= 0 {
		l.MaxThroughput = DefaultMaxThroughput
	}
	return l
}

func (l PartitionLimits) storeLimits() store.Limits {
	return store.Limits{PartitionBytes: max(l.MaxBytes, 0), LogicalPartitionBytes: max(l.LogicalMaxBytes, 0)}
}

// docKeyOf is plan.DocKey with a client's error for a document whose
// shard key is missing or invalid.
func docKeyOf(c *store.Collection, doc bsoncore.Document, id bsoncore.Value) ([]byte, error) {
	key, err := plan.DocKey(c, doc, id)
	if err != nil {
		return nil, shardKeyError(err)
	}
	return key, nil
}

// shardKeyError is the client's error for a document whose shard key is
// missing or invalid.
func shardKeyError(err error) error {
	var ke *shard.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	switch {
	case errors.Is(err, shard.ErrMissing):
		return errorf(ErrShardKeyNotFound, "%s", ke.Error())
	}
	return errorf(ErrBadValue, "%s", ke.Error())
}

// targetedShardKey is the one shard-key value an upsert's filter pins in
// a sharded collection: MongoDB refuses an upsert it cannot target.
func targetedShardKey(c *store.Collection, filter bsoncore.Document) error {
	if !c.Sharded() {
		return nil
	}
	if vals, ok := c.Spec().Values(filter); ok && len(vals) == 1 {
		return nil
	}
	return errorf(ErrShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
}

// checkShardKeyKept refuses an update that changes (or removes) a
// document's shard-key value, which is immutable: the document would
// belong to another logical partition.
func checkShardKeyKept(c *store.Collection, before, after bsoncore.Document) error {
	if !c.Sharded() {
		return nil
	}
	// Each field of the key is immutable: MongoDB names the first one
	// that changed.
	for _, f := range c.Spec().Fields() {
		one := shard.Spec{Path: f.Path, Ranged: true}
		old, err := one.Extract(before)
		if err != nil {
			continue // stored before it had a valid key: cannot happen
		}
		now, err := one.Extract(after)
		if err != nil {
			if errors.Is(err, shard.ErrMissing) {
				return errorf(ErrImmutableField, "After applying the update, the (immutable) field '%s' was found to have been removed.", f.Path)
			}
			return errorf(ErrImmutableField, "After applying the update, the (immutable) field '%s' was found to have been altered: %v", f.Path, err)
		}
		// Equal values of other types (1 and 1.0) keep the key, unless the
		// field is hashed and they hash apart (1.5 and decimal 1.5).
		if !bytes.Equal(value.EncodeKey(nil, old), value.EncodeKey(nil, now)) || (f.Hashed && shard.Point(old) != shard.Point(now)) {
			return errorf(ErrImmutableField, "After applying the update, the (immutable) field '%s' was found to have been altered to %s: %s",
				f.Path, f.Path, shellString(now))
		}
	}
	return nil
}

// humanBytes writes a size as Cosmos DB's messages do ("20 GB"), exact:
// the largest unit that divides it, else bytes.
func humanBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TB"}, {1 << 30, "GB"}, {1 << 20, "MB"}, {1 << 10, "KB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// throughputOf converts the catalog's throughput to ru's.
func throughputOf(t store.Throughput) ru.Throughput {
	return ru.Throughput{RUs: t.RUs, MaxRUs: t.MaxRUs}
}

func storeThroughput(t ru.Throughput) store.Throughput {
	return store.Throughput{RUs: t.RUs, MaxRUs: t.MaxRUs}
}

// effectiveThroughput is the throughput c runs under and whether it is
// shared with its database: its own; else its database's; else the
// default.
func (e *Engine) effectiveThroughput(c *store.Collection) (ru.Throughput, bool) {
	if !c.Throughput.IsZero() {
		return throughputOf(c.Throughput), false
	}
	if d := e.store.Database(c.DB); d != nil && !d.Throughput.IsZero() {
		return throughputOf(d.Throughput), true
	}
	return ru.Manual(e.limits.DefaultThroughput), false
}

// partitionsForThroughput is how many physical partitions throughput t
// needs (manual T or autoscale Tmax at MaxRUs each).
func (e *Engine) partitionsForThroughput(t ru.Throughput) int {
	return shard.PartitionsFor(int(t.Limit()), e.limits.MaxRUs)
}

// initialPartitions is how many partitions a new collection with
// throughput t starts with.
func (e *Engine) initialPartitions(t ru.Throughput) int {
	return shard.InitialPartitions(t.RUs, t.MaxRUs, e.limits.MaxRUs)
}
