package update

import (
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/langerr"
)

// Error categories, one per MongoDB error code the command layer gives;
// the first three are engine/langerr's, which every language package
// shares.
var (
	ErrBadValue              = langerr.ErrBadValue                        // 2 BadValue
	ErrFailedToParse         = langerr.ErrFailedToParse                   // 9 FailedToParse
	ErrTypeMismatch          = langerr.ErrTypeMismatch                    // 14 TypeMismatch
	ErrPathNotViable         = errors.New("path not viable")              // 28 PathNotViable
	ErrConflictingOperators  = errors.New("conflicting update operators") // 40 ConflictingUpdateOperators
	ErrDollarPrefixedField   = errors.New("dollar prefixed field name")   // 52 DollarPrefixedFieldName
	ErrInvalidIDField        = errors.New("invalid _id field")            // 53 InvalidIdField
	ErrNotSingleValueField   = errors.New("not single value field")       // 54 NotSingleValueField
	ErrEmptyFieldName        = errors.New("empty field name")             // 56 EmptyFieldName
	ErrImmutableField        = errors.New("immutable field")              // 66 ImmutableField
	ErrInvalidOptions        = errors.New("invalid options")              // 72 InvalidOptions
	ErrUnsupported           = errors.New("not supported")                // 115 CommandNotSupported
	ErrInvalidPipelineUpdate = errors.New("invalid pipeline update")      // 40324 (unknown stage)
	ErrUnknownStage          = errors.New("unknown pipeline stage")       // 40324
	ErrReplaceRootNotObject  = errors.New("replacement is not an object") // 40228
	// ErrQuery: a query or expression in the update (an array filter, a
	// $pull condition, a pipeline stage's expression) is invalid or fails;
	// the error of package query or expr in the chain decides the code.
	ErrQuery = errors.New("invalid query")
)

// Error is an update error: MongoDB's message and the category it belongs to.
type Error struct {
	cat   error
	msg   string
	cause error // the query error behind an ErrQuery
}

func (e *Error) Error() string { return e.msg }

// Cause is the query error behind an ErrQuery, nil for other categories.
func (e *Error) Cause() error { return e.cause }

// Unwrap returns the category (and the cause), so errors.Is(err,
// ErrBadValue) works.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.cat, e.cause}
	}
	return []error{e.cat}
}

func errorf(cat error, format string, args ...any) error {
	return &Error{cat: cat, msg: fmt.Sprintf(format, args...)}
}
