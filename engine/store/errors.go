package store

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Storage errors. Callers test with errors.Is; the command layer maps them
// to MongoDB error codes.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrConflict  = errors.New("write conflict")
	ErrTooLarge  = errors.New("too large")
	ErrLocked    = errors.New("data directory is in use by another process")
	ErrClosed    = errors.New("store is closed")
	ErrCorrupted = errors.New("stored data is corrupted")
	// ErrIsView refuses to create, or rename over, a collection whose
	// name a view has (views.go).
	ErrIsView = errors.New("is a view")
	// ErrKeyTooLarge and ErrValueTooLarge refuse a write whose key or
	// value Badger cannot hold (MaxKeyBytes; a value larger than the value
	// log, or than 1 MB in an in-memory store), before Badger sees it: its
	// own errors carry a hex dump of the key.
	ErrKeyTooLarge   = errors.New("key too large")
	ErrValueTooLarge = errors.New("value too large")
)

// DuplicateKeyError reports an insert whose key is already present.
type DuplicateKeyError struct {
	Key []byte // the encoded key that collided
	// Index is the unique secondary index that refused it ("" for the
	// _id index) and KeyValue its key in the refused document.
	Index      string
	Namespace  string
	KeyPattern bson.Raw
	KeyValue   bson.D
}

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %x", e.Key) }

// ErrLogicalPartitionFull is wrapped by LogicalPartitionFullError.
var ErrLogicalPartitionFull = errors.New("logical partition is full")

// LogicalPartitionFullError refuses a write that would grow a logical
// partition (all documents of one shard-key value; an unsharded
// collection is one) past the logical-partition limit.
type LogicalPartitionFullError struct {
	Limit int64 // bytes
	Size  int64 // what the write would have made it
}

func (e *LogicalPartitionFullError) Error() string {
	return fmt.Sprintf("logical partition would grow to %d bytes, over its limit of %d", e.Size, e.Limit)
}

func (e *LogicalPartitionFullError) Unwrap() error { return ErrLogicalPartitionFull }
