package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/parsecdb/parsec/engine/store"
)

// cmdRenameCollection renames "db.a" to "db2.b" (run on admin). Documents
// are not copied: the catalog entry moves.
func (e *Engine) cmdRenameCollection(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	from, err := stringArg(req.name, req.name, v)
	if err != nil {
		return nil, err
	}
	var to string
	dropTarget := false
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "to":
			if to, err = stringArg(req.name, k, v); err != nil {
				return nil, err
			}
		case "dropTarget":
			if dropTarget, err = boolArg(req.name, k, v); err != nil {
				return nil, err
			}
		case "stayTemp":
			if _, err := boolArg(req.name, k, v); err != nil {
				return nil, err
			}
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if to == "" {
		return nil, missingField(req.name, "to")
	}
	fromDB, fromColl, err := splitNamespace(from)
	if err != nil {
		return nil, err
	}
	toDB, toColl, err := splitNamespace(to)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, errorf(ErrIllegalOperation, "Can't rename a collection to itself")
	}
	if e.isView(fromDB, fromColl) {
		return nil, errorf(ErrCommandNotSupportedOnView, "cannot rename view: %s", from)
	}
	// As in MongoDB 5.0+: a sharded collection may be renamed, but only
	// within its database.
	if c := e.store.Collection(fromDB, fromColl); c != nil && c.Sharded() && fromDB != toDB {
		return nil, errorf(ErrIllegalOperation, "Source and destination collections must be on the same database because %s is sharded.", from)
	}
	err = e.store.RenameCollection(fromDB, fromColl, toDB, toColl, dropTarget)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errorf(ErrNamespaceNotFound, "Source collection %s does not exist", from)
	case errors.Is(err, store.ErrIsView):
		return nil, errorf(ErrNamespaceExists, "a view already exists with that name: %s", to)
	case errors.Is(err, store.ErrExists):
		return nil, errorf(ErrNamespaceExists, "target namespace exists")
	case err != nil:
		return nil, err
	}
	e.cursors.CloseForNamespace(from)
	e.units.CatalogChanged()
	if dropTarget {
		e.cursors.CloseForNamespace(to)
	}
	return okReply()
}

// splitNamespace splits and validates "db.coll".
func splitNamespace(ns string) (string, string, error) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok {
		return "", "", errorf(ErrInvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := validateCollName(db, coll); err != nil {
		return "", "", err
	}
	return db, coll, nil
}
