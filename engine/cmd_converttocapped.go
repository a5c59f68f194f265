package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/storage"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdConvertToCapped makes a collection capped, as MongoDB does: it copies
// the documents, in natural order, into a new capped collection of the
// given size, which keeps the newest that fit, and renames it over the
// original. Secondary indexes are not carried over (MongoDB keeps only
// _id); the validator is.
func (e *Engine) cmdConvertToCapped(ctx context.Context, req *request) ([]byte, error) {
	name, err := validCollectionArg(req)
	if err != nil {
		return nil, err
	}
	capped := &cappedSpec{capped: true}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		if k == "size" {
			if _, err := capped.parse(req.name, k, v); err != nil {
				return nil, err
			}
			continue
		}
		if !genericFields[k] {
			return nil, unknownField(req.name, k)
		}
	}
	if !capped.sizeSet {
		return nil, missingField(req.name, "size")
	}
	if err := capped.check(); err != nil {
		return nil, err
	}
	ns := namespaceOf(req.db, name)
	if e.isView(req.db, name) {
		return nil, errorf(ErrCommandNotSupportedOnView, "convertToCapped is not supported for views")
	}
	src := e.store.Collection(req.db, name)
	if src == nil {
		if len(e.store.Collections(req.db)) == 0 && len(e.store.ViewDefinitions(req.db)) == 0 {
			return nil, errorf(ErrNamespaceNotFound, "source database %s does not exist", req.db)
		}
		return nil, errorf(ErrNamespaceNotFound, "source collection %s does not exist", ns)
	}
	if src.Sharded() {
		return nil, errorf(ErrIllegalOperation, "You cannot convert a sharded collection to capped: %s", ns)
	}
	b := bsoncore.NewDocumentBuilder()
	capped.options(b)
	if len(src.Options) > 0 {
		kept, _ := bsoncore.Document(src.Options).Elements()
		for _, el := range kept {
			if k := el.Key(); k != "capped" && k != "size" && k != "max" {
				b.AppendValue(k, el.Value())
			}
		}
	}
	tmpName := fmt.Sprintf("tmp%s.convertToCapped.%s", randomSuffix(), name)
	tmp, err := e.store.CreateCollectionWith(req.db, tmpName, capped.newCollection(bson.Raw(b.Build())))
	if err != nil {
		return nil, err
	}
	if err := e.copyInto(ctx, src, tmp); err != nil {
		_ = e.store.DropCollection(req.db, tmpName)
		return nil, toCommandError(err)
	}
	if err := e.store.RenameCollection(req.db, tmpName, req.db, name, true); err != nil {
		_ = e.store.DropCollection(req.db, tmpName)
		return nil, toCommandError(err)
	}
	e.cursors.CloseForNamespace(ns)
	e.units.CatalogChanged()
	return okReply()
}

// copyBatchBytes bounds the documents one transaction of copyInto writes.
const copyBatchBytes = 4 << 20

// copyInto inserts the documents of src, in its natural order, into the
// new collection dst, a batch per transaction.
func (e *Engine) copyInto(ctx context.Context, src, dst *store.Collection) error {
	var resume []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var docs [][]byte
		size := 0
		more := false
		err := e.store.View(func(tx storage.Txn) error {
			return tx.Scan(src, resume, func(key, doc []byte) (bool, error) {
				if size >= copyBatchBytes {
					more = true
					return false, nil
				}
				docs = append(docs, append([]byte(nil), doc...))
				size += len(doc)
				resume = append(append(resume[:0], key...), 0)
				return true, nil
			})
		})
		if err != nil {
			return err
		}
		if len(docs) > 0 {
			err = e.store.Update(func(tx storage.Txn) error {
				for _, d := range docs {
					id, err := bsoncore.Document(d).LookupErr("_id")
					if err != nil {
						return fmt.Errorf("document without _id in %s", src.Namespace())
					}
					key, err := plan.DocKey(dst, d, id)
					if err != nil {
						return err
					}
					if err := tx.Insert(dst, key, d); err != nil && !errors.Is(err, store.ErrCappedDocTooLarge) {
						return err // a document larger than the cap is left out, as MongoDB leaves it
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// randomSuffix is five random letters, as MongoDB names temporary
// collections.
func randomSuffix() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}
