package engine

import (
	"errors"

	"github.com/parsecdb/parsec/engine/agg"
	"go.mongodb.org/mongo-driver/v2/bson"
)

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
	out := languageError(err)
	if ce, ok := out.(*CommandError); ok {
		if dup, ok := errors.AsType[*agg.DuplicateKeyError](err); ok {
			ce.Extra = duplicateKeyFields(bson.Raw(dup.KeyPattern), bson.Raw(dup.KeyValue))
		}
	}
	return out
}
