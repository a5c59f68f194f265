package expr

import (
	"errors"

	"github.com/parsecdb/parsec/engine/langerr"
)

// Error categories; every error of this package wraps one of them. The
// first three and ErrNotImplemented are engine/langerr's, which every
// language package shares.
var (
	ErrBadValue      = langerr.ErrBadValue
	ErrTypeMismatch  = langerr.ErrTypeMismatch
	ErrFailedToParse = langerr.ErrFailedToParse
	// ErrUnknownOperator: "Unrecognized expression '$foo'".
	ErrUnknownOperator = errors.New("unrecognized expression")
	// ErrUndefinedVariable: $$name that no let or operator defines.
	ErrUndefinedVariable = errors.New("undefined variable")
	// ErrArity: an operator given the wrong number of arguments.
	ErrArity = errors.New("wrong number of arguments")
	// ErrInvalidRegex: a pattern the regex engine refuses.
	ErrInvalidRegex = errors.New("invalid regex")
	// ErrBadRegexOptions: a flag other than i, m, s, x (or u).
	ErrBadRegexOptions = errors.New("invalid regex options")
	// ErrNotImplemented: a MongoDB operator Parsec does not have yet.
	ErrNotImplemented = langerr.ErrNotImplemented
	// ErrConversion: $convert (and $toInt, ...) cannot convert a value.
	ErrConversion = errors.New("conversion failure")
	// ErrFieldPath: a malformed field path or variable name.
	ErrFieldPath = errors.New("bad field path")
	// ErrExpressionSpec: an object with an operator and other fields.
	ErrExpressionSpec = errors.New("bad expression specification")
	// ErrDivideByZero: $divide or $mod by zero.
	ErrDivideByZero = errors.New("division by zero")
	// ErrNoSwitchBranch: $switch with no matching branch and no default.
	ErrNoSwitchBranch = errors.New("no matching $switch branch")
	// ErrNullInPairKey and ErrNullInKV: $arrayToObject given a key with
	// a zero byte inside, in a [k, v] pair or a {k, v} document (MongoDB
	// gives the two forms different codes).
	ErrNullInPairKey = errors.New("null byte in a pair's key")
	ErrNullInKV      = errors.New("null byte in a k/v key")
	// ErrTimezone: a timezone identifier that is neither an Olson name
	// nor a UTC offset.
	ErrTimezone = errors.New("unrecognized time zone")
)
