package expr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzExpression compiles arbitrary expressions (the "e" field of any
// valid BSON document) and evaluates them against arbitrary documents:
// bad input must give an error, never a panic. Seeds are the testdata
// expressions.
//
//	go test ./engine/expr -run '^$' -fuzz FuzzExpression -fuzztime 30s
func FuzzExpression(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, file := range files {
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var raw bson.Raw
			if bson.UnmarshalExtJSON([]byte(`{"e": `+line+`}`), false, &raw) == nil {
				f.Add([]byte(raw), []byte(`{"a": 1}`))
			}
		}
	}
	f.Fuzz(func(t *testing.T, spec, doc []byte) {
		if wire.ValidateDocument(spec) != nil || wire.ValidateDocument(doc) != nil { // what commands are handed
			return
		}
		v, err := bsoncore.Document(spec).LookupErr("e")
		if err != nil {
			return
		}
		scope := NewScope()
		e, err := Compile(v, scope)
		if err != nil {
			return
		}
		r, err := e.Eval(NewContext(scope, doc, time.Unix(0, 0)))
		if err == nil && (r.Type == bsoncore.TypeEmbeddedDocument || r.Type == bsoncore.TypeArray) {
			if verr := bsoncore.Document(r.Data).Validate(); verr != nil {
				t.Fatalf("%v on %v gave invalid BSON: %v", v, bson.Raw(doc), verr)
			}
		}
	})
}
