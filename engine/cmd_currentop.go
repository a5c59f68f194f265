package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCurrentOp is the currentOp command, which MongoDB 7.0 runs as a
// $currentOp aggregation: {currentOp: 1, $ownOps, $all, <filter>} lists
// as inprog the operations the $currentOp stage lists (Parsec's are all
// active, so $all adds none) that match the other fields, a query
// filter. $ownOps: true keeps the caller's own.
func (e *Engine) cmdCurrentOp(_ context.Context, req *request) ([]byte, error) {
	own := false
	filter := bsoncore.NewDocumentBuilder()
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch {
		case k == "$ownOps":
			b, err := boolArg(req.name, k, v)
			if err != nil {
				return nil, err
			}
			own = b
		case k == "$all":
			if _, err := boolArg(req.name, k, v); err != nil {
				return nil, err
			}
		case genericFields[k]:
		default:
			filter.AppendValue(k, v)
		}
	}
	f, err := compileFilter(filter.Build())
	if err != nil {
		return nil, err
	}
	var only func(*conn) bool
	if own {
		me := req.c.cursorOwner()
		only = func(c *conn) bool { return c.cursorOwner() == me }
	}
	inprog := bson.A{}
	docs := currentOpDocs(e.running.snapshot(), e.hostPort(), e.now(), only)
	if only == nil {
		docs = append(docs, e.reshardingOpDocs(e.hostPort(), e.now())...)
	}
	for _, d := range docs {
		if f.Match(d) {
			inprog = append(inprog, bson.Raw(d))
		}
	}
	return okReply(bson.E{Key: "inprog", Value: inprog})
}
