package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/plan"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reads are planned and run by engine/plan: routing to partitions, index
// selection, fan-out and index scans. This is the command layer's side of
// it: the planner gets the engine's storage, the view of the request's
// transaction or snapshot, and the engine's errors.

// The plan package's types under the names the command layer uses.
type (
	readPlan      = plan.Read
	planStats     = plan.Stats
	partitionSpan = plan.Span
)

// planner runs read plans against the engine's storage.
func (e *Engine) planner() *plan.Planner { return e.plans }

// planErrors are the client's errors for what a read raises.
type planErrors struct{}

func (planErrors) Filter(err error) error { return queryError(err) }

func (planErrors) Projection(err error) error { return positionalError(queryError(err)) }

func (planErrors) SortMemory(limit int) error {
	return errorf(ErrQueryMemoryLimit, "Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", limit)
}

// planSource is a running read plan as a cursor's batch source, with the
// tallies its read bill charges.
type planSource struct{ plan.Source }

func (s planSource) nextBatch(ctx context.Context, max, maxBytes int) ([][]byte, bool, error) {
	return s.NextBatch(ctx, max, maxBytes)
}

func (s planSource) tally(i int) planStats { return s.Tally(i) }

// source makes the batch source that runs the plan.
func (e *Engine) source(p *readPlan) planSource { return planSource{e.planner().Source(p)} }

var emptyDocument = bsoncore.NewDocumentBuilder().Build()
