package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reads of a view. As MongoDB does, find, count and distinct on a view
// are turned into an aggregate on the view (find's filter a $match, then
// its sort, skip, limit and projection; count's and distinct's likewise),
// which cmdAggregate resolves to the collection the view reads
// (resolveAggregateView): results, cursors, getMore, request units and
// explain are those of that aggregation.

// viewReadAsAggregate turns find, count or distinct (cmd, with body) on
// view name into the aggregate command that answers it.
func viewReadAsAggregate(cmd, name string, body bsoncore.Document) (bsoncore.Document, error) {
	// A collation is checked against the view's when the aggregate
	// resolves the view (resolveAggregateView).
	switch cmd {
	case "find":
		return findAsAggregate(name, body)
	case "count":
		return countAsAggregate(name, body)
	default:
		return distinctAsAggregate(name, body)
	}
}

// findAsAggregate is find on view name as an aggregate, or
// InvalidPipelineOperator for the options an aggregate has no stage for.
func findAsAggregate(name string, body bsoncore.Document) (bsoncore.Document, error) {
	isTrue := func(k string) bool {
		v, err := body.LookupErr(k)
		if err != nil {
			return false
		}
		b, err := boolArg("find", k, v)
		return err == nil && b
	}
	nonEmpty := func(k string) bool {
		v, err := body.LookupErr(k)
		if err != nil {
			return false
		}
		d, ok := v.DocumentOK()
		return ok && len(d) > 5
	}
	unsupported := func(k string) *CommandError {
		return errorf(ErrInvalidPipelineOperator, "Option %s not supported in aggregation.", k)
	}
	for _, k := range []string{"min", "max"} {
		if nonEmpty(k) {
			return nil, unsupported(k)
		}
	}
	for _, k := range []string{"returnKey", "showRecordId"} {
		if isTrue(k) {
			return nil, unsupported(k)
		}
	}
	if isTrue("tailable") {
		return nil, errorf(ErrInvalidPipelineOperator, "Tailable cursors are not supported in aggregation.")
	}
	for _, k := range []string{"noCursorTimeout", "allowPartialResults"} {
		if isTrue(k) {
			return nil, unsupported(k)
		}
	}
	if v, err := body.LookupErr("sort", "$natural"); err == nil && v.Type != 0 {
		return nil, errorf(ErrInvalidPipelineOperator, "Sort option $natural not supported in aggregation.")
	}
	limitOne := false
	if v, err := body.LookupErr("limit"); err == nil {
		f, ok := numberFloat(v)
		limitOne = ok && f == 1
	}
	if isTrue("singleBatch") && !limitOne {
		return nil, unsupported("singleBatch")
	}
	if isTrue("readOnce") {
		return nil, unsupported("readOnce")
	}
	if _, err := parseFind("find", body); err != nil {
		return nil, err
	}

	stages := bsoncore.NewArrayBuilder()
	add := func(stage string, v bsoncore.Value) {
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendValue(stage, v).Build())
	}
	out := bsoncore.NewDocumentBuilder().AppendString("aggregate", name)
	var cursor *bsoncore.DocumentBuilder
	for el := range value.All(body) {
		k, v := el.Key(), el.Value()
		switch k {
		case "filter":
			if d, ok := v.DocumentOK(); ok && len(d) > 5 {
				add("$match", v)
			}
		case "batchSize":
			n, _ := int64Arg("find", k, v)
			if n == 1 && isTrue("singleBatch") {
				n = 2 // a batch of one would leave a cursor open
			}
			cursor = bsoncore.NewDocumentBuilder().AppendInt64("batchSize", n)
		case "hint", "let", "allowDiskUse", "collation":
			out.AppendValue(k, v)
		default:
			if genericFields[k] {
				out.AppendValue(k, v)
			}
		}
	}
	// The stages in MongoDB's order, whatever the order of the fields.
	if v, err := body.LookupErr("sort"); err == nil {
		if d, ok := v.DocumentOK(); ok && len(d) > 5 {
			add("$sort", v)
		}
	}
	for _, k := range []string{"skip", "limit"} {
		if v, err := body.LookupErr(k); err == nil {
			if n, _ := int64Arg("find", k, v); n > 0 {
				add("$"+k, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)})
			}
		}
	}
	if v, err := body.LookupErr("projection"); err == nil {
		if d, ok := v.DocumentOK(); ok && len(d) > 5 {
			add("$project", v)
		}
	}
	if cursor == nil {
		cursor = bsoncore.NewDocumentBuilder()
	}
	return out.AppendArray("pipeline", stages.Build()).AppendDocument("cursor", cursor.Build()).Build(), nil
}

