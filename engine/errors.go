package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/agg"
	"github.com/parsecdb/parsec/engine/kv"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Code is a MongoDB error code. This file is the one table of them: every
// code Parsec answers is declared here, and codeNames gives MongoDB's
// codeName of those that have one (the others are Location<code>).
type Code int32

// MongoDB error codes Parsec uses, with the codeName MongoDB gives each.
const (
	ErrInternalError             Code = 1
	ErrBadValue                  Code = 2
	ErrNoSuchKey                 Code = 4
	ErrFailedToParse             Code = 9
	ErrUnauthorized              Code = 13
	ErrUserNotFound              Code = 11
	ErrProtocolError             Code = 17
	ErrAuthenticationFailed      Code = 18
	ErrRoleNotFound              Code = 31
	ErrMechanismUnavailable      Code = 334
	ErrNoReplicationEnabled      Code = 76
	ErrUnknownReplWriteConcern   Code = 79
	ErrUnsatisfiableWriteConcern Code = 100
	ErrSnapshotTooOld            Code = 239
	ErrSnapshotUnavailable       Code = 246
	// ErrUserExists is createUser's "already exists" (codeName Location51003).
	ErrUserExists              Code = 51003
	ErrTypeMismatch            Code = 14
	ErrIllegalOperation        Code = 20
	ErrNamespaceNotFound       Code = 26
	ErrIndexNotFound           Code = 27
	ErrCursorNotFound          Code = 43
	ErrCursorInUse             Code = 143
	ErrCappedPositionLost      Code = 136
	ErrNamespaceExists         Code = 48
	ErrMaxTimeMSExpired        Code = 50
	ErrCommandNotFound         Code = 59
	ErrShardKeyNotFound        Code = 61
	ErrImmutableField          Code = 66
	ErrInvalidOptions          Code = 72
	ErrInvalidNamespace        Code = 73
	ErrNotImplemented          Code = 238
	ErrWriteConflict           Code = 112
	ErrCommandNotSupported     Code = 115
	ErrExceededTimeLimit       Code = 262
	ErrInterrupted             Code = 11601
	ErrDuplicateKey            Code = 11000
	ErrBSONObjectTooLarge      Code = 10334
	ErrTooManyRequests         Code = 16500
	ErrUnknownField            Code = 40415
	ErrMissingField            Code = 40414
	ErrInvalidIDField          Code = 53
	ErrInvalidLength           Code = 16
	ErrOperationFailed         Code = 96
	ErrInvalidPipelineOperator Code = 168

	// ErrKeyTooLong refuses a write whose storage key would pass Badger's
	// 65,000-byte limit. MongoDB 4.2 and later store index keys of any
	// length (keys of cut values fit, value.MaxKeyLen, so this is a last
	// resort); 17280 KeyTooLong is the code MongoDB gave an index key too
	// long to store before that, the closest it has.
	ErrKeyTooLong Code = 17280

	// collMod's conversion of an index to unique.
	ErrCannotConvertIndexToUnique Code = 359

	// Document validation (validation.go): a document the collection's
	// validator refuses, and validators using what they may not.
	ErrDocumentValidationFailure Code = 121
	ErrQueryFeatureNotAllowed    Code = 224
	errFunctionInValidator       Code = 4660800
	errJsEmitInValidator         Code = 4660801

	// Update errors (engine/update).
	ErrPathNotViable              Code = 28
	ErrConflictingUpdateOperators Code = 40
	ErrDollarPrefixedFieldName    Code = 52
	ErrNotSingleValueField        Code = 54
	ErrEmptyFieldName             Code = 56

	// Partitioning. A write into a full logical partition gets
	// OutOfDiskSpace: Cosmos DB answers HTTP 403 substatus 1014, which has
	// no MongoDB code, and this is MongoDB's code for storage running out,
	// which a write refused for want of free disk space gets too
	// (diskfull.go).
	ErrOutOfDiskSpace                 Code = 14031
	ErrAlreadyInitialized             Code = 23
	ErrConflictingOperationInProgress Code = 117
	// ErrShardNotFound: removeShard of a shard that is not one.
	ErrShardNotFound Code = 70
	// ErrInterruptedDueToReplStateChange: a cluster's write whose commit
	// outcome was lost in a leader change (retryable).
	ErrInterruptedDueToReplStateChange Code = 11602

	// ErrValueNegative is the IDL's "value must be >= 0" check (codeName Location51024).
	ErrValueNegative Code = 51024

	// Request limits (genericargs.go). A duplicate field is the IDL's
	// 40413 (Location40413), too many sort keys Ordering's 13103.
	ErrUnsupportedOpQueryCommand Code = 352
	ErrDuplicateField            Code = 40413
	ErrTooManyCompoundKeys       Code = 13103

	// The Stable API's parameters (apiversion.go).
	ErrAPIVersionError     Code = 322
	ErrAPIStrictError      Code = 323
	ErrAPIDeprecationError Code = 324

	ErrClientMetadataCannotBeMutated Code = 186

	// A cluster node that is not the writer (standby.go).
	ErrNotWritablePrimary      Code = 10107
	ErrNotPrimaryNoSecondaryOk Code = 13435
)

