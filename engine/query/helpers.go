package query

import (
	"math"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func isNumberType(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// wholeNumber reads a number that must be integral and fit an int64.
func wholeNumber(what string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := value.Float(v)
		if math.IsNaN(f) {
			return 0, langerr.New(langerr.ErrFailedToParse, "Expected an integer, but found NaN in: %s: %s", what, value.Render(v))
		}
		if f != math.Trunc(f) {
			return 0, langerr.New(langerr.ErrFailedToParse, "Expected an integer: %s: %s", what, value.Render(v))
		}
		if f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
			return 0, langerr.New(langerr.ErrFailedToParse, "Cannot represent as a 64-bit integer: %s: %s", what, value.Render(v))
		}
		return int64(f), nil
	}
	return 0, langerr.New(langerr.ErrFailedToParse, "Expected a number in: %s: %s", what, value.Render(v))
}

// truthy is BSONElement::trueValue: false, 0, null, undefined and missing
// are false; everything else is true.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case missing, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return value.Float(v) != 0 || isNaN(v)
	}
	return true
}
