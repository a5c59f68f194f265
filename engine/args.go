package engine

import (
	"math"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TypeName is MongoDB's alias for a BSON type ("int", "objectId", ...).
func TypeName(t bsoncore.Type) string {
	if n := value.TypeAlias(t); n != "" {
		return n
	}
	return "unknown"
}

// genericFields are accepted by every command: drivers add them.
var genericFields = map[string]bool{
	"$db": true, "lsid": true, "txnNumber": true, "$clusterTime": true, "$readPreference": true,
	"apiVersion": true, "apiStrict": true, "apiDeprecationErrors": true, "readConcern": true,
	"writeConcern": true, "comment": true, "maxTimeMS": true, "autocommit": true,
	"startTransaction": true, "stmtId": true, "$audit": true, "$client": true,
	"mayBypassWriteBlocking": true, "$queryOptions": true, "$readPreferenceMode": true,
	"tracking_info": true, "$configServerState": true, "$topologyTime": true,
	"$configTime": true, "databaseVersion": true, "shardVersion": true, "clientOperationKey": true,
}

func wrongType(cmd, field string, v bsoncore.Value, expected string) *CommandError {
	return errorf(ErrTypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type '%s'", cmd, field, TypeName(v.Type), expected)
}

func wrongTypes(cmd, field string, v bsoncore.Value, expected string) *CommandError {
	return errorf(ErrTypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[%s]'", cmd, field, TypeName(v.Type), expected)
}

func unknownField(cmd, field string) *CommandError {
	return errorf(ErrUnknownField, "BSON field '%s.%s' is an unknown field.", cmd, field)
}

func missingField(cmd, field string) *CommandError {
	return errorf(ErrMissingField, "BSON field '%s.%s' is missing but a required field", cmd, field)
}

// isNumber reports whether v is int32, int64, double or decimal128.
func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// int64Arg reads a whole-number field of any numeric type.
func int64Arg(cmd, field string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	case bsoncore.TypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || math.IsNaN(f) || f > math.MaxInt64 || f < math.MinInt64 {
			return 0, errorf(ErrFailedToParse, "BSON field '%s.%s' has a non-integral value %v", cmd, field, f)
		}
		return int64(f), nil
	case bsoncore.TypeDecimal128:
		f := value.DecimalFloat(v)
		if f != math.Trunc(f) || math.IsNaN(f) {
			return 0, errorf(ErrFailedToParse, "BSON field '%s.%s' has a non-integral value", cmd, field)
		}
		return int64(f), nil
	}
	return 0, wrongTypes(cmd, field, v, "long, int, decimal, double")
}

// boolArg reads a flag the way MongoDB's IDL does: booleans and numbers
// (non-zero is true); null and undefined are false.
func boolArg(cmd, field string, v bsoncore.Value) (bool, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean(), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := numberFloat(v)
		return f != 0, nil
	case bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false, nil
	}
	return false, wrongTypes(cmd, field, v, "bool, long, int, decimal, double")
}

func stringArg(cmd, field string, v bsoncore.Value) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", wrongType(cmd, field, v, "string")
	}
	return s, nil
}

func docArg(cmd, field string, v bsoncore.Value) (bsoncore.Document, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, wrongType(cmd, field, v, "object")
	}
	return d, nil
}

// numberFloat converts any numeric value to float64.
func numberFloat(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32()), true
	case bsoncore.TypeInt64:
		return float64(v.Int64()), true
	case bsoncore.TypeDouble:
		return v.Double(), true
	case bsoncore.TypeDecimal128:
		return value.DecimalFloat(v), true
	}
	return 0, false
}