// Index errors.
const (
	ErrCannotCreateIndex               Code = 67
	ErrIndexOptionsConflict            Code = 85
	ErrIndexKeySpecsConflict           Code = 86
	ErrCannotIndexParallelArrays       Code = 171
	ErrInvalidIndexSpecificationOption Code = 197
	ErrIndexAlreadyExists              Code = 68
	ErrCannotDropShardKeyIndex         Code = 370
)

// Codes of transactions.
const (
	ErrOperationNotSupportedInTransaction Code = 263
	ErrNoSuchTransaction                  Code = 251
	ErrTransactionCommitted               Code = 256
	ErrTransactionTooLarge                Code = 257
	ErrLockTimeout                        Code = 24
)

// Codes of retryable writes.
const (
	ErrIncompleteTransactionHistory Code = 217
	ErrTransactionTooOld            Code = 225
	errNotARetryableWriteCommand    Code = 50768
	errInvalidUUID                  Code = 207 // lsid.id is not a UUID
	// findAndModify retried with other options than the statement it
	// repeats had (MongoDB's validateFindAndModifyRetryability).
	errRetryNotRemove Code = 40606
	errRetryNotUpsert Code = 40608
	errRetryNotUpdate Code = 40609
	errRetryWantsPost Code = 40611
	errRetryWantsPre  Code = 40612
)

// Codes of change streams (changestreams.go).
const (
	ErrNoMatchingDocument      Code = 47
	ErrInvalidResumeToken      Code = 260
	ErrChangeStreamFatal       Code = 280
	ErrChangeStreamHistoryLost Code = 286
	errChangeStreamNotFirst    Code = 40602 // $changeStream later in a pipeline
	errBothResumeOptions       Code = 50865 // resumeAfter and startAfter
	errManyResumeOptions       Code = 40674 // a token and startAtOperationTime
)

// Codes of views (views.go).
const (
	ErrGraphContainsCycle        Code = 5
	ErrViewDepthLimitExceeded    Code = 149
	ErrCommandNotSupportedOnView Code = 166
	ErrOptionNotSupportedOnView  Code = 167
)

// ErrIncompatibleCollationVersion: a collation asks for another version
// than Parsec's (collation.go).
const ErrIncompatibleCollationVersion Code = 161

// Assertions of updates and pipelines that have no codeName but Location<code>.
const (
	ErrDocumentTooLarge     Code = 17419 // an update made a document too large
	errUnknownStage         Code = 40324 // unrecognized pipeline stage name
	errReplaceRootNotObject Code = 40228 // $replaceRoot/$replaceWith gave no document
	errConstantsNotPipeline Code = 51198 // update statement constants (c) without a pipeline
)