// countAsAggregate is count on view name as an aggregate ending in
// {$count: "count"}.
func countAsAggregate(name string, body bsoncore.Document) (bsoncore.Document, error) {
	args, err := parseCount("count", body)
	if err != nil {
		return nil, err
	}
	stages := bsoncore.NewArrayBuilder()
	if len(args.query) > 5 {
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$match", args.query).Build())
	}
	if args.skip > 0 {
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("$skip", args.skip).Build())
	}
	if args.limit > 0 {
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("$limit", args.limit).Build())
	}
	stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("$count", "count").Build())
	return readAsAggregate(name, body, stages.Build(), "hint", "collation"), nil
}

// distinctAsAggregate is distinct on view name as an aggregate: the
// matching documents, every array on the key's path unwound, grouped into
// one {distinct: [values]}.
func distinctAsAggregate(name string, body bsoncore.Document) (bsoncore.Document, error) {
	args, err := parseDistinct("distinct", body)
	if err != nil {
		return nil, err
	}
	stages := bsoncore.NewArrayBuilder()
	if len(args.query) > 5 {
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$match", args.query).Build())
	}
	parts := strings.Split(args.key, ".")
	for i := range parts {
		unwind := bsoncore.NewDocumentBuilder().
			AppendString("path", "$"+strings.Join(parts[:i+1], ".")).
			AppendBoolean("preserveNullAndEmptyArrays", true).Build()
		stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$unwind", unwind).Build())
	}
	group := bsoncore.NewDocumentBuilder().AppendNull("_id").
		AppendDocument("distinct", bsoncore.NewDocumentBuilder().AppendString("$addToSet", "$"+args.key).Build()).Build()
	stages.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$group", group).Build())
	return readAsAggregate(name, body, stages.Build(), "hint", "collation"), nil
}

// readAsAggregate is {aggregate: name, pipeline, cursor: {}} with the
// fields keep of body and its generic fields.
func readAsAggregate(name string, body bsoncore.Document, pipeline []byte, keep ...string) bsoncore.Document {
	out := bsoncore.NewDocumentBuilder().AppendString("aggregate", name).AppendArray("pipeline", pipeline).
		AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build())
	for el := range value.All(body) {
		if genericFields[el.Key()] || slices.Contains(keep, el.Key()) {
			out.AppendValue(el.Key(), el.Value())
		}
	}
	return out.Build()
}

// readView answers find, count or distinct (req) on view name through the
// aggregate that answers it.
func (e *Engine) readView(ctx context.Context, req *request, name string) ([]byte, error) {
	body, err := viewReadAsAggregate(req.name, name, req.body)
	if err != nil {
		return nil, err
	}
	cmd := req.name
	reply, err := e.runAsAggregate(ctx, req, body)
	if err != nil || cmd == "find" {
		return reply, err
	}
	var result bsoncore.Document
	if batch, err := bsoncore.Document(reply).LookupErr("cursor", "firstBatch"); err == nil {
		if docs := arrayDocs(batch.Data); len(docs) > 0 {
			result = docs[0]
		}
	}
	if cmd == "count" {
		var n int64
		if v, err := result.LookupErr("count"); err == nil {
			n, _ = int64Arg("count", "count", v)
		}
		return okReply(countField(n))
	}
	var vals []bsoncore.Value
	if v, err := result.LookupErr("distinct"); err == nil {
		for el := range value.All(v.Data) {
			vals = append(vals, el.Value())
		}
	}
	// In BSON order, as distinct on a collection answers.
	slices.SortFunc(vals, query.CompareValues)
	arr := bsoncore.NewArrayBuilder()
	size := 0
	for _, v := range vals {
		if size += len(v.Data) + 8; size > wire.MaxBSONObjectSize {
			return nil, errorf(Code(17217), "distinct too big, 16mb cap")
		}
		arr.AppendValue(v)
	}
	// MongoDB answers ok as an int32 here: the reply is made from the
	// aggregation's.
	return bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build()).AppendInt32("ok", 1).Build(), nil
}

// runAsAggregate runs body, an aggregate command, as req.
func (e *Engine) runAsAggregate(ctx context.Context, req *request, body bsoncore.Document) ([]byte, error) {
	name, saved := req.name, req.body
	req.name, req.body = "aggregate", body
	defer func() { req.name, req.body = name, saved }()
	return e.cmdAggregate(ctx, req)
}
