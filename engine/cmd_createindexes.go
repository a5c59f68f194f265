package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
)

// cmdCreateIndexes builds secondary indexes, creating the collection if
// needed. Each index is built online: writers go on while the entries of
// existing documents are written, and a duplicate in a unique index
// aborts that index's build, leaving none of its entries.
func (e *Engine) cmdCreateIndexes(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	var raw []bsoncore.Document
	elems, _ := req.body.Elements()
	seen := false
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "indexes":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, wrongType(req.name, k, v, "array")
			}
			vals, _ := arr.Values()
			for _, iv := range vals {
				d, ok := iv.DocumentOK()
				if !ok {
					return nil, errorf(ErrTypeMismatch, "The field 'indexes' must be an array of objects, but found %s", TypeName(iv.Type))
				}
				raw = append(raw, d)
			}
			seen = true
		case "commitQuorum", "writeConcern", "comment", "ignoreUnknownIndexOptions", "isTimeseriesNamespace":
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if !seen {
		return nil, missingField(req.name, "indexes")
	}
	if len(raw) == 0 {
		return nil, errorf(ErrBadValue, "Must specify at least one index to create")
	}
	if _, err := parseWriteConcern(req); err != nil {
		return nil, err
	}
	if e.isView(req.db, name) {
		return nil, notOnView(req.db, name)
	}
	c := e.store.Collection(req.db, name)
	if s := statementOf(ctx); s != nil && c != nil && (!s.txn.Creates(c.ID) || s.txn.Storage().Writes(c.ID)) {
		// MongoDB builds indexes in a transaction only on a collection it
		// creates, or created earlier and has not written to.
		return nil, errorf(ErrOperationNotSupportedInTransaction, "Cannot create new indexes on existing collection %s in a multi-document transaction.", namespaceOf(req.db, name))
	}
	specs := make([]indexSpec, 0, len(raw))
	for _, r := range raw {
		if exists, err := shardKeyIndexRequested(c, r); err != nil || exists {
			if err != nil {
				return nil, err
			}
			continue // a sharded collection always has it
		}
		is, err := parseIndexSpec(r, c)
		if err != nil {
			return nil, err
		}
		if _, uerr := r.LookupErr("unique"); uerr == nil && sameKey(is.ix.Key, idKeyPattern) {
			// unique: false as much as true (the spec drops a false option)
			return nil, errorf(ErrInvalidIndexSpecificationOption, "The field 'unique' is not valid for an _id index specification. Specification: %s", shellString(docValue(r)))
		}
		for _, o := range specs {
			if o.ix.Name == is.ix.Name {
				return nil, errorf(ErrIndexKeySpecsConflict, "Index with name: %s already exists with a different spec", is.ix.Name)
			}
		}
		specs = append(specs, is)
	}
	created := false
	if c == nil {
		if c, created, err = e.ensureCollection(ctx, req.db, name); err != nil {
			return nil, err
		}
	}
	before := indexCount(c)
	var toBuild []indexSpec
	for _, is := range specs {
		exists, err := existingIndex(c, is)
		if err != nil {
			return nil, err
		}
		if !exists {
			toBuild = append(toBuild, is)
		}
	}
	if n := int(before) + len(toBuild); n > maxIndexes {
		over := toBuild[max(0, maxIndexes-int(before))]
		return nil, errorf(ErrCannotCreateIndex, "add index fails, too many indexes for %s key:%s", namespaceOf(req.db, name), shellString(docValue(over.ix.Key)))
	}
	reply := bson.D{{Key: "numIndexesBefore", Value: int32(before)}}
	if len(toBuild) == 0 {
		reply = append(reply, bson.E{Key: "numIndexesAfter", Value: int32(before)}, bson.E{Key: "note", Value: "all indexes already exist"})
		return okDoc(reply)
	}
	// As in MongoDB, the indexes of one command are built together, in
	// one pass over the documents: if one fails, none of them stays.
	progress := &store.BuildProgress{}
	e.running.setProgress(&req.op, progress)
	build := e.startIndexBuild(c, toBuild)
	for attempt := 0; ; attempt++ {
		ixs := make([]store.Index, len(toBuild))
		for i, is := range toBuild {
			ixs[i] = is.ix
		}
		_, err := e.store.CreateIndexesWithProgress(ctx, c, ixs, progress)
		if errors.Is(err, store.ErrCollectionChanged) && attempt < 10 {
			// the entry changed meanwhile: look again at what is left to build
			if c, _, err = e.ensureCollection(ctx, req.db, name); err != nil {
				return nil, err
			}
			var left []indexSpec
			for _, is := range toBuild {
				exists, err := existingIndex(c, is)
				if err != nil {
					return nil, err
				}
				if !exists {
					left = append(left, is)
				}
			}
			if toBuild = left; len(toBuild) == 0 {
				break
			}
			continue
		}
		if err != nil {
			build.end(progress, err)
			return nil, indexBuildError(err, toBuild)
		}
		break
	}
	build.end(progress, nil)
	if cur := e.store.Collection(req.db, name); cur != nil {
		c = cur
	}
	reply = append(reply,
		bson.E{Key: "numIndexesAfter", Value: indexCount(c)},
		bson.E{Key: "createdCollectionAutomatically", Value: created})
	return okDoc(reply)
}

