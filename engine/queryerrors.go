package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/update"
)

// languageErrors maps the error categories of the language packages to
// MongoDB codes: engine/langerr's, which they share, then the own ones of
// engine/query, engine/expr, engine/agg and engine/update. An error wraps
// one category (an update error with ErrQuery also its cause, which
// updateError reads first); the first that matches wins. The Location
// codes have no codeName but "Location<code>".
var languageErrors = []struct {
	category error
	code     Code
}{
	{langerr.ErrBadValue, ErrBadValue},
	{langerr.ErrTypeMismatch, ErrTypeMismatch},
	{langerr.ErrFailedToParse, ErrFailedToParse},
	{langerr.ErrNotImplemented, ErrNotImplemented},
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
	{expr.ErrUnknownOperator, ErrInvalidPipelineOperator},
	{expr.ErrUndefinedVariable, errUndefinedVariable},
	{expr.ErrArity, errExpressionArity},
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
	{expr.ErrInternalConstant, 4738901},
	{expr.ErrNotNumeric, 28765},
	{expr.ErrModByZero, 16610},
	{expr.ErrModByZeroDecimal, 5733415},
	{expr.ErrModType, 16611},
	{expr.ErrAbsOverflow, 28680},
	{expr.ErrSqrtDomain, 28714},
	{expr.ErrLnDomain, 28766},
	{expr.ErrLog10Domain, 28761},
	{expr.ErrLogDomain, 28758},
	{expr.ErrLogBase, 28759},
	{expr.ErrPowZeroBase, 28764},
	{expr.ErrTrigDomain, 50989},
	{expr.ErrRangeStep, 34449},
	{expr.ErrInNotArray, 40081},
	{expr.ErrSizeNotArray, 17124},
	{expr.ErrElemAtNotArray, 28689},
	{expr.ErrElemAtIndexType, 28690},
	{expr.ErrElemAtIndexInt, 28691},
	{expr.ErrConcatArraysType, 28664},
	{expr.ErrSliceNotArray, 28724},
	{expr.ErrSlicePosType, 28725},
	{expr.ErrSlicePosInt, 28726},
	{expr.ErrSliceNType, 28727},
	{expr.ErrSliceNInt, 28728},
	{expr.ErrSliceNPositive, 28729},
	{expr.ErrReverseArrayType, 34435},
	{expr.ErrArrayToObjectType, 40386},
	{expr.ErrObjectToArrayType, 40390},
	{expr.ErrSortArrayType, 2942504},
	{expr.ErrZipType, 34468},
	{expr.ErrFilterInput, 28651},
	{expr.ErrMapInput, 16883},
	{expr.ErrReduceInput, 40080},
	{expr.ErrFilterLimitInt, 327391},
	{expr.ErrFilterLimitPositive, 327392},
	{expr.ErrSplitInput, 40085},
	{expr.ErrSplitSeparator, 40086},
	{expr.ErrSplitEmpty, 40087},
	{expr.ErrConcatType, 16702},
	{expr.ErrToStringType, 16007},
	{expr.ErrStrLenCPType, 34471},
	{expr.ErrStrLenBytesType, 34473},
	{expr.ErrSubstrStartType, 16034},
	{expr.ErrSubstrLengthType, 16035},
	{expr.ErrSubstrStartContinuation, 28656},
	{expr.ErrSubstrEndMidChar, 28657},
	{expr.ErrSubstrCPStartType, 34450},
	{expr.ErrSubstrCPStartInt, 34451},
	{expr.ErrSubstrCPLengthType, 34452},
	{expr.ErrSubstrCPLengthInt, 34453},
	{expr.ErrSubstrCPLengthNegative, 34454},
	{expr.ErrSubstrCPStartNegative, 34455},
	{expr.ErrIndexOfArrayInput, 40090},
	{expr.ErrIndexOfBytesInput, 40091},
	{expr.ErrIndexOfBytesToken, 40092},
	{expr.ErrIndexOfCPInput, 40093},
	{expr.ErrIndexOfCPToken, 40094},
	{expr.ErrIndexOfIntegral, 40096},
	{expr.ErrIndexOfNegative, 40097},
	{expr.ErrTrimInput, 50699},
	{expr.ErrTrimChars, 50700},
	{expr.ErrRegexInput, 51104},
	{expr.ErrRegexPattern, 51105},
	{expr.ErrRegexOptions, 51106},
	{expr.ErrRegexOptionsTwice, 51107},
	{expr.ErrReplaceInput, 51746},
	{expr.ErrReplaceFind, 51745},
	{expr.ErrReplaceReplacement, 51744},
	{expr.ErrSetUnionType, 17043},
	{expr.ErrSetIntersectionType, 17047},
	{expr.ErrSetDifferenceFirst, 17048},
	{expr.ErrSetDifferenceSecond, 17049},
	{expr.ErrSetIsSubsetFirst, 17046},
	{expr.ErrSetIsSubsetSecond, 17042},
	{expr.ErrSetEqualsType, 17044},
	{expr.ErrSetEqualsArity, 17045},
	{expr.ErrAllElementsTrueType, 17040},
	{expr.ErrAnyElementTrueType, 17041},
	{expr.ErrRangedArity, 28667},
	{expr.ErrIfNullArity, 1257300},
	{expr.ErrSingleArgument, 50723},
	{agg.ErrMemoryLimit, ErrQueryMemoryLimit},
	{agg.ErrStageNotObject, ErrTypeMismatch},
	{agg.ErrStageFields, 40323},
	{agg.ErrUnknownStage, 40324},
	{agg.ErrMustBeLast, 40601},
	{agg.ErrMustBeFirst, 40602},
	{agg.ErrNotInFacet, 40600},
	{agg.ErrNotInLookup, 51047},
	{agg.ErrNotInUnionWith, 31441},
	{agg.ErrNeedsCollection, ErrInvalidNamespace},
	{agg.ErrGroupNoID, 15955},
	{agg.ErrUnknownAccumulator, 15952},
	{agg.ErrGroupFieldName, 40236},
	{agg.ErrAccumulatorObject, 40234},
	{agg.ErrAccumulatorOne, 40238},
	{agg.ErrAccumulatorUnary, 40237},
	{agg.ErrGroupNotObject, 15947},
	{agg.ErrLimitNotNumber, 15957},
	{agg.ErrLimitNotPositive, 15958},
	{agg.ErrSkipNotNumber, 15972},
	{agg.ErrSkipNegative, 15956},
	{agg.ErrSortNotObject, 15973},
	{agg.ErrSortEmpty, 15976},
	{agg.ErrProjectEmpty, 51272},
	{agg.ErrProjectNotObject, 15969},
	{agg.ErrInclusionInExclusion, errInclusionInExclusion},
	{agg.ErrExclusionInInclusion, errExclusionInInclusion},
	{agg.ErrExprInExclusion, 31252},
	{agg.ErrPathCollision, errPathCollision},
	{agg.ErrPathPrefixCollision, errPathCollisionPrefix},
	{agg.ErrEmptySubProjection, 51270},
	{agg.ErrAddFieldsNotObject, 40272},
	{agg.ErrUnsetSpec, 31002},
	{agg.ErrFieldPath, errFieldPathDollar},
	{agg.ErrNewRootNotObject, 40228},
	{agg.ErrReplaceRootSpec, 40231},
	{agg.ErrUnwindSpec, 15981},
	{agg.ErrUnwindPath, 28818},
	{agg.ErrCountSpec, 40156},
	{agg.ErrSampleSpec, 28745},
	{agg.ErrFacetSpec, 40169},
	{agg.ErrBucketSpec, 40198},
	{agg.ErrBucketAutoSpec, 40246},
	{agg.ErrRedactResult, 17053},
	{agg.ErrMergeNoMatch, 13113},
	{agg.ErrMergeOnFields, 51183},
	{agg.ErrDuplicateKey, ErrDuplicateKey},
	{agg.ErrOutSpec, 16990},
	{agg.ErrWindowSpec, ErrFailedToParse},
	{agg.ErrDocumentsSpec, 5858203},
	{agg.ErrLookupResultTooLarge, 4568},
	{agg.ErrGraphLookupSpec, 40105},
	{agg.ErrGraphLookupMemory, 40099},
	{agg.ErrInvalidNamespace, ErrInvalidNamespace},
	{agg.ErrIllegalOperation, ErrIllegalOperation},
	{update.ErrPathNotViable, ErrPathNotViable},
	{update.ErrConflictingOperators, ErrConflictingUpdateOperators},
	{update.ErrDollarPrefixedField, ErrDollarPrefixedFieldName},
	{update.ErrInvalidIDField, ErrInvalidIDField},
	{update.ErrNotSingleValueField, ErrNotSingleValueField},
	{update.ErrEmptyFieldName, ErrEmptyFieldName},
	{update.ErrImmutableField, ErrImmutableField},
	{update.ErrInvalidOptions, ErrInvalidOptions},
	{update.ErrUnsupported, ErrCommandNotSupported},
	{update.ErrInvalidPipelineUpdate, ErrInvalidOptions},
	{update.ErrUnknownStage, errUnknownStage},
	{update.ErrReplaceRootNotObject, errReplaceRootNotObject},
}

// languageCode is the code of the category err wraps, and that category.
func languageCode(err error) (Code, error, bool) {
	for _, m := range languageErrors {
		if errors.Is(err, m.category) {
			return m.code, m.category, true
		}
	}
	return 0, nil, false
}

// languageError turns an error of a language package into a CommandError
// with MongoDB's code and the message without the category prefix; other
// errors pass through.
func languageError(err error) error {
	if err == nil {
		return nil
	}
	if code, cat, ok := languageCode(err); ok {
		return errorf(code, "%s", langerr.Message(err, cat))
	}
	return err
}
