package query

import (
	"errors"
)

// Error categories. Every error this package returns wraps exactly one of
// them; the command layer maps each to a MongoDB code (engine/reply.go).
// The categories name what went wrong, never a code. Besides these, its
// errors wrap engine/langerr's shared categories (BadValue, TypeMismatch,
// FailedToParse, NotImplemented).
var (
	// ErrNeedsIndex: an operator MongoDB only runs with an index of a
	// kind Parsec does not have ($text).
	ErrNeedsIndex = errors.New("index required")
	// ErrNoPlan: the planner cannot answer the query (geo near queries).
	ErrNoPlan = errors.New("no query execution plan")
	// Sort specifications MongoDB refuses: a value that is not a number
	// or $meta, a number other than ±1, an object other than {$meta}.
	ErrBadSortKey   = errors.New("illegal sort key")
	ErrBadSortOrder = errors.New("illegal sort order")
	ErrBadSortMeta  = errors.New("illegal sort expression")
	// Field paths MongoDB refuses: empty, with an empty part, with a part
	// starting with '$'.
	ErrFieldPathEmpty     = errors.New("empty field path")
	ErrFieldPathEmptyPart = errors.New("empty field path part")
	ErrFieldPathDollar    = errors.New("field path part starts with $")
	// Projection errors.
	ErrProjectionExclusionInInclusion = errors.New("exclusion in inclusion projection")
	ErrProjectionInclusionInExclusion = errors.New("inclusion in exclusion projection")
	ErrProjectionPathCollision        = errors.New("projection path collision")
	ErrProjectionPathCollisionPrefix  = errors.New("projection path collision with a longer path")
	ErrProjectionPositional           = errors.New("bad positional projection")
	ErrPositionalNoMatch              = errors.New("positional projection without a match")
	ErrProjectionElemMatchNested      = errors.New("$elemMatch projection on a nested field")
	ErrProjectionSliceBad             = errors.New("bad $slice projection")
	ErrProjectionEmptyPath            = errors.New("empty projection path")
	ErrProjectionBadMeta              = errors.New("bad $meta projection")
)
