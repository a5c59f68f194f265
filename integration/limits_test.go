package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB's limits and argument checks: each case gets MongoDB 7.0's code
// (0: the command succeeds) and a message containing want.

// rawRoundTrip sends one frame on a connection of its own and returns the
// reply's document (OP_MSG body or OP_REPLY's document).
func rawRoundTrip(t *testing.T, s *Server, frame []byte) bson.Raw {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	var hdr [wire.HeaderSize]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		t.Fatalf("no reply: %v", err)
	}
	n := int(binary.LittleEndian.Uint32(hdr[:]))
	reply := make([]byte, n)
	copy(reply, hdr[:])
	if _, err := io.ReadFull(conn, reply[wire.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	_, doc := hsDecodeReply(t, reply)
	return doc
}

// rawMsg is an OP_MSG with body and, if docs are given, a kind-1 section
// "documents".
func rawMsg(body []byte, docs ...[]byte) []byte {
	parts := [][]byte{hsU32(0), hsBodySec(body)}
	if len(docs) > 0 {
		parts = append(parts, hsSeqSec("documents", docs...))
	}
	return hsFrame(1, wire.OpMsg, parts...)
}

// rawQuery is an OP_QUERY on db.$cmd.
func rawQuery(db string, query []byte) []byte {
	return hsFrame(1, wire.OpQuery, hsLE32(0), hsCstr(db+".$cmd"), hsLE32(0), hsLE32(-1), query)
}

// bigDoc is a document {_id: id, pad: <n bytes>} of about n bytes.
func bigDoc(id any, n int) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", n)}}
}

// rawDoc marshals d, failing the test on error.
func rawDoc(t *testing.T, d any) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withDuplicate is {find: coll, filter: {a: 1}, filter: {b: 2}, $db: db},
// built element by element.
func withDuplicate(coll, db string) []byte {
	f1 := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build()
	f2 := bsoncore.NewDocumentBuilder().AppendInt32("b", 2).Build()
	return bsoncore.NewDocumentBuilder().
		AppendString("find", coll).
		AppendDocument("filter", f1).
		AppendDocument("filter", f2).
		AppendString("$db", db).
		Build()
}