// Codes of the find language (query, projection, sort, expressions);
// the Location ones have no codeName in MongoDB other than
// "Location<code>" (queryerrors.go maps the languages' errors to them).
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

var codeNames = map[Code]string{
	ErrInternalError:             "InternalError",
	ErrBadValue:                  "BadValue",
	ErrNoSuchKey:                 "NoSuchKey",
	ErrFailedToParse:             "FailedToParse",
	ErrUnauthorized:              "Unauthorized",
	ErrUserNotFound:              "UserNotFound",
	ErrProtocolError:             "ProtocolError",
	ErrAuthenticationFailed:      "AuthenticationFailed",
	ErrRoleNotFound:              "RoleNotFound",
	ErrMechanismUnavailable:      "MechanismUnavailable",
	ErrNoReplicationEnabled:      "NoReplicationEnabled",
	ErrUnknownReplWriteConcern:   "UnknownReplWriteConcern",
	ErrUnsatisfiableWriteConcern: "UnsatisfiableWriteConcern",
	ErrSnapshotTooOld:            "SnapshotTooOld",
	ErrSnapshotUnavailable:       "SnapshotUnavailable",
	ErrTypeMismatch:              "TypeMismatch",
	ErrIllegalOperation:          "IllegalOperation",
	ErrNamespaceNotFound:         "NamespaceNotFound",
	ErrIndexNotFound:             "IndexNotFound",
	ErrCursorNotFound:            "CursorNotFound",
	ErrCursorInUse:               "CursorInUse",
	ErrNamespaceExists:           "NamespaceExists",
	ErrMaxTimeMSExpired:          "MaxTimeMSExpired",
	ErrCommandNotFound:           "CommandNotFound",
	ErrShardKeyNotFound:          "ShardKeyNotFound",
	ErrImmutableField:            "ImmutableField",
	ErrInvalidOptions:            "InvalidOptions",
	ErrCappedPositionLost:        "CappedPositionLost",
	ErrInvalidNamespace:          "InvalidNamespace",
	ErrNotImplemented:            "NotImplemented",
	ErrWriteConflict:             "WriteConflict",
	ErrCommandNotSupported:       "CommandNotSupported",
	ErrExceededTimeLimit:         "ExceededTimeLimit",
	ErrInterrupted:               "Interrupted",
	ErrDuplicateKey:              "DuplicateKey",
	ErrBSONObjectTooLarge:        "BSONObjectTooLarge",
	ErrTooManyRequests:           "TooManyRequests",
	ErrInvalidIDField:            "InvalidIdField",
	ErrInvalidLength:             "InvalidLength",
	ErrOperationFailed:           "OperationFailed",
	ErrInvalidPipelineOperator:   "InvalidPipelineOperator",
	ErrNoMatchingDocument:        "NoMatchingDocument",
	ErrInvalidResumeToken:        "InvalidResumeToken",
	ErrNoQueryExecutionPlans:     "NoQueryExecutionPlans",
	ErrConversionFailure:         "ConversionFailure",
	ErrQueryMemoryLimit:          "QueryExceededMemoryLimitNoDiskUseAllowed",

	ErrOutOfDiskSpace:                 "OutOfDiskSpace",
	ErrAlreadyInitialized:             "AlreadyInitialized",
	ErrConflictingOperationInProgress: "ConflictingOperationInProgress",
	ErrShardNotFound:                  "ShardNotFound",
	ErrCannotConvertIndexToUnique:     "CannotConvertIndexToUnique",
	ErrDocumentValidationFailure:      "DocumentValidationFailure",
	ErrQueryFeatureNotAllowed:         "QueryFeatureNotAllowed",
	ErrKeyTooLong:                     "KeyTooLong",

	ErrPathNotViable:              "PathNotViable",
	ErrConflictingUpdateOperators: "ConflictingUpdateOperators",
	ErrDollarPrefixedFieldName:    "DollarPrefixedFieldName",
	ErrNotSingleValueField:        "NotSingleValueField",
	ErrEmptyFieldName:             "EmptyFieldName",

	ErrUnsupportedOpQueryCommand: "UnsupportedOpQueryCommand",

	ErrAPIVersionError:     "APIVersionError",
	ErrAPIStrictError:      "APIStrictError",
	ErrAPIDeprecationError: "APIDeprecationError",

	ErrClientMetadataCannotBeMutated: "ClientMetadataCannotBeMutated",

	ErrNotWritablePrimary:      "NotWritablePrimary",
	ErrNotPrimaryNoSecondaryOk: "NotPrimaryNoSecondaryOk",

	ErrCannotCreateIndex:               "CannotCreateIndex",
	ErrIndexOptionsConflict:            "IndexOptionsConflict",
	ErrIndexKeySpecsConflict:           "IndexKeySpecsConflict",
	ErrCannotIndexParallelArrays:       "CannotIndexParallelArrays",
	ErrInvalidIndexSpecificationOption: "InvalidIndexSpecificationOption",
	ErrIndexAlreadyExists:              "IndexAlreadyExists",
	ErrCannotDropShardKeyIndex:         "CannotDropShardKeyIndex",

	ErrOperationNotSupportedInTransaction: "OperationNotSupportedInTransaction",
	ErrNoSuchTransaction:                  "NoSuchTransaction",
	ErrTransactionCommitted:               "TransactionCommitted",
	ErrTransactionTooLarge:                "TransactionTooLarge",
	ErrLockTimeout:                        "LockTimeout",

	ErrGraphContainsCycle:        "GraphContainsCycle",
	ErrViewDepthLimitExceeded:    "ViewDepthLimitExceeded",
	ErrCommandNotSupportedOnView: "CommandNotSupportedOnView",
	ErrOptionNotSupportedOnView:  "OptionNotSupportedOnView",

	ErrIncompatibleCollationVersion: "IncompatibleCollationVersion",
}

