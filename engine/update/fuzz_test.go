package update

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzUpdate feeds arbitrary update specifications, documents and array
// filters (any BSON the wire accepts) to Parse, Apply and Upsert. Bad input must give
// an error of one of the package's categories, never a panic; a success
// must give valid BSON that keeps the document's _id first, and the input
// document must be left as it was. Seeds are the statements of testdata.
//
//	go test ./engine/update -run '^$' -fuzz FuzzUpdate -fuzztime 30s
func FuzzUpdate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s[0], s[1], s[2], 0)
	}
	env := Env{Now: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Timestamp: Timestamp{T: 1700000000, I: 1}}
	f.Fuzz(func(t *testing.T, wrapped, doc, filters []byte, pos int) {
		// What the wire accepts (deeply validated BSON) is what commands
		// hand this package.
		if wire.ValidateDocument(wrapped) != nil || wire.ValidateDocument(doc) != nil || wire.ValidateDocument(filters) != nil {
			return
		}
		// The specification is the first value of wrapped, so a fuzzed
		// input can be a document (operators, replacement) or an array
		// (pipeline) alike.
		first, err := bsoncore.Document(wrapped).IndexErr(0)
		if err != nil {
			return
		}
		var af []bsoncore.Document
		vals, _ := bsoncore.Document(filters).Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				af = append(af, d)
			}
		}
		u, err := Parse(first.Value(), Options{ArrayFilters: af, Immutable: []string{"sk"}})
		if err != nil {
			checkCategory(t, err)
			return
		}
		before := bytes.Clone(doc)
		e := env
		if pos >= 0 && pos < 64 {
			e.Position, e.HasPosition = pos, true
		}
		out, changed, err := u.Apply(doc, e)
		if !bytes.Equal(doc, before) {
			t.Fatalf("Apply changed its input document")
		}
		if err != nil {
			checkCategory(t, err)
		} else {
			checkResult(t, doc, out, changed)
		}
		ins, err := u.Upsert(doc, e)
		if !bytes.Equal(doc, before) {
			t.Fatalf("Upsert changed its query document")
		}
		if err != nil {
			checkCategory(t, err)
		} else if err := bsoncore.Document(ins).Validate(); err != nil {
			t.Fatalf("Upsert gave invalid BSON: %v", err)
		}
	})
}

// checkCategory fails unless err is one the commands map to a MongoDB
// code: an *Error of this package, or an expression error (pipeline
// updates) of one of package expr's categories.
func checkCategory(t *testing.T, err error) {
	t.Helper()
	var ue *Error
	if errors.As(err, &ue) {
		return
	}
	for _, c := range []error{langerr.ErrBadValue, langerr.ErrTypeMismatch, langerr.ErrFailedToParse, expr.ErrUnknownOperator,
		expr.ErrUndefinedVariable, expr.ErrArity, expr.ErrInvalidRegex, expr.ErrBadRegexOptions, langerr.ErrNotImplemented,
		expr.ErrConversion, expr.ErrFieldPath, expr.ErrExpressionSpec, expr.ErrDivideByZero, expr.ErrNoSwitchBranch, expr.ErrTimezone} {
		if errors.Is(err, c) {
			return
		}
	}
	t.Fatalf("error outside every category: %v", err)
}

// checkResult checks an applied update: valid BSON, an _id equal to the
// one before (an update may not change it, though $set may write an
// equal number of another type, as MongoDB allows), and changed set
// exactly when the bytes differ.
func checkResult(t *testing.T, doc, out bsoncore.Document, changed bool) {
	t.Helper()
	if err := out.Validate(); err != nil {
		t.Fatalf("Apply gave invalid BSON: %v", err)
	}
	if changed == bytes.Equal(doc, out) {
		t.Fatalf("changed is %v, but the result equal to the input is %v", changed, bytes.Equal(doc, out))
	}
	id, err := doc.LookupErr("_id")
	if err != nil {
		return
	}
	got, err := out.LookupErr("_id")
	if err != nil || !value.Equal(id, got) {
		t.Fatalf("_id changed from %v to %v", id, got)
	}
}

// fuzzSeeds reads testdata's statements as (wrapped spec, document,
// array filters) triples.
func fuzzSeeds(f *testing.F) [][3][]byte {
	var seeds [][3][]byte
	_ = filepath.Walk("testdata", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, block := range strings.Split(string(b), "\n\n") {
			var lines []string
			for _, l := range strings.Split(block, "\n") {
				if l = strings.TrimSpace(l); l == "----" {
					break
				}
				if strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") {
					lines = append(lines, l)
				}
			}
			if len(lines) < 2 {
				continue
			}
			var doc, spec, filters bson.Raw
			if bson.UnmarshalExtJSON([]byte(lines[0]), false, &doc) != nil ||
				bson.UnmarshalExtJSON([]byte(`{"u": `+lines[1]+`}`), false, &spec) != nil {
				continue
			}
			filters, _ = bson.Marshal(bson.D{})
			if len(lines) > 2 {
				var fs bson.Raw
				if bson.UnmarshalExtJSON([]byte(`{"f": `+lines[2]+`}`), false, &fs) == nil {
					filters = fs
				}
			}
			seeds = append(seeds, [3][]byte{spec, doc, filters})
		}
		return nil
	})
	if len(seeds) == 0 {
		f.Fatal("no seeds in testdata")
	}
	return seeds
}
