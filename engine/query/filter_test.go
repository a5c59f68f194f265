package query

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/datadriven"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDataDriven replays testdata/*. Each file is a list of directives:
//
//	compile
//	<filter as extended JSON>
//	----
//	ok | error (<category>): <message>
//
//	match
//	<filter>
//	<document>...
//	----
//	yes|no  <document>...
//
//	id-equality
//	<filter>
//	----
//	<value as extended JSON> | none
//
// Expected outputs are MongoDB's answers (see the comments in the files),
// not a recording of ours: do not --rewrite without checking each change.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			f, err := Compile(parse(t, d.Pos, lines[0]))
			switch d.Cmd {
			case "compile":
				if err != nil {
					return fmt.Sprintf("error (%s): %v\n", category(err), err)
				}
				return "ok\n"
			case "match":
				if err != nil {
					d.Fatalf(t, "compile %s: %v", lines[0], err)
				}
				var out strings.Builder
				for _, line := range lines[1:] {
					verdict := "no "
					if f.Match(parse(t, d.Pos, line)) {
						verdict = "yes"
					}
					fmt.Fprintf(&out, "%s %s\n", verdict, line)
				}
				return out.String()
			case "id-equality":
				if err != nil {
					d.Fatalf(t, "compile %s: %v", lines[0], err)
				}
				v, ok := f.IDEquality()
				if !ok {
					return "none\n"
				}
				return v.String() + "\n"
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// parse reads one line of relaxed extended JSON into BSON.
func parse(t *testing.T, pos, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("%s: bad extended JSON %s: %v", pos, s, err)
	}
	return bsoncore.Document(raw)
}

func category(err error) string {
	switch {
	case errors.Is(err, ErrBadValue):
		return "BadValue"
	case errors.Is(err, ErrTypeMismatch):
		return "TypeMismatch"
	case errors.Is(err, ErrFailedToParse):
		return "FailedToParse"
	}
	return "uncategorized"
}

func mustParse(t *testing.T, s string) bsoncore.Document { return parse(t, "", s) }

// TestCompileDoesNotAlias: a compiled filter owns its bytes, since cursors
// keep it after the request buffer is reused.
func TestCompileDoesNotAlias(t *testing.T) {
	filter := mustParse(t, `{"a": {"$eq": "x"}, "$and": [{"b": 1}]}`)
	f, err := Compile(filter)
	if err != nil {
		t.Fatal(err)
	}
	for i := range filter {
		filter[i] = 0xff
	}
	if !f.Match(mustParse(t, `{"a": "x", "b": 1}`)) || f.Match(mustParse(t, `{"a": "y", "b": 1}`)) {
		t.Errorf("the filter changed with the buffer it was compiled from")
	}
}

func TestEmptyFilterMatchesAll(t *testing.T) {
	for _, filter := range []bsoncore.Document{nil, mustParse(t, `{}`), mustParse(t, `{"$comment": "x"}`)} {
		f, err := Compile(filter)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Match(mustParse(t, `{"a": 1}`)) || !f.Match(mustParse(t, `{}`)) {
			t.Errorf("filter %v does not match everything", filter)
		}
	}
}

func TestCompileMalformed(t *testing.T) {
	if _, err := Compile(bsoncore.Document{20, 0, 0, 0, 0}); !errors.Is(err, ErrFailedToParse) {
		t.Errorf("malformed BSON: err = %v, want ErrFailedToParse", err)
	}
}

func TestMatchConcurrent(t *testing.T) {
	f, err := Compile(mustParse(t, `{"a.b": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	yes, no := mustParse(t, `{"a": [{"b": 2}, {"b": 1}]}`), mustParse(t, `{"a": [{"b": 2}]}`)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				if !f.Match(yes) || f.Match(no) {
					t.Error("wrong answer under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkMatch(b *testing.B) {
	var raw bson.Raw
	_ = bson.UnmarshalExtJSON([]byte(`{"a.b": 3}`), false, &raw)
	f, _ := Compile(bsoncore.Document(raw))
	_ = bson.UnmarshalExtJSON([]byte(`{"_id": 1, "x": "y", "a": [{"b": 1}, {"b": 2}, {"b": 3}]}`), false, &raw)
	d := bsoncore.Document(raw)
	b.ReportAllocs()
	for b.Loop() {
		f.Match(d)
	}
}
