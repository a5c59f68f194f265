package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdGetLog answers getLog: '*' (the log names), 'global' (recent lines)
// and 'startupWarnings'.
func (e *Engine) cmdGetLog(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	name, ok := v.StringValueOK()
	if !ok {
		return nil, wrongType(req.name, "getLog", v, "string")
	}
	switch name {
	case "*":
		return okReply(bson.E{Key: "names", Value: bson.A{"global", "startupWarnings"}})
	case "global":
		lines, total := e.logs.snapshot()
		return okReply(bson.E{Key: "totalLinesWritten", Value: int32(total)}, bson.E{Key: "log", Value: lines})
	case "startupWarnings":
		warnings := append([]string{}, e.cfg.StartupWarnings...)
		return okReply(bson.E{Key: "totalLinesWritten", Value: int32(len(warnings))}, bson.E{Key: "log", Value: warnings})
	}
	return nil, errorf(ErrOperationFailed, "no RamLog named: %s", name)
}