// maxIndexes is MongoDB's limit of indexes per collection, _id's included.
const maxIndexes = 64

// indexCount is how many indexes c has, those being built included: _id,
// the shard-key index of a sharded collection and the secondary indexes.
func indexCount(c *store.Collection) int32 {
	n := 1 + len(c.Indexes)
	if c.Sharded() {
		n++
	}
	return int32(n)
}

// shardKeyIndexRequested reports whether createIndexes' spec r asks for
// the shard-key index of c (engine/plan/shardkeyindex.go), which a sharded
// collection always has: its key pattern, under its name (or none) and
// without options, is an index that already exists. The same key under
// another name or with options, or another key under its name, is
// refused as MongoDB refuses a clash with an existing index.
func shardKeyIndexRequested(c *store.Collection, r bsoncore.Document) (bool, error) {
	if c == nil || !c.Sharded() {
		return false, nil
	}
	key, ok := r.Lookup("key").DocumentOK()
	name, named := r.Lookup("name").StringValueOK()
	own := plan.ShardKeyIndexName(c)
	spec := plan.ShardKeyIndexSpecRaw(c)
	sameK := ok && sameKey(bson.Raw(key), plan.ShardKeyIndexKeyRaw(c))
	switch {
	case !sameK && named && name == own:
		return false, errorf(ErrIndexKeySpecsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s",
			shellString(docValue(r)), shellString(docValue(spec)))
	case !sameK:
		return false, nil
	case named && name != own:
		return false, errorf(ErrIndexOptionsConflict, "Index already exists with a different name: %s", own)
	case !sameOptions(bson.Raw(r), spec):
		return false, errorf(ErrIndexOptionsConflict, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s",
			shellString(docValue(r)), shellString(docValue(spec)))
	}
	return true, nil
}

// existingIndex reports whether c already has the index is asks for, and
// refuses one that clashes with an existing index by name or key.
func existingIndex(c *store.Collection, is indexSpec) (bool, error) {
	if sameKey(is.ix.Key, idKeyPattern) {
		switch {
		case is.ix.Unique:
			return false, errorf(ErrInvalidIndexSpecificationOption, "The field 'unique' is not valid for an _id index specification. Specification: %s", shellString(docValue(is.spec)))
		case is.ix.Name == idIndexName || is.ix.Name == "_id_1":
			return true, nil
		}
		return false, errorf(ErrIndexOptionsConflict, "Index already exists with a different name: %s", idIndexName)
	}
	for _, ix := range c.Indexes {
		switch {
		case ix.Name == is.ix.Name && sameKey(ix.Key, is.ix.Key) && sameOptions(ix.Spec, is.spec):
			return true, nil
		case ix.Name == is.ix.Name:
			return false, errorf(ErrIndexKeySpecsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s",
				shellString(docValue(is.spec)), shellString(docValue(ix.Spec)))
		case sameKey(ix.Key, is.ix.Key) && sameOptions(ix.Spec, is.spec):
			return false, errorf(ErrIndexOptionsConflict, "Index already exists with a different name: %s", ix.Name)
		case sameKey(ix.Key, is.ix.Key) && !bytes.Equal(ix.Collation, is.ix.Collation):
			// the same key under another collation is another index, as in MongoDB
		case sameKey(ix.Key, is.ix.Key):
			return false, errorf(ErrIndexOptionsConflict, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s",
				shellString(docValue(is.spec)), shellString(docValue(ix.Spec)))
		}
	}
	return false, nil
}

var idKeyPattern, _ = bson.Marshal(bson.D{{Key: "_id", Value: int32(1)}})

func docValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// indexBuildError is what a failed build of specs reports.
func indexBuildError(err error, specs []indexSpec) error {
	var dup *store.DuplicateKeyError
	names := make([]string, len(specs))
	for i, is := range specs {
		names[i] = is.ix.Name
	}
	switch {
	case errors.As(err, &dup):
		return errorf(ErrDuplicateKey, "Index build failed: %s", indexDupMessage(dup))
	case errors.Is(err, store.ErrParallelArrays):
		return errorf(ErrCannotIndexParallelArrays, "Index build failed: cannot index parallel arrays (indexes %s)", strings.Join(names, ", "))
	case errors.Is(err, store.ErrExists):
		return errorf(ErrIndexKeySpecsConflict, "Index with name: %s already exists with a different spec", strings.Join(names, ", "))
	}
	return err
}

// okDoc marshals d with ok: 1.
func okDoc(d bson.D) ([]byte, error) {
	return bson.Marshal(append(d, bson.E{Key: "ok", Value: 1.0}))
}

// listedIndexes are the specs of c's indexes as listIndexes lists them:
// _id, then for a sharded collection its shard-key index
// (engine/plan/shardkeyindex.go), then the secondary indexes that are built.
func listedIndexes(c *store.Collection) []bson.Raw {
	out := []bson.Raw{idIndexDoc()}
	if c.Sharded() {
		out = append(out, plan.ShardKeyIndexSpecRaw(c))
	}
	for _, ix := range c.Indexes {
		if !ix.Building {
			out = append(out, ix.Spec)
		}
	}
	return out
}
