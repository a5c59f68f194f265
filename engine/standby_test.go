package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Which commands a standby may answer from its own replica.
func TestMayReadFromFollower(t *testing.T) {
	sec := bson.D{{Key: "mode", Value: "secondary"}}
	cases := []struct {
		name string
		cmd  bson.D
		want bool
	}{
		{"find, secondary", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: sec}}, true},
		{"find, nearest", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "nearest"}}}}, true},
		{"find, primaryPreferred", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}}}, false},
		{"find, no preference", bson.D{{Key: "find", Value: "c"}}, false},
		{"find in a transaction", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: sec}, {Key: "txnNumber", Value: int64(1)}}, false},
		{"find, linearizable", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: sec}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}}, false},
		{"find, afterClusterTime", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: sec}, {Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{T: 1}}}}}, false},
		{"find, majority", bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: sec}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}}}, true},
		{"aggregate", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}, {Key: "$readPreference", Value: sec}}, true},
		{"aggregate $out", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "d"}}}}, {Key: "$readPreference", Value: sec}}, false},
		{"aggregate $changeStream", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "$readPreference", Value: sec}}, false},
		{"insert", bson.D{{Key: "insert", Value: "c"}, {Key: "$readPreference", Value: sec}}, false},
		{"getMore", bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "c"}}, true},
	}
	for _, c := range cases {
		body, _ := bson.Marshal(c.cmd)
		if got := MayReadFromFollower(body); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
