package value

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// typeAliases are MongoDB's names of BSON types, as $type and the
// aggregation $type operator use them.
var typeAliases = map[bsoncore.Type]string{
	bsoncore.TypeDouble:           "double",
	bsoncore.TypeString:           "string",
	bsoncore.TypeEmbeddedDocument: "object",
	bsoncore.TypeArray:            "array",
	bsoncore.TypeBinary:           "binData",
	bsoncore.TypeUndefined:        "undefined",
	bsoncore.TypeObjectID:         "objectId",
	bsoncore.TypeBoolean:          "bool",
	bsoncore.TypeDateTime:         "date",
	bsoncore.TypeNull:             "null",
	bsoncore.TypeRegex:            "regex",
	bsoncore.TypeDBPointer:        "dbPointer",
	bsoncore.TypeJavaScript:       "javascript",
	bsoncore.TypeSymbol:           "symbol",
	bsoncore.TypeCodeWithScope:    "javascriptWithScope",
	bsoncore.TypeInt32:            "int",
	bsoncore.TypeTimestamp:        "timestamp",
	bsoncore.TypeInt64:            "long",
	bsoncore.TypeDecimal128:       "decimal",
	bsoncore.TypeMinKey:           "minKey",
	bsoncore.TypeMaxKey:           "maxKey",
}

var typesByAlias = func() map[string]bsoncore.Type {
	m := make(map[string]bsoncore.Type, len(typeAliases))
	for t, n := range typeAliases {
		m[n] = t
	}
	return m
}()

// TypeAlias is MongoDB's name for t ("int", "objectId", ...), or "" for
// a type byte BSON does not define.
func TypeAlias(t bsoncore.Type) string { return typeAliases[t] }

// TypeByAlias is the type MongoDB calls name; "number" is not one type
// and is not found here.
func TypeByAlias(name string) (bsoncore.Type, bool) {
	t, ok := typesByAlias[name]
	return t, ok
}

// TypeByCode is the type with BSON type code n (-1 is MinKey, 127
// MaxKey), if BSON defines one.
func TypeByCode(n int64) (bsoncore.Type, bool) {
	switch {
	case n == -1:
		return bsoncore.TypeMinKey, true
	case n == 127:
		return bsoncore.TypeMaxKey, true
	case n >= 1 && n <= 19:
		return bsoncore.Type(n), true
	}
	return 0, false
}
