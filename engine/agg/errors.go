package agg

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Error categories. Each names one situation MongoDB reports with its own
// code; the engine maps them (engine/queryerrors.go). Besides these, its
// errors wrap engine/langerr's shared categories (BadValue, TypeMismatch,
// FailedToParse, NotImplemented).
var (
	ErrInvalidNamespace = errors.New("invalid namespace")
	ErrIllegalOperation = errors.New("illegal operation")
	// ErrMemoryLimit: a blocking stage exceeded its memory limit without
	// allowDiskUse (QueryExceededMemoryLimitNoDiskUseAllowed).
	ErrMemoryLimit = errors.New("memory limit exceeded")

	ErrStageNotObject       = errors.New("stage is not an object")             // 14
	ErrStageFields          = errors.New("stage has not exactly one field")    // 40323
	ErrUnknownStage         = errors.New("unrecognized pipeline stage")        // 40324
	ErrMustBeLast           = errors.New("stage must be the last")             // 40601
	ErrMustBeFirst          = errors.New("stage must be the first")            // 40602
	ErrNotInFacet           = errors.New("stage not allowed in $facet")        // 40600
	ErrNotInLookup          = errors.New("stage not allowed in $lookup")       // 51047
	ErrNotInUnionWith       = errors.New("stage not allowed in $unionWith")    // 31441
	ErrNeedsCollection      = errors.New("stage needs a collection")           // 73 (InvalidNamespace)
	ErrGroupNoID            = errors.New("$group without _id")                 // 15955
	ErrUnknownAccumulator   = errors.New("unknown group operator")             // 15952
	ErrGroupFieldName       = errors.New("bad $group field name")              // 40236
	ErrAccumulatorObject    = errors.New("accumulator is not an object")       // 40234
	ErrAccumulatorOne       = errors.New("not exactly one accumulator")        // 40238
	ErrAccumulatorUnary     = errors.New("unary accumulator given an array")   // 40237
	ErrGroupNotObject       = errors.New("$group spec is not an object")       // 15947
	ErrLimitNotNumber       = errors.New("$limit is not a number")             // 15957
	ErrLimitNotPositive     = errors.New("$limit is not positive")             // 15958
	ErrSkipNotNumber        = errors.New("$skip is not a number")              // 15972
	ErrSkipNegative         = errors.New("$skip is negative")                  // 15956
	ErrSortNotObject        = errors.New("$sort is not an object")             // 15973
	ErrSortEmpty            = errors.New("$sort has no keys")                  // 15976
	ErrProjectEmpty         = errors.New("empty projection")                   // 51272
	ErrProjectNotObject     = errors.New("$project is not an object")          // 15969
	ErrInclusionInExclusion = errors.New("inclusion in exclusion projection")  // 31253
	ErrExclusionInInclusion = errors.New("exclusion in inclusion projection")  // 31254
	ErrExprInExclusion      = errors.New("expression in exclusion projection") // 31252
	ErrPathCollision        = errors.New("projection path collision")          // 31249
	ErrPathPrefixCollision  = errors.New("projection path prefix collision")   // 31250
	ErrEmptySubProjection   = errors.New("empty sub-projection")               // 51270
	ErrAddFieldsNotObject   = errors.New("$addFields is not an object")        // 40272
	ErrUnsetSpec            = errors.New("bad $unset")                         // 31002
	ErrFieldPath            = errors.New("bad field path")                     // 16410 / 40352
	ErrNewRootNotObject     = errors.New("newRoot is not an object")           // 40228
	ErrReplaceRootSpec      = errors.New("bad $replaceRoot")                   // 40231 / 40415
	ErrUnwindSpec           = errors.New("bad $unwind")                        // 15981 / 28808 / 28809 / 28811
	ErrUnwindPath           = errors.New("$unwind path without $")             // 28818
	ErrCountSpec            = errors.New("bad $count")                         // 40156 / 40157 / 40158 / 40160
	ErrSampleSpec           = errors.New("bad $sample")                        // 28745 / 28746 / 28747 / 28748 / 28749
	ErrFacetSpec            = errors.New("bad $facet")                         // 40169 / 40170 / 40171
	ErrBucketSpec           = errors.New("bad $bucket")                        // 40192 .. 40202
	ErrBucketAutoSpec       = errors.New("bad $bucketAuto")                    // 40237 .. 40261
	ErrRedactResult         = errors.New("bad $redact result")                 // 17053
	ErrMergeNoMatch         = errors.New("$merge found no matching document")  // 13113
	ErrMergeOnFields        = errors.New("$merge on fields without a unique index")
	ErrDuplicateKey         = errors.New("duplicate key")             // 11000
	ErrOutSpec              = errors.New("bad $out or $merge target") // 16990 / 13111
	ErrWindowSpec           = errors.New("bad $setWindowFields")      // 5371601 / 5397900 ...
	ErrDocumentsSpec        = errors.New("bad $documents")            // 5858203
	ErrLookupResultTooLarge = errors.New("$lookup result too large")  // 4568
	ErrGraphLookupSpec      = errors.New("bad $graphLookup")          // 40105 ..
	ErrGraphLookupMemory    = errors.New("$graphLookup exceeded memory")
)

// DuplicateKeyError is a $merge write that met an existing document: the
// key pattern and value name it, as in MongoDB's reply.
type DuplicateKeyError struct {
	Msg                  string
	KeyPattern, KeyValue bsoncore.Document
}

func (e *DuplicateKeyError) Error() string { return ErrDuplicateKey.Error() + ": " + e.Msg }

// Unwrap makes a DuplicateKeyError an ErrDuplicateKey.
func (e *DuplicateKeyError) Unwrap() error { return ErrDuplicateKey }
