package plan

import (
	"context"

	"github.com/parsecdb/parsec/engine/storage"
)

// Reader runs read transactions: the latest data, a snapshot, or a
// transaction's view.
type Reader interface {
	View(fn func(storage.Txn) error) error
}

// Errors turns what a read's filter and projection raise, and a blocking
// sort that outgrows its memory, into the errors the client sees. The
// command layer implements it with its codes; this package has none.
type Errors interface {
	// Filter is the error of a filter that failed on a document.
	Filter(err error) error
	// Projection is the error of a projection (or returnKey) that failed
	// on a matched document.
	Projection(err error) error
	// SortMemory is the error of a blocking sort past SortMemoryLimit
	// when the read may not use the disk.
	SortMemory(limit int) error
}

// Planner runs read plans and weighs them against the data: what it
// needs of the server is passed in.
type Planner struct {
	// Storage is the data: counters for weighing plans, and the latest
	// state when ViewOf is nil.
	Storage storage.Storage
	// ViewOf is what the reads under ctx read (a transaction's or a
	// snapshot's state, else the latest); nil: Storage.
	ViewOf func(ctx context.Context) Reader
	// Errors maps the errors reads raise; nil leaves them as they are.
	Errors Errors
}

func (pl *Planner) filterError(err error) error {
	if pl.Errors == nil {
		return err
	}
	return pl.Errors.Filter(err)
}

func (pl *Planner) projectionError(err error) error {
	if pl.Errors == nil {
		return err
	}
	return pl.Errors.Projection(err)
}

// sortMemoryError is the error of a blocking sort past SortMemoryLimit.
func (pl *Planner) sortMemoryError() error {
	if pl.Errors == nil {
		return errSortMemory
	}
	return pl.Errors.SortMemory(SortMemoryLimit)
}
