package engine

import (
	"context"
	"runtime"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func (e *Engine) cmdBuildInfo(context.Context, *request) ([]byte, error) {
	return okReply(
		bson.E{Key: "version", Value: MongoVersion},
		bson.E{Key: "gitVersion", Value: "parsec-" + Version},
		bson.E{Key: "versionArray", Value: bson.A{int32(7), int32(0), int32(0), int32(0)}},
		bson.E{Key: "parsecVersion", Value: Version},
		bson.E{Key: "modules", Value: bson.A{}},
		bson.E{Key: "allocator", Value: "go"},
		bson.E{Key: "javascriptEngine", Value: "none"},
		bson.E{Key: "sysInfo", Value: "deprecated"},
		bson.E{Key: "openssl", Value: bson.D{{Key: "running", Value: "disabled"}, {Key: "compiled", Value: "disabled"}}},
		bson.E{Key: "buildEnvironment", Value: bson.D{
			{Key: "distmod", Value: ""}, {Key: "distarch", Value: runtime.GOARCH},
			{Key: "target_os", Value: runtime.GOOS}, {Key: "target_arch", Value: runtime.GOARCH},
			{Key: "cc", Value: runtime.Version()},
		}},
		bson.E{Key: "bits", Value: int32(64)},
		bson.E{Key: "debug", Value: false},
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "storageEngines", Value: bson.A{"badger"}},
	)
}
