package engine

import (
	"context"
	"runtime"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdHostInfo(context.Context, *request) ([]byte, error) {
	memMB := int64(totalMemoryBytes() / (1 << 20))
	osName, osVersion := osNameVersion()
	return okReply(
		bson.E{Key: "system", Value: bson.D{
			{Key: "currentTime", Value: bson.NewDateTimeFromTime(e.now())},
			{Key: "hostname", Value: e.host},
			{Key: "cpuAddrSize", Value: int32(64)},
			{Key: "memSizeMB", Value: memMB},
			{Key: "memLimitMB", Value: memMB},
			{Key: "numCores", Value: int32(runtime.NumCPU())},
			{Key: "cpuArch", Value: runtime.GOARCH},
			{Key: "numaEnabled", Value: false},
		}},
		bson.E{Key: "os", Value: bson.D{{Key: "type", Value: osType()}, {Key: "name", Value: osName}, {Key: "version", Value: osVersion}}},
		bson.E{Key: "extra", Value: bson.D{{Key: "goVersion", Value: runtime.Version()}}},
	)
}
