package agg

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkGroup measures the $group of `make bench`'s aggregation
// workload on documents held in memory: the pipeline's own cost per
// document, without storage.
func BenchmarkGroup(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("doc=%dB", size), func(b *testing.B) {
			docs := make([]bsoncore.Document, 10_000)
			for i := range docs {
				d := bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).
					AppendString("cat", fmt.Sprintf("category-%d", i%8)).AppendInt32("amt", int32(i%1000)).Build()
				pad := max(size-len(d)-10, 0)
				docs[i] = bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).
					AppendString("cat", fmt.Sprintf("category-%d", i%8)).AppendInt32("amt", int32(i%1000)).
					AppendString("pad", string(make([]byte, pad))).Build()
			}
			pipeline := parseArrayB(b, `[{"$group": {"_id": "$cat", "n": {"$sum": 1}, "total": {"$sum": "$amt"}, "avg": {"$avg": "$amt"}}}]`)
			p, err := Parse(pipeline, Options{})
			if err != nil {
				b.Fatal(err)
			}
			split := p.Split()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				n := 0
				err := Drain(context.Background(), split.Run([]Iterator{Docs(append([]bsoncore.Document(nil), docs...))}, 1), func(bsoncore.Document) error {
					n++
					return nil
				})
				if err != nil || n != 8 {
					b.Fatalf("%d groups, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.N*len(docs))/b.Elapsed().Seconds(), "docs/s")
		})
	}
}

func parseArrayB(b *testing.B, s string) bsoncore.Document {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &raw); err != nil {
		b.Fatal(err)
	}
	return bsoncore.Document(raw).Lookup("v").Data
}
