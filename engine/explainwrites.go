package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explain of writes: update, delete and findAndModify explain the read of
// their query (the find plan: partitions, index or scan) under an UPDATE or
// DELETE stage, as MongoDB does; nothing is written, and executionStats
// counts what the query examines (nReturned 0: a write returns nothing).

// explainWrite explains the one statement of an update or delete, or a
// findAndModify.
func (e *Engine) explainWrite(ctx context.Context, db, cmd string, inner bsoncore.Document, v explainVerbosity) (*explained, error) {
	coll, ok := inner.Index(0).Value().StringValueOK()
	if !ok {
		return nil, errorf(ErrInvalidNamespace, "collection name has invalid type %s", TypeName(inner.Index(0).Value().Type))
	}
	var q, sort bsoncore.Document
	single, stage := true, "UPDATE"
	switch cmd {
	case "update", "delete":
		field := map[string]string{"update": "updates", "delete": "deletes"}[cmd]
		stmts, ok := inner.Lookup(field).ArrayOK()
		if !ok {
			return nil, errorf(ErrFailedToParse, "explain of %s needs a '%s' array", cmd, field)
		}
		vals, _ := stmts.Values()
		if len(vals) != 1 {
			return nil, errorf(ErrInvalidLength, "explained %s must have exactly one statement, found %d", cmd, len(vals))
		}
		st, ok := vals[0].DocumentOK()
		if !ok {
			return nil, errorf(ErrTypeMismatch, "each statement of %s must be an object", field)
		}
		q, _ = st.Lookup("q").DocumentOK()
		if cmd == "update" {
			multi, _ := st.Lookup("multi").BooleanOK()
			single = !multi
		} else {
			stage = "DELETE"
			if n, ok := st.Lookup("limit").AsInt64OK(); ok && n == 0 {
				single = false
			}
		}
	case "findAndModify":
		q, _ = inner.Lookup("query").DocumentOK()
		sort, _ = inner.Lookup("sort").DocumentOK()
		if remove, _ := inner.Lookup("remove").BooleanOK(); remove {
			stage = "DELETE"
		}
	}
	if q == nil {
		q = bsoncore.NewDocumentBuilder().Build()
	}
	find := bsoncore.NewDocumentBuilder().AppendString("find", coll).AppendDocument("filter", q)
	if sort != nil {
		find.AppendDocument("sort", sort)
	}
	if single {
		find.AppendInt64("limit", 1)
	}
	x, err := e.explainFind(ctx, db, coll, find.Build(), v)
	if err != nil {
		return nil, err
	}
	x.plan = bson.D{{Key: "stage", Value: stage}, {Key: "inputStage", Value: x.plan}}
	x.nReturned = 0
	return x, nil
}
