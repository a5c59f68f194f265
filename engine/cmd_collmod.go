package engine

import (
	"context"
	"errors"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCollMod changes an index: {collMod: coll, index: {name | keyPattern,
// hidden, expireAfterSeconds}}, or converts one to a unique index in two
// steps, {index: {..., prepareUnique: true}} (new duplicates are refused)
// then {index: {..., unique: true}, dryRun} (359 with the documents that
// share keys, if any). It also sets document validation (validator,
// validationLevel, validationAction: validation.go); a collection's
// existing documents are not checked. Other collection options Parsec
// does not have (capped size, ...) are refused. On a view it changes the
// view's viewOn or pipeline (modifyView).
func (e *Engine) cmdCollMod(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	var index bsoncore.Document
	var validation []bsoncore.Element
	dryRun := false
	isView := e.isView(req.db, name)
	var redefine viewRedefinition
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "viewOn", "pipeline":
			if err := redefine.read(req.name, k, v); err != nil {
				return nil, err
			}
		case "index":
			d, err := docArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			index = d
		case "dryRun":
			if dryRun, err = boolArg(req.name, k, v); err != nil {
				return nil, err
			}
		case "writeConcern", "comment":
		case "validator", "validationLevel", "validationAction":
			if isView {
				return nil, errorf(ErrInvalidOptions, "option not supported on a view: %s", k)
			}
			if _, err := validationOption(req.name, req.db, name, k, v); err != nil {
				return nil, err
			}
			validation = append(validation, el)
		case "changeStreamPreAndPostImages":
			if isView {
				return nil, errorf(ErrInvalidOptions, "option not supported on a view: %s", k)
			}
			if err := imagesOption(req.name, v); err != nil {
				return nil, err
			}
			validation = append(validation, el)
		case "expireAfterSeconds", "cappedSize", "cappedMax", "timeseries", "recordPreImages", "clusteredIndex":
			if isView {
				return nil, errorf(ErrInvalidOptions, "option not supported on a view: %s", k)
			}
			return nil, errorf(ErrCommandNotSupported, "collMod option '%s' is not supported by Parsec", k)
		default:
			if !genericFields[k] {
				return nil, errorf(ErrInvalidOptions, "unknown option to collMod: %s", k)
			}
		}
	}
	if isView {
		if index != nil {
			return nil, errorf(ErrInvalidOptions, "option not supported on a view: index")
		}
		return e.modifyView(req.db, name, redefine)
	}
	c := e.store.Collection(req.db, name)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "ns does not exist")
	}
	if err := redefine.onCollection(); err != nil {
		return nil, err
	}
	if validation != nil {
		var next *store.Collection
		err := retryCatalogChange(e, req.db, name, &c, func(c *store.Collection) error {
			var err error
			next, err = e.store.SetOptions(c, withValidation(c.Options, validation))
			return err
		})
		if err != nil {
			return nil, err
		}
		c = next
	}
	if index == nil {
		if dryRun {
			return nil, errorf(ErrInvalidOptions, "dryRun requires an index modification with 'unique: true'")
		}
		if validation == nil {
			// Nothing to change: change streams still see the collMod.
			if err := e.store.LogModify(c); err != nil {
				return nil, err
			}
		}
		return okReply()
	}
	var ixName string
	var keyPattern bsoncore.Document
	var hidden, prepareUnique, unique *bool
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
		case "prepareUnique", "unique":
			b, err := boolArg("collMod.index", k, v)
			if err != nil {
				return nil, err
			}
			if k == "unique" {
				unique = &b
			} else {
				prepareUnique = &b
			}
		default:
			return nil, errorf(ErrInvalidOptions, "unknown option to index collMod: %s", k)
		}
	}
	if (ixName == "") == (keyPattern == nil) {
		return nil, errorf(ErrInvalidOptions, "must specify either index name or key pattern for collMod")
	}
	switch {
	case hidden == nil && expire == nil && prepareUnique == nil && unique == nil:
		return nil, errorf(ErrInvalidOptions, "no expireAfterSeconds, hidden, prepareUnique or unique field")
	case prepareUnique != nil && (hidden != nil || expire != nil || unique != nil):
		return nil, errorf(ErrInvalidOptions, "prepareUnique cannot be combined with other index modifications: set it in a collMod of its own")
	case unique != nil && !*unique:
		return nil, errorf(ErrBadValue, "collMod can only make an index unique ('unique: true'), not make a unique index non-unique")
	case dryRun && unique == nil:
		return nil, errorf(ErrInvalidOptions, "dryRun requires an index modification with 'unique: true'")
	}
	if ixName == idIndexName || (keyPattern != nil && sameKey(bson.Raw(keyPattern), idKeyPattern)) {
		if hidden != nil {
			return nil, errorf(ErrBadValue, "can't hide _id index")
		}
		return nil, errorf(ErrBadValue, "the _id index cannot be modified: it is unique already")
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
	if (prepareUnique != nil && *prepareUnique) || unique != nil {
		if ix.Building {
			return nil, errorf(ErrInvalidOptions, "index %s is still being built: make it unique once the build is done", ix.Name)
		}
		if c.Sharded() && !uniqueKeeps(ix, c.Spec()) {
			return nil, errorf(ErrInvalidOptions, "cannot make index %s unique: on a sharded collection a unique index must start with the shard key %s", ix.Name, c.Spec())
		}
		if ix.Wildcard {
			return nil, errorf(ErrInvalidOptions, "cannot make wildcard index %s unique", ix.Name)
		}
	}
	if prepareUnique != nil {
		return e.setPrepareUnique(req.db, name, c, ix, *prepareUnique)
	}
	if unique != nil {
		return e.makeUnique(req.db, name, c, ix, dryRun)
	}
	var reply bson.D
	if expire != nil {
		reply = append(reply, bson.E{Key: "expireAfterSeconds_old", Value: *ix.ExpireAfterSeconds}, bson.E{Key: "expireAfterSeconds_new", Value: *expire})
	}
	if hidden != nil {
		reply = append(reply, bson.E{Key: "hidden_old", Value: ix.Hidden}, bson.E{Key: "hidden_new", Value: *hidden})
	}
	err = retryCatalogChange(e, req.db, name, &c, func(c *store.Collection) error {
		_, err := e.store.SetIndexOptions(c, ix.Name, hidden, expire)
		return err
	})
	if err != nil {
		return nil, err
	}
	return okDoc(reply)
}

