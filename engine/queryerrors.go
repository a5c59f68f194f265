package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/query"
)

// languageErrors maps the error categories of engine/query and engine/expr
// to MongoDB codes. The first category an error wraps wins.
var languageErrors = []struct {
	category error
	code     Code
}{
	{query.ErrBadValue, ErrBadValue},
	{query.ErrTypeMismatch, ErrTypeMismatch},
	{query.ErrFailedToParse, ErrFailedToParse},
	{query.ErrNotImplemented, ErrNotImplemented},
	{query.ErrNeedsIndex, ErrIndexNotFound},
	{query.ErrNoPlan, ErrNoQueryExecutionPlans},
	{query.ErrBadSortKey, errBadSortKey},
	{query.ErrBadSortOrder, errBadSortOrder},
	{query.ErrBadSortMeta, errBadSortMeta},
	{query.ErrFieldPathEmpty, errFieldPathEmpty},
	{query.ErrFieldPathEmptyPart, errFieldPathEmptyPart},
	{query.ErrFieldPathDollar, errFieldPathDollar},
	{query.ErrProjectionExclusionInInclusion, errExclusionInInclusion},
	{query.ErrProjectionInclusionInExclusion, errInclusionInExclusion},
	{query.ErrProjectionPathCollision, errPathCollision},
	{query.ErrProjectionPathCollisionPrefix, errPathCollisionPrefix},
	{query.ErrProjectionPositional, errPositionalProjection},
	{query.ErrPositionalNoMatch, errPositionalNoMatch},
	{query.ErrProjectionElemMatchNested, errElemMatchNested},
	{query.ErrProjectionSliceBad, errSliceProjection},
	{query.ErrProjectionEmptyPath, errEmptyProjectionPath},
	{query.ErrProjectionBadMeta, errBadMetaProjection},
	{expr.ErrBadValue, ErrBadValue},
	{expr.ErrTypeMismatch, ErrTypeMismatch},
	{expr.ErrFailedToParse, ErrFailedToParse},
	{expr.ErrUnknownOperator, ErrInvalidPipelineOperator},
	{expr.ErrUndefinedVariable, errUndefinedVariable},
	{expr.ErrArity, errExpressionArity},
	{expr.ErrNotImplemented, ErrNotImplemented},
	{expr.ErrConversion, ErrConversionFailure},
	{expr.ErrFieldPath, errFieldPathDollar},
	{expr.ErrExpressionSpec, errExpressionSpec},
	{expr.ErrDivideByZero, ErrBadValue},
	{expr.ErrNoSwitchBranch, errNoSwitchBranch},
	{expr.ErrInvalidRegex, errInvalidRegex},
	{expr.ErrBadRegexOptions, errBadRegexOptions},
	{expr.ErrTimezone, errBadTimezone},
	{expr.ErrNullInPairKey, errNullInPairKey},
	{expr.ErrNullInKV, errNullInKV},
}

// languageError turns an error of engine/query or engine/expr into a
// CommandError with MongoDB's code and the message without the category
// prefix; other errors pass through.
func languageError(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range languageErrors {
		if errors.Is(err, m.category) {
			return errorf(m.code, "%s", trimPrefix(err.Error(), m.category.Error()+": "))
		}
	}
	return err
}

func trimPrefix(s, p string) string {
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
