package engine

import (
	"context"
	"encoding/json"
	"time"

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
		warnings := append([]string{}, e.warnings...)
		return okReply(bson.E{Key: "totalLinesWritten", Value: int32(len(warnings))}, bson.E{Key: "log", Value: warnings})
	}
	return nil, errorf(ErrOperationFailed, "no RamLog named: %s", name)
}

// logLine formats one line as MongoDB's structured (JSON) log does, the
// format getLog returns and tools parse: mongosh shows a startup warning
// as "<t>: <msg>" and anything else as "Unexpected log line format".
func logLine(t time.Time, severity, component string, id int, ctx, msg string, tags ...string) string {
	return logLineAttr(t, severity, component, id, ctx, msg, nil, tags...)
}

// logLineAttr is logLine with the line's attributes (attr: any value that
// encodes as a JSON object; nil for none).
func logLineAttr(t time.Time, severity, component string, id int, ctx, msg string, attr any, tags ...string) string {
	type date struct {
		Date string `json:"$date"`
	}
	line := struct {
		T    date     `json:"t"`
		S    string   `json:"s"`
		C    string   `json:"c"`
		ID   int      `json:"id"`
		Ctx  string   `json:"ctx"`
		Msg  string   `json:"msg"`
		Attr any      `json:"attr,omitempty"`
		Tags []string `json:"tags,omitempty"`
	}{date{t.UTC().Format("2006-01-02T15:04:05.000+00:00")}, severity, component, id, ctx, msg, attr, tags}
	b, _ := json.Marshal(line)
	return string(b)
}