// Name is the codeName MongoDB reports for c.
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	if n, ok := injectedCodeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Location%d", int32(c))
}

// injectedCodeNames name the codes Parsec never produces itself but a
// failCommand fail point may make a command fail with (the drivers'
// specification tests inject them: network, shutdown and replica-set
// state errors), with the codeName MongoDB gives each.
var injectedCodeNames = map[Code]string{
	6:     "HostUnreachable",
	7:     "HostNotFound",
	64:    "WriteConcernFailed",
	89:    "NetworkTimeout",
	91:    "ShutdownInProgress",
	133:   "FailedToSatisfyReadPreference",
	189:   "PrimarySteppedDown",
	234:   "RetryChangeStream",
	237:   "CursorKilled",
	280:   "ChangeStreamFatalError",
	286:   "ChangeStreamHistoryLost",
	9001:  "SocketException",
	10058: "LegacyNotPrimary",
	11600: "InterruptedAtShutdown",
	11602: "InterruptedDueToReplStateChange",
	13436: "NotPrimaryOrSecondary",
}

// CommandError is the one error type commands return to clients.
type CommandError struct {
	Code Code
	Msg  string
	// Name overrides the code's codeName: Cosmos DB answers code 50 as
	// ExceededTimeLimit where MongoDB says MaxTimeMSExpired.
	Name string
	// Extra are fields the reply carries after codeName (a duplicate
	// key's keyPattern and keyValue).
	Extra bson.D
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.codeName(), e.Code, e.Msg)
}

// codeName is the codeName the client sees.
func (e *CommandError) codeName() string {
	if e.Name != "" {
		return e.Name
	}
	return e.Code.Name()
}

