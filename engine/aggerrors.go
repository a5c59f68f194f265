package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/agg"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// aggErrors maps engine/agg's error categories to MongoDB codes; the
// Location ones have no codeName but "Location<code>".
var aggErrors = []struct {
	category error
	code     Code
}{
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
	{agg.ErrBadValue, ErrBadValue},
	{agg.ErrFailedToParse, ErrFailedToParse},
	{agg.ErrTypeMismatch, ErrTypeMismatch},
	{agg.ErrNotImplemented, ErrNotImplemented},
	{agg.ErrInvalidNamespace, ErrInvalidNamespace},
	{agg.ErrIllegalOperation, ErrIllegalOperation},
}

// aggError turns an error of a pipeline (engine/agg, or the language
// packages under it) into a CommandError; others pass through.
func aggError(err error) error {
	if err == nil {
		return nil
	}
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce
	}
	for _, m := range aggErrors {
		if errors.Is(err, m.category) {
			ce := errorf(m.code, "%s", trimPrefix(err.Error(), m.category.Error()+": "))
			if dup, ok := errors.AsType[*agg.DuplicateKeyError](err); ok {
				ce.Extra = duplicateKeyFields(bson.Raw(dup.KeyPattern), bson.Raw(dup.KeyValue))
			}
			return ce
		}
	}
	return languageError(err)
}
