package agg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzPipeline compiles arbitrary pipelines (the "p" array of any valid
// BSON document) and runs them, whole and split over two partitions, on
// arbitrary documents: bad input must give an error, never a panic, and
// every document produced must be valid BSON. Seeds are the testdata
// pipelines.
//
//	go test ./engine/agg -run '^$' -fuzz FuzzPipeline -fuzztime 30s
func FuzzPipeline(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "[") {
				continue
			}
			var raw bson.Raw
			if bson.UnmarshalExtJSON([]byte(`{"p": `+line+`}`), false, &raw) == nil {
				f.Add([]byte(raw), []byte(`{"_id": 1, "a": [1, {"b": 2}], "c": "x"}`))
			}
		}
	}
	f.Fuzz(func(t *testing.T, spec, doc []byte) {
		if wire.ValidateDocument(spec) != nil || wire.ValidateDocument(doc) != nil { // what commands are handed
			return
		}
		v, err := bsoncore.Document(spec).LookupErr("p")
		if err != nil || v.Type != bsoncore.TypeArray {
			return
		}
		colls := newMemColls()
		colls.set("input", []bsoncore.Document{doc, doc})
		p, err := Parse(v.Data, Options{DB: "test", Coll: "input", Collections: colls, Now: time.Unix(0, 0), MemoryLimit: 1 << 20,
			TempDir: t.TempDir(), AllowDiskUse: true})
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		check := func(it Iterator) {
			_ = Drain(ctx, it, func(d bsoncore.Document) error {
				if err := d.Validate(); err != nil {
					t.Fatalf("%v on %v gave invalid BSON: %v", v, bson.Raw(doc), err)
				}
				return nil
			})
		}
		check(p.Run(Docs([]bsoncore.Document{doc, doc})))
		check(p.Split().Run([]Iterator{Docs([]bsoncore.Document{doc}), Docs([]bsoncore.Document{doc})}, 2))
	})
}
