package update

import (
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// typeName is MongoDB's alias for a BSON type.
func typeName(t bsoncore.Type) string {
	if n := value.TypeAlias(t); n != "" {
		return n
	}
	return "missing" // type 0: the field is absent
}
