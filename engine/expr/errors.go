package expr

import (
	"errors"
)

// Error categories of this package; its errors wrap one of them or one
// of engine/langerr's shared categories (BadValue, TypeMismatch,
// FailedToParse, NotImplemented).
var (
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
	// ErrInternalConstant: a command's let that sets a system variable
	// ($$NOW, $$CLUSTER_TIME, ...), which only MongoDB's own nodes may.
	ErrInternalConstant = errors.New("internal constant")
)
