package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCreate creates a collection. Options MongoDB accepts but Parsec does
// not implement (capped, views, time series, validators, collation, ...)
// are refused with CommandNotSupported rather than silently ignored.
func (e *Engine) cmdCreate(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	if err := validateCollName(req.db, name); err != nil {
		return nil, err
	}
	opts, err := createOptions(req)
	if err != nil {
		return nil, err
	}
	if _, err := e.store.CreateCollection(req.db, name, opts); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf(ErrNamespaceExists, "Collection %s.%s already exists.", req.db, name)
		}
		return nil, err
	}
	return okReply()
}

// createOptions validates create's options and returns those to keep.
func createOptions(req *request) (bson.Raw, error) {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "capped":
			capped, err := boolArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			if capped {
				return nil, errorf(ErrCommandNotSupported, "capped collections are not supported by Parsec")
			}
		case "size", "max":
			if !isNumber(v) {
				return nil, wrongTypes(req.name, k, v, "long, int, decimal, double")
			}
		case "autoIndexId":
			if _, err := boolArg(req.name, k, v); err != nil {
				return nil, err
			}
		case "idIndex", "storageEngine", "indexOptionDefaults":
			if _, err := docArg(req.name, k, v); err != nil {
				return nil, err
			}
		case "validationLevel":
			s, err := stringArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			if s != "off" && s != "strict" && s != "moderate" {
				return nil, errorf(ErrBadValue, "Enumeration value '%s' for field 'create.validationLevel' is not a valid value.", s)
			}
			b.AppendString(k, s)
		case "validationAction":
			s, err := stringArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			if s != "error" && s != "warn" {
				return nil, errorf(ErrBadValue, "Enumeration value '%s' for field 'create.validationAction' is not a valid value.", s)
			}
			b.AppendString(k, s)
		case "validator":
			d, err := docArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			if len(d) > 5 {
				return nil, errorf(ErrCommandNotSupported, "document validation (create.validator) is not supported by Parsec")
			}
		case "viewOn", "pipeline":
			return nil, errorf(ErrCommandNotSupported, "views (create.%s) are not supported by Parsec", k)
		case "timeseries", "expireAfterSeconds":
			return nil, errorf(ErrCommandNotSupported, "time-series collections (create.%s) are not supported by Parsec", k)
		case "clusteredIndex":
			return nil, errorf(ErrCommandNotSupported, "clustered collections are not supported by Parsec")
		case "collation":
			return nil, errorf(ErrCommandNotSupported, "collation is not supported by Parsec")
		case "encryptedFields":
			return nil, errorf(ErrCommandNotSupported, "queryable encryption is not supported by Parsec")
		case "changeStreamPreAndPostImages":
			return nil, errorf(ErrCommandNotSupported, "change stream pre- and post-images are not supported by Parsec")
		case "flags", "temp", "recordPreImages":
			// accepted and meaningless here, as in recent MongoDB versions
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	doc := b.Build()
	if len(doc) == 5 {
		return nil, nil
	}
	return bson.Raw(doc), nil
}
