package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Index specifications as createIndexes receives them, and as listIndexes
// shows them.

const idIndexName = "_id_"

// indexSpec is one validated index of a createIndexes command.
type indexSpec struct {
	ix   store.Index
	spec bson.Raw // as listIndexes will show it
}

// Index types MongoDB has that Parsec does not build (yet).
var unsupportedIndexTypes = map[string]string{
	"text":            "text",
	"2d":              "2d",
	"2dsphere":        "2dsphere",
	"2dsphere_bucket": "2dsphere",
	"geoHaystack":     "geoHaystack",
	"hashed":          "hashed",
	"columnstore":     "columnstore",
}

// parseIndexSpec validates one element of createIndexes' indexes array.
func parseIndexSpec(raw bsoncore.Document, c *store.Collection) (indexSpec, error) {
	var is indexSpec
	var key bsoncore.Document
	hasKey := false
	spec := bson.D{{Key: "v", Value: int32(2)}}
	var opts bson.D
	collationGiven := false
	elems, err := raw.Elements()
	if err != nil {
		return is, errorf(ErrFailedToParse, "invalid index specification: %v", err)
	}
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "key":
			d, ok := v.DocumentOK()
			if !ok {
				return is, errorf(ErrTypeMismatch, "The field 'key' must be an object, but got %s", TypeName(v.Type))
			}
			key, hasKey = d, true
		case "name":
			s, ok := v.StringValueOK()
			if !ok {
				return is, errorf(ErrTypeMismatch, "The field 'name' must be a string, but got %s", TypeName(v.Type))
			}
			is.ix.Name = s
		case "v":
			n, ok := numberFloat(v)
			if !ok || (n != 1 && n != 2) {
				return is, errorf(ErrCannotCreateIndex, "Invalid index specification %s; cannot create an index with v=%s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}), shellString(v))
			}
		case "unique", "sparse", "hidden", "background":
			b, ok := boolish(v)
			if !ok {
				return is, errorf(ErrTypeMismatch, "The field '%s' must be a boolean, but got %s", k, TypeName(v.Type))
			}
			switch k {
			case "unique":
				is.ix.Unique = b
			case "sparse":
				is.ix.Sparse = b
			case "hidden":
				is.ix.Hidden = b
			}
			if k != "background" && b {
				opts = append(opts, bson.E{Key: k, Value: true})
			}
		case "expireAfterSeconds":
			if !isNumber(v) {
				return is, errorf(ErrCannotCreateIndex, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'. Index spec: %s", TypeName(v.Type), shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}))
			}
			f, _ := numberFloat(v)
			if math.IsNaN(f) || f < 0 || f > math.MaxInt32 {
				return is, errorf(ErrCannotCreateIndex, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number. Index spec: %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}))
			}
			n := int64(f)
			is.ix.ExpireAfterSeconds = &n
			opts = append(opts, bson.E{Key: k, Value: int32(n)})
		case "partialFilterExpression":
			d, ok := v.DocumentOK()
			if !ok {
				return is, errorf(ErrTypeMismatch, "The field 'partialFilterExpression' must be an object, but got %s", TypeName(v.Type))
			}
			if _, err := query.Compile(d); err != nil {
				return is, errorf(ErrCannotCreateIndex, "Error in specification %s :: caused by :: %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}), toCommandError(queryError(err)).Msg)
			}
			is.ix.Partial = bson.Raw(append([]byte(nil), d...))
			opts = append(opts, bson.E{Key: k, Value: bson.Raw(d)})
		case "collation":
			d, ok := v.DocumentOK()
			if !ok {
				return is, errorf(ErrTypeMismatch, "The field 'collation' must be an object, but got %s", TypeName(v.Type))
			}
			coll, err := parseCollation(d)
			if err != nil {
				return is, err
			}
			collationGiven = true
			if coll != nil {
				is.ix.Collation = bson.Raw(coll.Spec().Document())
				opts = append(opts, bson.E{Key: k, Value: is.ix.Collation})
			}
		case "wildcardProjection", "weights", "default_language", "language_override", "textIndexVersion",
			"2dsphereIndexVersion", "bits", "min", "max", "bucketSize", "storageEngine", "columnstoreProjection":
			return is, errorf(ErrCannotCreateIndex, "Parsec does not support the index option '%s'", k)
		case "ns", "dropDups":
			// accepted and ignored, as MongoDB does for old clients
		default:
			return is, errorf(ErrInvalidIndexSpecificationOption, "The field '%s' is not valid for an index specification. Specification: %s", k, shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}))
		}
	}
	if !hasKey {
		return is, errorf(ErrFailedToParse, "The 'key' field is a required property of an index specification")
	}
	keyElems, _ := key.Elements()
	if len(keyElems) == 0 {
		return is, errorf(ErrCannotCreateIndex, "Index keys cannot be empty.")
	}
	if len(keyElems) > 32 {
		return is, errorf(ErrCannotCreateIndex, "Index key pattern %s has more than 32 fields", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}))
	}
	var nameParts []string
	wildcard := false
	for _, el := range keyElems {
		f, v := el.Key(), el.Value()
		if f == "" {
			return is, errorf(ErrCannotCreateIndex, "Index keys cannot be an empty field.")
		}
		if s, ok := v.StringValueOK(); ok {
			if kind, known := unsupportedIndexTypes[s]; known {
				return is, errorf(ErrCannotCreateIndex, "Parsec does not support %s indexes yet: cannot create index %s", kind, shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}))
			}
			return is, errorf(ErrCannotCreateIndex, "Error in specification %s :: caused by :: Unknown index plugin '%s'", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}), s)
		}
		n, ok := numberFloat(v)
		if !ok || n == 0 || math.IsNaN(n) {
			return is, errorf(ErrCannotCreateIndex, "Error in specification %s :: caused by :: Values in the index key pattern can only be numbers greater than zero, numbers less than zero, or strings; found %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}), shellString(v))
		}
		if f == "$**" || strings.HasSuffix(f, ".$**") {
			if len(keyElems) > 1 {
				return is, errorf(ErrCannotCreateIndex, "wildcard indexes do not allow compounding with other fields in Parsec")
			}
			if n < 0 {
				return is, errorf(ErrCannotCreateIndex, "A numeric value in a $** index key pattern must be positive.")
			}
			wildcard = true
		} else if strings.HasPrefix(f, "$") || strings.Contains(f, ".$") || strings.Contains(f, "..") || strings.HasSuffix(f, ".") || strings.HasPrefix(f, ".") {
			return is, errorf(ErrCannotCreateIndex, "Error in specification %s :: caused by :: Index key contains an illegal field name: '%s'", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}), f)
		}
		nameParts = append(nameParts, f, formatDirection(v))
	}
	if is.ix.Name == "" {
		is.ix.Name = strings.Join(nameParts, "_")
	}
	if is.ix.Name == "*" {
		return is, errorf(ErrBadValue, "The index name '*' is not valid.")
	}
	isID := len(keyElems) == 1 && keyElems[0].Key() == "_id"
	switch {
	case wildcard && is.ix.Unique:
		return is, errorf(ErrCannotCreateIndex, "Index type 'wildcard' does not support the unique option")
	case wildcard && is.ix.Sparse:
		return is, errorf(ErrCannotCreateIndex, "Index type 'wildcard' does not support the sparse option")
	case wildcard && is.ix.ExpireAfterSeconds != nil:
		return is, errorf(ErrCannotCreateIndex, "Index type 'wildcard' cannot be a TTL index")
	case is.ix.Sparse && is.ix.Partial != nil:
		return is, errorf(ErrCannotCreateIndex, "cannot mix \"partialFilterExpression\" and \"sparse\" options")
	case is.ix.ExpireAfterSeconds != nil && len(keyElems) > 1:
		return is, errorf(ErrCannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}))
	case is.ix.ExpireAfterSeconds != nil && isID:
		return is, errorf(ErrCannotCreateIndex, "The field 'expireAfterSeconds' is not valid for an _id index specification. Specification: %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}))
	case is.ix.Name == idIndexName && !isID:
		return is, errorf(ErrBadValue, "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}, found key: %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}))
	case isID && is.ix.Hidden:
		return is, errorf(ErrBadValue, "can't hide _id index")
	}
	if c != nil && c.Sharded() && is.ix.Unique && !isID {
		paths := make([]string, len(keyElems))
		for i, el := range keyElems {
			paths[i] = el.Key()
		}
		if !keyPrefixCovers(paths, c.Spec()) {
			return is, errorf(ErrCannotCreateIndex, "cannot create unique index over %s with shard key pattern %s", shellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}), c.Spec())
		}
	}
	if !collationGiven {
		// An index without a collation takes the collection's default.
		if coll := collectionCollation(c); coll != nil {
			is.ix.Collation = bson.Raw(coll.Spec().Document())
			opts = append(opts, bson.E{Key: "collation", Value: is.ix.Collation})
		}
	}
	is.ix.Key = bson.Raw(append([]byte(nil), key...))
	spec = append(spec, bson.E{Key: "key", Value: is.ix.Key}, bson.E{Key: "name", Value: is.ix.Name})
	spec = append(spec, opts...)
	out, err := bson.Marshal(spec)
	if err != nil {
		return is, err
	}
	is.spec = out
	is.ix.Spec = out
	return is, nil
}

