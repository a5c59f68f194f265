package store

import (
	"errors"
	"fmt"
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
)

// DuplicateKeyError reports an insert whose key is already present.
type DuplicateKeyError struct {
	Key []byte // the encoded key that collided
}

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %x", e.Key) }
