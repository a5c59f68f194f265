package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCollMod changes an index's hidden flag or TTL: {collMod: coll, index:
// {name | keyPattern, hidden, expireAfterSeconds}}. Other collection
// options Parsec does not have (validators, capped size, ...) are refused.
func (e *Engine) cmdCollMod(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	var index bsoncore.Document
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "index":
			d, err := docArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			index = d
		case "writeConcern", "comment":
		case "validator", "validationLevel", "validationAction", "viewOn", "pipeline", "expireAfterSeconds",
			"changeStreamPreAndPostImages", "cappedSize", "cappedMax", "timeseries", "recordPreImages", "clusteredIndex":
			return nil, errorf(ErrCommandNotSupported, "collMod option '%s' is not supported by Parsec", k)
		default:
			if !genericFields[k] {
				return nil, errorf(ErrInvalidOptions, "unknown option to collMod: %s", k)
			}
		}
	}
	c := e.store.Collection(req.db, name)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "ns does not exist")
	}
	if index == nil {
		return okReply()
	}
	var ixName string
	var keyPattern bsoncore.Document
	var hidden *bool
	var expire *int64
	ies, _ := index.Elements()
	for _, el := range ies {
		k, v := el.Key(), el.Value()
		switch k {
		case "name":
			s, err := stringArg("collMod.index", k, v)
			if err != nil {
				return nil, err
			}
			ixName = s
		case "keyPattern":
			d, err := docArg("collMod.index", k, v)
			if err != nil {
				return nil, err
			}
			keyPattern = d
		case "hidden":
			b, err := boolArg("collMod.index", k, v)
			if err != nil {
				return nil, err
			}
			hidden = &b
		case "expireAfterSeconds":
			n, err := int64Arg("collMod.index", k, v)
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, errorf(ErrBadValue, "TTL index 'expireAfterSeconds' option must be within an acceptable range")
			}
			expire = &n
		default:
			return nil, errorf(ErrInvalidOptions, "unknown option to index collMod: %s", k)
		}
	}
	if (ixName == "") == (keyPattern == nil) {
		return nil, errorf(ErrInvalidOptions, "must specify either index name or key pattern for collMod")
	}
	if hidden == nil && expire == nil {
		return nil, errorf(ErrInvalidOptions, "no expireAfterSeconds or hidden field")
	}
	if ixName == idIndexName || (keyPattern != nil && sameKey(bson.Raw(keyPattern), idKeyPattern)) {
		return nil, errorf(ErrBadValue, "can't hide _id index")
	}
	var ix *store.Index
	for _, x := range c.Indexes {
		if (ixName != "" && x.Name == ixName) || (keyPattern != nil && sameKey(x.Key, bson.Raw(keyPattern))) {
			ix = x
			break
		}
	}
	if ix == nil {
		if ixName != "" {
			return nil, errorf(ErrIndexNotFound, "cannot find index %s for ns %s", ixName, namespaceOf(req.db, name))
		}
		return nil, errorf(ErrIndexNotFound, "cannot find index %s for ns %s", shellString(docValue(keyPattern)), namespaceOf(req.db, name))
	}
	if expire != nil && ix.ExpireAfterSeconds == nil {
		return nil, errorf(ErrInvalidOptions, "no expireAfterSeconds field to update")
	}
	var reply bson.D
	if expire != nil {
		reply = append(reply, bson.E{Key: "expireAfterSeconds_old", Value: *ix.ExpireAfterSeconds}, bson.E{Key: "expireAfterSeconds_new", Value: *expire})
	}
	if hidden != nil {
		reply = append(reply, bson.E{Key: "hidden_old", Value: ix.Hidden}, bson.E{Key: "hidden_new", Value: *hidden})
	}
	for attempt := 0; ; attempt++ {
		_, err := e.store.SetIndexOptions(c, ix.Name, hidden, expire)
		if errors.Is(err, store.ErrCollectionChanged) && attempt < 10 {
			if c = e.store.Collection(req.db, name); c == nil {
				return nil, errorf(ErrNamespaceNotFound, "ns does not exist")
			}
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, errorf(ErrIndexNotFound, "cannot find index %s for ns %s", ix.Name, namespaceOf(req.db, name))
		}
		if err != nil {
			return nil, err
		}
		break
	}
	return okDoc(reply)
}
