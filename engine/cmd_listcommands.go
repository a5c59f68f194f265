package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdListCommands(context.Context, *request) ([]byte, error) {
	cmds := bson.D{}
	for _, name := range sortedKeys(e.commands) {
		c := e.commands[name]
		cmds = append(cmds, bson.E{Key: name, Value: bson.D{
			{Key: "help", Value: c.help},
			{Key: "adminOnly", Value: c.adminOnly},
			{Key: "apiVersions", Value: bson.A{}},
			{Key: "deprecatedApiVersions", Value: bson.A{}},
		}})
	}
	return okReply(bson.E{Key: "commands", Value: cmds})
}
