package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func (e *Engine) cmdKillCursors(_ context.Context, req *request) ([]byte, error) {
	coll, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	if err := validateCollName(req.db, coll); err != nil {
		return nil, err
	}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		if k := el.Key(); k != "cursors" && !genericFields[k] {
			return nil, unknownField(req.name, k)
		}
	}
	v, err := req.body.LookupErr("cursors")
	if err != nil {
		return nil, missingField(req.name, "cursors")
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, wrongType(req.name, "cursors", v, "array")
	}
	vals, _ := arr.Values()
	ns := namespaceOf(req.db, coll)
	killed := bsoncore.NewArrayBuilder()
	notFound := bsoncore.NewArrayBuilder()
	owner := req.c.cursorOwner()
	for _, x := range vals {
		id, ok := x.Int64OK()
		if !ok {
			return nil, wrongType(req.name, "cursors", x, "long")
		}
		if e.cursors.Kill(id, ns, owner) {
			killed.AppendInt64(id)
		} else {
			notFound.AppendInt64(id)
		}
	}
	b := bsoncore.NewDocumentBuilder().
		AppendArray("cursorsKilled", killed.Build()).
		AppendArray("cursorsNotFound", notFound.Build()).
		AppendArray("cursorsAlive", emptyArray).
		AppendArray("cursorsUnknown", emptyArray).
		AppendDouble("ok", 1)
	return b.Build(), nil
}
