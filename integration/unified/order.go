package unified

import (
	"bytes"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sortByID orders documents by _id in BSON comparison order.
func sortByID(docs []bson.Raw) []bson.Raw {
	out := slices.Clone(docs)
	slices.SortStableFunc(out, func(a, b bson.Raw) int {
		return compareValues(a.Lookup("_id"), b.Lookup("_id"))
	})
	return out
}

// typeRank is MongoDB's order of BSON types (numbers together).
func typeRank(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 1
	case 0, bson.TypeUndefined, bson.TypeNull:
		return 2
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return 3
	case bson.TypeString, bson.TypeSymbol:
		return 4
	case bson.TypeEmbeddedDocument:
		return 5
	case bson.TypeArray:
		return 6
	case bson.TypeBinary:
		return 7
	case bson.TypeObjectID:
		return 8
	case bson.TypeBoolean:
		return 9
	case bson.TypeDateTime:
		return 10
	case bson.TypeTimestamp:
		return 11
	case bson.TypeRegex:
		return 12
	case bson.TypeMaxKey:
		return 100
	}
	return 50
}

// compareValues is good enough for ordering _id values: numbers
// numerically, strings bytewise, documents and the rest by their bytes.
func compareValues(a, b bson.RawValue) int {
	if ra, rb := typeRank(a.Type), typeRank(b.Type); ra != rb {
		return ra - rb
	}
	switch {
	case isNumber(a.Type) && isNumber(b.Type):
		return compareNumbers(a, b)
	case a.Type == bson.TypeString && b.Type == bson.TypeString:
		return bytes.Compare([]byte(a.StringValue()), []byte(b.StringValue()))
	case a.Type == bson.TypeDateTime:
		x, y := a.DateTime(), b.DateTime()
		if x < y {
			return -1
		} else if x > y {
			return 1
		}
		return 0
	}
	return bytes.Compare(a.Value, b.Value)
}