// setPrepareUnique is collMod {index: {..., prepareUnique}}.
func (e *Engine) setPrepareUnique(db, name string, c *store.Collection, ix *store.Index, on bool) ([]byte, error) {
	reply := bson.D{{Key: "prepareUnique_old", Value: ix.PrepareUnique}, {Key: "prepareUnique_new", Value: on}}
	if ix.PrepareUnique == on || ix.Unique {
		return okDoc(reply)
	}
	err := retryCatalogChange(e, db, name, &c, func(c *store.Collection) error {
		_, err := e.store.SetPrepareUnique(c, ix.Name, on)
		return err
	})
	if err != nil {
		return nil, err
	}
	return okDoc(reply)
}

// makeUnique is collMod {index: {..., unique: true}, dryRun}: the index
// must refuse new duplicates already (prepareUnique); documents that
// share a key stop the conversion with 359 and their _ids.
func (e *Engine) makeUnique(db, name string, c *store.Collection, ix *store.Index, dryRun bool) ([]byte, error) {
	if ix.IsUnique() {
		return okReply()
	}
	if !ix.PrepareUnique {
		return nil, errorf(ErrInvalidOptions, "index %s must refuse new duplicate keys before it can be made unique: run collMod with 'prepareUnique: true' first", ix.Name)
	}
	var violations [][]bson.RawValue
	err := retryCatalogChange(e, db, name, &c, func(c *store.Collection) error {
		var err error
		_, violations, err = e.store.MakeUnique(c, ix.Name, dryRun)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(violations) > 0 {
		var list bson.A
		for _, ids := range violations {
			list = append(list, bson.D{{Key: "ids", Value: ids}})
		}
		ce := errorf(ErrCannotConvertIndexToUnique, "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.")
		ce.Extra = bson.D{{Key: "violations", Value: list}}
		return nil, ce
	}
	if dryRun {
		return okReply()
	}
	return okDoc(bson.D{{Key: "unique_new", Value: true}})
}

// retryCatalogChange runs change on the collection's current entry,
// looking it up again (a few times) when a concurrent catalog change made
// the entry stale.
func retryCatalogChange(e *Engine, db, name string, c **store.Collection, change func(*store.Collection) error) error {
	for attempt := 0; ; attempt++ {
		err := change(*c)
		if errors.Is(err, store.ErrCollectionChanged) && attempt < 10 {
			if *c = e.store.Collection(db, name); *c == nil {
				return errorf(ErrNamespaceNotFound, "ns does not exist")
			}
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			return errorf(ErrIndexNotFound, "cannot find index for ns %s: it was dropped meanwhile", namespaceOf(db, name))
		}
		return err
	}
}

// withValidation is a collection's options with collMod's validation
// fields set: an empty validator removes the validator; the three keep
// MongoDB's order, after the other options.
func withValidation(options bson.Raw, set []bsoncore.Element) bson.Raw {
	vals := map[string]bsoncore.Value{}
	b := bsoncore.NewDocumentBuilder()
	elems, _ := bsoncore.Document(options).Elements()
	for _, el := range elems {
		switch k := el.Key(); k {
		case "validator", "validationLevel", "validationAction", "changeStreamPreAndPostImages":
			vals[k] = el.Value()
		default:
			b.AppendValue(k, el.Value())
		}
	}
	for _, el := range set {
		vals[el.Key()] = el.Value()
	}
	for _, k := range []string{"validator", "validationLevel", "validationAction", "changeStreamPreAndPostImages"} {
		v, ok := vals[k]
		if !ok || (k == "validator" && len(v.Data) <= 5) {
			continue
		}
		b.AppendValue(k, v)
	}
	doc := b.Build()
	if len(doc) == 5 {
		return nil
	}
	return bson.Raw(doc)
}
