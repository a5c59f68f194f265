package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdGetCmdLineOpts(context.Context, *request) ([]byte, error) {
	argv := bson.A{}
	for _, a := range e.cfg.Argv {
		argv = append(argv, a)
	}
	parsed := bson.D{}
	for _, k := range sortedKeys(e.cfg.Options) {
		parsed = append(parsed, bson.E{Key: k, Value: e.cfg.Options[k]})
	}
	return okReply(bson.E{Key: "argv", Value: argv}, bson.E{Key: "parsed", Value: parsed})
}