// boolish reads a flag as MongoDB's index options do: booleans and numbers.
func boolish(v bsoncore.Value) (bool, bool) {
	if b, ok := v.BooleanOK(); ok {
		return b, true
	}
	if f, ok := numberFloat(v); ok {
		return f != 0, true
	}
	return false, false
}

// formatDirection is a key pattern value as index names show it: 1, -1,
// 1.5, "hashed".
func formatDirection(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeString:
		return v.StringValue()
	}
	f, _ := numberFloat(v)
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// idIndexSpec is the _id index as listIndexes shows it.
func idIndexDoc() bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: idIndexName}})
	return raw
}

// sameKey reports whether two key patterns are the same (field names and
// directions; 1 and 1.0 alike).
func sameKey(a, b bson.Raw) bool { return plan.SameKey(a, b) }

// sameOptions reports whether two specs have the same options (what
// MongoDB compares to decide an index already exists), ignoring name, v,
// hidden and prepareUnique.
func sameOptions(a, b bson.Raw) bool {
	strip := func(raw bson.Raw) string {
		var d bson.D
		_ = bson.Unmarshal(raw, &d)
		var out []string
		for _, e := range d {
			switch e.Key {
			case "v", "name", "key", "hidden", "background", "prepareUnique":
				continue
			}
			out = append(out, fmt.Sprintf("%s=%v", e.Key, e.Value))
		}
		return strings.Join(out, ";")
	}
	return strip(a) == strip(b)
}

// partialMatcher compiles partial filter expressions for the store.
func partialMatcher(filter []byte) (func(doc []byte) (bool, error), error) {
	f, err := query.Compile(bsoncore.Document(filter))
	if err != nil {
		return nil, err
	}
	return func(doc []byte) (bool, error) { return f.MatchErr(bsoncore.Document(doc)) }, nil
}
