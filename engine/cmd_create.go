package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCreate creates a collection, with document validation when asked
// (validator, validationLevel, validationAction: validation.go), or a view
// when viewOn is given (createView). Options MongoDB accepts but Parsec
// does not implement (time series, clustered, ...) are refused
// with CommandNotSupported rather than silently ignored.
func (e *Engine) cmdCreate(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	opts, capped, err := createOptions(req, name)
	if err != nil {
		// MongoDB parses the options' types first, then finds the
		// collection exists (48) before it checks what the options ask
		// for; an option Parsec refuses is one no existing collection has.
		var ce *CommandError
		if errors.As(err, &ce) && ce.Code == ErrCommandNotSupported {
			if c := e.store.Collection(req.db, name); c != nil && !e.store.Pending(c.ID) {
				return nil, existsWithOtherOptions(req.db, name, c)
			}
		}
		return nil, err
	}
	if viewOn, pipeline, isView, err := viewOptions(req); err != nil || isView {
		if err != nil {
			return nil, err
		}
		var collation bson.Raw
		if v, err := opts.LookupErr("collation"); err == nil {
			collation = v.Document()
		}
		return e.createView(ctx, req.db, name, viewOn, pipeline, collation)
	}
	c, err := e.store.CreateCollectionWith(req.db, name, capped.newCollection(opts))
	if err != nil {
		if errors.Is(err, store.ErrExists) {
			if v := e.store.ViewDefinition(req.db, name); v != nil {
				return nil, existsAsOtherView(v, "")
			}
			// As in MongoDB 7.0, creating a collection that exists with the
			// same options succeeds; other options are a conflict.
			c := e.store.Collection(req.db, name)
			if c != nil && bytes.Equal(c.Options, opts) {
				return okReply()
			}
			return nil, existsWithOtherOptions(req.db, name, c)
		}
		return nil, err
	}
	if s := statementOf(ctx); s != nil {
		if err := s.txn.Create(c); err != nil {
			return nil, err
		}
	}
	return okReply()
}

// existsWithOtherOptions is create's error for a collection that exists
// with options other than those asked for.
func existsWithOtherOptions(db, name string, c *store.Collection) *CommandError {
	var parts []string
	if c != nil {
		u := c.UUID
		if len(u) == 16 {
			parts = append(parts, fmt.Sprintf(`uuid: UUID("%x-%x-%x-%x-%x")`, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]))
		}
		elems, _ := bsoncore.Document(c.Options).Elements()
		for _, el := range elems {
			parts = append(parts, el.Key()+": "+shellString(el.Value()))
		}
	}
	return errorf(ErrNamespaceExists, "namespace %s already exists, but with different options: { %s }", namespaceOf(db, name), strings.Join(parts, ", "))
}

// createOptions validates create's options (for collection name) and
// returns those to keep, and what it asks of a capped collection.
func createOptions(req *request, name string) (bson.Raw, *cappedSpec, error) {
	b := bsoncore.NewDocumentBuilder()
	validation := map[string]bsoncore.Value{}
	capped := &cappedSpec{}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		if ok, err := capped.parse(req.name, k, v); ok {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		switch k {
		case "autoIndexId":
			if _, err := boolArg(req.name, k, v); err != nil {
				return nil, nil, err
			}
		case "idIndex", "storageEngine", "indexOptionDefaults":
			if _, err := docArg(req.name, k, v); err != nil {
				return nil, nil, err
			}
		case "validator", "validationLevel", "validationAction":
			if _, err := validationOption(req.name, req.db, name, k, v); err != nil {
				return nil, nil, err
			}
			if k == "validator" && len(v.Data) <= 5 {
				continue // an empty validator is none
			}
			validation[k] = v
		case "viewOn":
			if _, err := stringArg(req.name, k, v); err != nil {
				return nil, nil, err
			}
		case "pipeline":
			if v.Type != bsoncore.TypeArray {
				return nil, nil, wrongType(req.name, k, v, "array")
			}
		case "timeseries", "expireAfterSeconds":
			return nil, nil, errorf(ErrCommandNotSupported, "time-series collections (create.%s) are not supported by Parsec", k)
		case "clusteredIndex":
			return nil, nil, errorf(ErrCommandNotSupported, "clustered collections are not supported by Parsec")
		case "collation":
			// The collection's default collation, kept with every option
			// set, as listCollections shows it; simple is no default.
			c, err := collationArg(req.name, k, v)
			if err != nil {
				return nil, nil, err
			}
			if c != nil {
				b.AppendDocument(k, c.Spec().Document())
			}
		case "encryptedFields":
			return nil, nil, errorf(ErrCommandNotSupported, "queryable encryption is not supported by Parsec")
		case "changeStreamPreAndPostImages":
			if err := imagesOption(req.name, v); err != nil {
				return nil, nil, err
			}
			validation[k] = v
		case "flags", "temp", "recordPreImages":
			// accepted and meaningless here, as in recent MongoDB versions
		default:
			if !genericFields[k] {
				return nil, nil, unknownField(req.name, k)
			}
		}
	}
	if err := capped.check(); err != nil {
		return nil, nil, err
	}
	// Kept in the order MongoDB lists them, whatever the order given.
	capped.options(b)
	for _, k := range []string{"validator", "validationLevel", "validationAction", "changeStreamPreAndPostImages"} {
		if v, ok := validation[k]; ok {
			b.AppendValue(k, v)
		}
	}
	doc := b.Build()
	if len(doc) == 5 {
		return nil, capped, nil
	}
	return bson.Raw(doc), capped, nil
}
