package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/query"
)

// Codes of the find language (query, projection, sort, expressions) that
// errors.go does not list; the Location ones have no codeName in MongoDB
// other than "Location<code>".
const (
	ErrNoQueryExecutionPlans Code = 291
	ErrConversionFailure     Code = 241
	ErrQueryMemoryLimit      Code = 292 // QueryExceededMemoryLimitNoDiskUseAllowed
	errBadSortKey            Code = 15974
	errBadSortOrder          Code = 15975
	errBadSortMeta           Code = 17312
	errFieldPathEmpty        Code = 40352
	errFieldPathEmptyPart    Code = 15998
	errFieldPathDollar       Code = 16410
	errExclusionInInclusion  Code = 31254
	errInclusionInExclusion  Code = 31253
	errPathCollision         Code = 31249
	errPathCollisionPrefix   Code = 31250
	errPositionalProjection  Code = 31276
	errPositionalNoMatch     Code = 51246
	errElemMatchNested       Code = 31275
	errSliceProjection       Code = 28724
	errEmptyProjectionPath   Code = 40352
	errBadMetaProjection     Code = 17308
	errInvalidRegex          Code = 51091
	errBadRegexOptions       Code = 51108
	errUndefinedVariable     Code = 17276
	errExpressionArity       Code = 16020
	errExpressionSpec        Code = 15983
	errNoSwitchBranch        Code = 40066
	errBadTimezone           Code = 40485
	errNullInPairKey         Code = 4940400
	errNullInKV              Code = 4940401
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
