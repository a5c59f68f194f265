package update

import (
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkApply measures Parse and Apply of common updates on documents
// of growing size (a string payload and an array of n numbers).
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{10, 1000} {
		arr := bsoncore.NewArrayBuilder()
		for i := range n {
			arr.AppendInt32(int32(i))
		}
		doc := bsoncore.NewDocumentBuilder().
			AppendInt64("_id", 1).
			AppendInt64("seq", 0).
			AppendString("payload", strings.Repeat("x", 900)).
			AppendDocument("sub", bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build()).
			AppendArray("arr", arr.Build()).
			Build()
		for _, tc := range []struct{ name, spec string }{
			{"inc", `{"$inc": {"seq": 1}}`},
			{"set-nested", `{"$set": {"sub.b": "x", "sub.a": 2}}`},
			{"push", `{"$push": {"arr": 1}}`},
			{"all-positional", `{"$inc": {"arr.$[]": 1}}`},
		} {
			b.Run(tc.name+"/arr="+strconv.Itoa(n), func(b *testing.B) {
				spec := parseDoc(&testing.T{}, "bench", tc.spec)
				v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: spec}
				env := Env{}
				b.ReportAllocs()
				b.SetBytes(int64(len(doc)))
				for b.Loop() {
					u, err := Parse(v, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if _, _, err := u.Apply(doc, env); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
