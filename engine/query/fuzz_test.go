package query

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzLanguage feeds arbitrary filters, sorts and projections (any valid
// BSON) and documents to the compilers and to matching, sorting and
// projecting: bad input must give an error, never a panic. Seeds are the
// JSON lines of testdata.
//
//	go test ./engine/query -run '^$' -fuzz FuzzLanguage -fuzztime 30s
func FuzzLanguage(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	var docs [][]byte
	for _, file := range files {
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimPrefix(strings.TrimSpace(line), "filter ")
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var raw bson.Raw
			if bson.UnmarshalExtJSON([]byte(line), false, &raw) == nil {
				docs = append(docs, raw)
			}
		}
	}
	for i, d := range docs {
		f.Add([]byte(d), []byte(docs[(i*7+3)%len(docs)]))
	}
	f.Fuzz(func(t *testing.T, spec, doc []byte) {
		if wire.ValidateDocument(spec) != nil || wire.ValidateDocument(doc) != nil { // what commands are handed
			return
		}
		filter, err := Compile(spec)
		if err == nil {
			filter.Match(doc)
			_, _ = filter.MatchErr(doc)
			filter.MatchPosition(doc)
			filter.IDEquality()
		}
		if s, err := CompileSort(spec); err == nil {
			s.Compare(doc, spec)
			s.CompareKeys(s.Keys(doc), s.Keys(spec))
		}
		if p, err := CompileProjection(spec, filter, Options{}); err == nil {
			out, err := p.Apply(doc)
			if err == nil {
				if verr := bsoncore.Document(out).Validate(); verr != nil {
					t.Fatalf("projection %v of %v made invalid BSON: %v", bson.Raw(spec), bson.Raw(doc), verr)
				}
			}
		}
		DistinctValues(doc, "a.b", func(bsoncore.Value) {})
	})
}