// TestMongoDBLimits runs every limit case and counts them.
func TestMongoDBLimits(t *testing.T) {
	s := StartServer(t, ServerOptions{Dir: t.TempDir()})
	c := newTestClient(t, s)
	const dbn = "limits"
	db := c.Database(dbn)
	ctx := testCtx(t)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	// A collection with 63 secondary indexes: with _id, MongoDB's 64.
	var specs bson.A
	for i := 0; i < 63; i++ {
		specs = append(specs, bson.D{{Key: "key", Value: bson.D{{Key: fmt.Sprintf("i%d", i), Value: 1}}}, {Key: "name", Value: fmt.Sprintf("i%d", i)}})
	}
	runOK(t, db, bson.D{{Key: "createIndexes", Value: "many"}, {Key: "indexes", Value: specs}})

	in17 := make(bson.A, 0, 17<<10)
	for i := 0; i < 17<<10; i++ {
		in17 = append(in17, strings.Repeat("y", 1000))
	}
	sort40 := bson.D{}
	for i := 0; i < 40; i++ {
		sort40 = append(sort40, bson.E{Key: fmt.Sprintf("k%d", i), Value: 1})
	}
	sort32 := sort40[:32]

	type result struct {
		code int32
		msg  string
	}
	// run sends cmd through the driver, without a deadline: with one, the
	// driver adds a maxTimeMS of its own.
	run := func(cmd any) result {
		err := db.RunCommand(context.Background(), cmd).Err()
		var ce mongo.CommandError
		switch {
		case err == nil:
			return result{}
		case errors.As(err, &ce):
			return result{ce.Code, ce.Message}
		}
		t.Fatalf("%v", err)
		return result{}
	}
	// raw sends a frame and reads code and errmsg (a write error's, if
	// the command itself succeeded).
	raw := func(frame []byte) result {
		doc := rawRoundTrip(t, s, frame)
		if ok, _ := doc.Lookup("ok").AsFloat64OK(); ok == 1 {
			if we, err := doc.LookupErr("writeErrors", "0"); err == nil {
				d := we.Document()
				return result{d.Lookup("code").Int32(), d.Lookup("errmsg").StringValue()}
			}
			return result{}
		}
		code, _ := doc.Lookup("code").AsInt64OK()
		return result{int32(code), doc.Lookup("errmsg").StringValue()}
	}

	cases := []struct {
		name string
		do   func() result
		code int32
		want string
	}{
		{"find with a 40 MB filter", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "pad", Value: strings.Repeat("z", 40<<20)}}}})
		}, 10334, "BSONObj size: "},
		{"find with a 17 MB $in", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: in17}}}}}})
		}, 10334, "Size must be between 0 and 16793600(16MB) First element: find: \"c\""},
		{"two 10 MB documents in one kind-1 sequence", func() result {
			return raw(rawMsg(rawDoc(t, bson.D{{Key: "insert", Value: "big"}, {Key: "$db", Value: dbn}}), rawDoc(t, bigDoc(1, 10<<20)), rawDoc(t, bigDoc(2, 10<<20))))
		}, 0, ""},
		{"a 16 MB + 1 KB document in a kind-1 sequence", func() result {
			return raw(rawMsg(rawDoc(t, bson.D{{Key: "insert", Value: "big"}, {Key: "$db", Value: dbn}}), rawDoc(t, bigDoc(3, 16<<20+1<<10))))
		}, 10334, "object to insert too large"},
		{"a 17 MB document in a kind-1 sequence", func() result {
			return raw(rawMsg(rawDoc(t, bson.D{{Key: "insert", Value: "big"}, {Key: "$db", Value: dbn}}), rawDoc(t, bigDoc(4, 17<<20))))
		}, 10334, "BSONObj size: "},
		{"a 65th index", func() result {
			return run(bson.D{{Key: "createIndexes", Value: "many"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "i63", Value: 1}}}, {Key: "name", Value: "i63"}}}}})
		}, 67, "add index fails, too many indexes for limits.many key:{ i63: 1 }"},
		{"a sort of 40 keys", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: sort40}})
		}, 13103, "too many compound keys"},
		{"a sort of 32 keys", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: sort32}})
		}, 0, ""},
		{"maxTimeMS 2^40", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: int64(1) << 40}})
		}, 2, "1099511627776 value for maxTimeMS is out of range"},
		{"maxTimeMS 2^31", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: int64(1) << 31}})
		}, 2, "2147483648 value for maxTimeMS is out of range"},
		{"create in a database named with a dot", func() result {
			err := c.Database("a.b").RunCommand(context.Background(), bson.D{{Key: "create", Value: "c"}}).Err()
			var ce mongo.CommandError
			if errors.As(err, &ce) {
				return result{ce.Code, ce.Message}
			}
			return result{}
		}, 73, "'.' is an invalid character in a db name: a.b"},
		{"find maxTimeMS -1", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: -1}})
		}, 51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '-1'"},
		{"aggregate maxTimeMS -1", func() result {
			return run(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: int64(-1)}})
		}, 51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '-1'"},
		{"count maxTimeMS -1", func() result {
			return run(bson.D{{Key: "count", Value: "c"}, {Key: "maxTimeMS", Value: -1}})
		}, 2, "-1 value for maxTimeMS is out of range"},
		{"maxTimeMS 2^31-1", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: int64(1)<<31 - 1}})
		}, 0, ""},
		{"readConcern a string", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: "majority"}})
		}, 9, "readConcern field should be an object"},
		{"readConcern a number", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: 1}})
		}, 9, "readConcern field should be an object"},
		{"readConcern level bogus", func() result {
			return run(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "bogus"}}}})
		}, 9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'"},
		{"filter given twice", func() result {
			return run(bson.Raw(withDuplicate("c", dbn)))
		}, 40413, "BSON field 'find.filter' is a duplicate field"},
		{"txnNumber without lsid", func() result {
			return raw(rawMsg(rawDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 9}}}}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: dbn}})))
		}, 72, "Transaction number requires a session ID to also be specified"},
		{"wtimeout a string", func() result {
			return run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 10}}}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}, {Key: "wtimeout", Value: "x"}}}})
		}, 14, "BSON field 'writeConcern.wtimeout' is the wrong type 'string'"},
		{"an _id index with unique: false", func() result {
			return run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: false}}}}})
		}, 197, "The field 'unique' is not valid for an _id index specification"},
		{"shardCollection admin.x", nil, 20, "can't shard the admin db"},
		{"shardCollection config.x", nil, 20, "only special collections in the config db may be sharded"},
		{"insert over OP_QUERY", func() result {
			return raw(rawQuery(dbn, rawDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 11}}}}})))
		}, 352, "Unsupported OP_QUERY command: insert. The client driver may require an upgrade."},
		{"hello over OP_QUERY", func() result {
			return raw(rawQuery("admin", rawDoc(t, bson.D{{Key: "hello", Value: 1}})))
		}, 0, ""},
	}
	shard := func(ns string) func() result {
		return func() result {
			err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err()
			var ce mongo.CommandError
			if err == nil {
				return result{}
			}
			if !errors.As(err, &ce) {
				t.Fatal(err)
			}
			return result{ce.Code, ce.Message}
		}
	}
	for i := range cases { // the shardCollection cases run against admin
		if strings.HasPrefix(cases[i].name, "shardCollection ") {
			cases[i].do = shard(strings.TrimPrefix(cases[i].name, "shardCollection "))
		}
	}

	failed := 0
	for _, tc := range cases {
		got := tc.do()
		if got.code != tc.code || !strings.Contains(got.msg, tc.want) {
			failed++
			msg := got.msg
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
			t.Errorf("%s: code %d %q, want %d with %q", tc.name, got.code, msg, tc.code, tc.want)
		}
	}
	t.Logf("%d limit cases, %d as MongoDB answers", len(cases), len(cases)-failed)
	if len(cases) != 26 {
		t.Errorf("%d cases, want 26", len(cases))
	}
	// The refused commands changed nothing; the accepted insert did.
	if n, err := db.Collection("big").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Errorf("collection big has %d documents (%v), want the two 10 MB ones", n, err)
	}
	if n, err := db.Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("collection c has %d documents (%v), want 1", n, err)
	}
}