// errorf makes a CommandError.
func errorf(code Code, format string, args ...any) *CommandError {
	return &CommandError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// BadValue is a 2 BadValue error for the client, for code outside the
// engine that serves a command (a cluster node's membership changes).
func BadValue(format string, args ...any) error {
	return errorf(ErrBadValue, format, args...)
}

// ShardNotFound, ConflictingOperation and IllegalOperation are
// MongoDB's errors for a cluster's balancer's commands (removeShard).
func ShardNotFound(format string, args ...any) error {
	return errorf(ErrShardNotFound, format, args...)
}

func ConflictingOperation(format string, args ...any) error {
	return errorf(ErrConflictingOperationInProgress, format, args...)
}

func IllegalOperation(format string, args ...any) error {
	return errorf(ErrIllegalOperation, format, args...)
}

// toCommandError turns any error into what the client sees: command errors
// pass through, storage errors map to their codes, anything else is an
// InternalError.
func toCommandError(err error) *CommandError {
	var ce *CommandError
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, store.ErrParallelArrays):
		return errorf(ErrCannotIndexParallelArrays, "cannot index parallel arrays")
	case isIndexDup(err):
		var dup *store.DuplicateKeyError
		errors.As(err, &dup)
		ce := errorf(ErrDuplicateKey, "%s", indexDupMessage(dup))
		ce.Extra = duplicateKeyFields(dup.KeyPattern, dup.KeyValue)
		return ce
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(ErrMaxTimeMSExpired, "operation exceeded time limit")
	case errors.Is(err, context.Canceled):
		return errorf(ErrInterrupted, "operation was interrupted")
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrCollectionChanged):
		return errorf(ErrWriteConflict, "%v", err)
	case errors.Is(err, store.ErrLockTimeout):
		return errorf(ErrLockTimeout, "Unable to acquire a lock on the collection within the transaction's lock timeout: a catalog change of it is waiting or running")
	case errors.Is(err, store.ErrTransactionEnded):
		return errorf(ErrNoSuchTransaction, "the transaction has ended (committed, aborted, or past its lifetime limit)")
	case errors.Is(err, store.ErrTooLarge), errors.Is(err, store.ErrValueTooLarge):
		return errorf(ErrBSONObjectTooLarge, "%v", err)
	case errors.Is(err, store.ErrKeyTooLarge):
		return errorf(ErrKeyTooLong, "%v", err)
	case errors.Is(err, store.ErrClosed):
		return errorf(ErrInterrupted, "server is shutting down")
	case errors.Is(err, kv.ErrUnknownOutcome):
		return errorf(ErrInterruptedDueToReplStateChange, "the write's partition changed leader while it was being committed, so its outcome is unknown (a retryable write is retried and applies once): %v", err)
	case errors.As(err, new(*agg.PanicError)):
		return errorf(ErrInternalError, "internal error while running the request on a partition; the server log has the details")
	case errors.Is(err, store.ErrDiskFull):
		return diskFullError(err)
	case errors.As(err, new(*store.CappedInTransactionError)):
		var cte *store.CappedInTransactionError
		errors.As(err, &cte)
		return errorf(ErrOperationNotSupportedInTransaction, "Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", cte.Namespace)
	case errors.As(err, new(*store.PartitionScopeError)):
		return errorf(ErrOperationNotSupportedInTransaction, "%v (a cluster commits each physical partition through its own replicas: keep a transaction to one logical partition of a sharded collection, or to one unsharded collection)", err)
	case errors.Is(err, store.ErrCappedDocTooLarge):
		return errorf(ErrBadValue, "object to insert exceeds cappedMaxSize")
	case errors.Is(err, store.ErrLogicalPartitionFull):
		var lpf *store.LogicalPartitionFullError
		errors.As(err, &lpf)
		return errorf(ErrOutOfDiskSpace, "Partition key reached maximum size of %s", humanBytes(lpf.Limit))
	}
	return errorf(ErrInternalError, "%v", err)
}

// duplicateKeyFields are the fields a DuplicateKey error carries after
// codeName: the index's key pattern and the key that collided.
func duplicateKeyFields(keyPattern, keyValue any) bson.D {
	return bson.D{{Key: "keyPattern", Value: keyPattern}, {Key: "keyValue", Value: keyValue}}
}
