package query

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
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
//	position                       (MatchPosition: the positional $ index)
//	<filter>
//	<document>...
//	----
//	yes <pos>|no  <document>...
//
//	id-equality
//	<filter>
//	----
//	<value as extended JSON> | none
//
//	sort                           (documents in sorted order; stable)
//	<sort spec>
//	<document>...
//	----
//	<document>... | error (<category>): <message>
//
//	project                        (a "filter <filter>" line may follow the spec)
//	<projection>
//	<document>...
//	----
//	<projected document> | error (<category>): <message>   (one per document)
//
//	explain                        (why a document fails: errInfo.details)
//	<filter>
//	<document>
//	----
//	<details as relaxed extended JSON>
//
// Expected outputs are MongoDB's answers (see the comments in the files),
// not a recording of ours: do not --rewrite without checking each change.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(filepath.ToSlash(path), "testdata/fuzz/") {
			return // FuzzLanguage's corpus, not a script
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			switch d.Cmd {
			case "sort":
				return runSort(t, d, lines)
			case "project":
				return runProject(t, d, lines)
			case "explain":
				return runExplain(t, d, lines)
			}
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
					ok, err := f.MatchErr(parse(t, d.Pos, line))
					switch {
					case err != nil:
						verdict = fmt.Sprintf("error (%s): %v", category(err), err)
					case ok:
						verdict = "yes"
					}
					if f.Match(parse(t, d.Pos, line)) != ok {
						d.Fatalf(t, "Match and MatchErr disagree on %s", line)
					}
					fmt.Fprintf(&out, "%s %s\n", verdict, line)
				}
				return out.String()
			case "position":
				if err != nil {
					d.Fatalf(t, "compile %s: %v", lines[0], err)
				}
				var out strings.Builder
				for _, line := range lines[1:] {
					ok, pos := f.MatchPosition(parse(t, d.Pos, line))
					if ok {
						fmt.Fprintf(&out, "yes %d %s\n", pos, line)
					} else {
						fmt.Fprintf(&out, "no    %s\n", line)
					}
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

func runSort(t *testing.T, d *datadriven.TestData, lines []string) string {
	s, err := CompileSort(parse(t, d.Pos, lines[0]))
	if err != nil {
		return fmt.Sprintf("error (%s): %v\n", category(err), err)
	}
	docs := make([]bsoncore.Document, 0, len(lines)-1)
	for _, line := range lines[1:] {
		docs = append(docs, parse(t, d.Pos, line))
	}
	byKeys := slices.Clone(docs)
	slices.SortStableFunc(docs, s.Compare)
	slices.SortStableFunc(byKeys, func(a, b bsoncore.Document) int { return s.CompareKeys(s.Keys(a), s.Keys(b)) })
	var out strings.Builder
	for i, doc := range docs {
		if !bytes.Equal(doc, byKeys[i]) {
			d.Fatalf(t, "Compare and CompareKeys order differently")
		}
		out.WriteString(relaxed(t, doc) + "\n")
	}
	return out.String()
}

func runProject(t *testing.T, d *datadriven.TestData, lines []string) string {
	spec := parse(t, d.Pos, lines[0])
	docs := lines[1:]
	var filter *Filter
	if len(docs) > 0 && strings.HasPrefix(docs[0], "filter ") {
		var err error
		if filter, err = Compile(parse(t, d.Pos, strings.TrimPrefix(docs[0], "filter "))); err != nil {
			d.Fatalf(t, "filter: %v", err)
		}
		docs = docs[1:]
	}
	p, err := CompileProjection(spec, filter, Options{})
	if err != nil {
		return fmt.Sprintf("error (%s): %v\n", category(err), err)
	}
	var out strings.Builder
	for _, line := range docs {
		got, err := p.Apply(parse(t, d.Pos, line))
		if err != nil {
			fmt.Fprintf(&out, "error (%s): %v\n", category(err), err)
			continue
		}
		out.WriteString(relaxed(t, got) + "\n")
	}
	return out.String()
}

// relaxed renders a document as relaxed extended JSON.
func relaxed(t *testing.T, doc bsoncore.Document) string {
	b, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
	if err != nil {
		t.Fatalf("render %v: %v", doc, err)
	}
	return spaced(string(b))
}

// spaced adds a space after each ':' and ',' outside strings, as the
// testdata files are written.
func spaced(s string) string {
	var out strings.Builder
	inString, escaped := false, false
	for _, c := range s {
		out.WriteRune(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ':' || c == ','):
			out.WriteByte(' ')
		}
	}
	return out.String()
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

// category names the error category err wraps.
func category(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{langerr.ErrBadValue, "BadValue"}, {langerr.ErrTypeMismatch, "TypeMismatch"}, {langerr.ErrFailedToParse, "FailedToParse"},
		{langerr.ErrNotImplemented, "NotImplemented"}, {ErrNeedsIndex, "NeedsIndex"}, {ErrNoPlan, "NoPlan"},
		{ErrBadSortKey, "BadSortKey"}, {ErrBadSortOrder, "BadSortOrder"}, {ErrBadSortMeta, "BadSortMeta"},
		{ErrFieldPathEmpty, "FieldPathEmpty"}, {ErrFieldPathEmptyPart, "FieldPathEmptyPart"},
		{ErrFieldPathDollar, "FieldPathDollar"},
		{ErrProjectionExclusionInInclusion, "ExclusionInInclusion"},
		{ErrProjectionInclusionInExclusion, "InclusionInExclusion"},
		{ErrProjectionPathCollision, "PathCollision"}, {ErrProjectionPathCollisionPrefix, "PathCollisionPrefix"},
		{ErrProjectionPositional, "Positional"}, {ErrPositionalNoMatch, "PositionalNoMatch"},
		{ErrProjectionElemMatchNested, "ElemMatchNested"}, {ErrProjectionSliceBad, "BadSlice"},
		{ErrProjectionEmptyPath, "EmptyPath"}, {ErrProjectionBadMeta, "BadMeta"},
		{expr.ErrUnknownOperator, "expr.UnknownOperator"},
		{expr.ErrUndefinedVariable, "expr.UndefinedVariable"}, {expr.ErrArity, "expr.Arity"},
		{expr.ErrDivideByZero, "expr.DivideByZero"}, {expr.ErrSizeNotArray, "expr.SizeNotArray"},
		{expr.ErrInvalidRegex, "InvalidRegex"}, {expr.ErrBadRegexOptions, "BadRegexOptions"},
		{expr.ErrFieldPath, "expr.FieldPath"}, {expr.ErrExpressionSpec, "expr.ExpressionSpec"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
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
	if _, err := Compile(bsoncore.Document{20, 0, 0, 0, 0}); !errors.Is(err, langerr.ErrFailedToParse) {
		t.Errorf("malformed BSON: err = %v, want langerr.ErrFailedToParse", err)
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
