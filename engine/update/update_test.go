package update

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDataDriven replays testdata/*. Directives:
//
//	apply [pos=<n>]
//	<document>
//	<update: document or array>
//	<array filter>...
//	----
//	<updated document> | unchanged | error <CodeName>: <message>
//
//	upsert
//	<query>
//	<update>
//	<array filter>...
//	----
//	<inserted document> | error <CodeName>: <message>
//
//	parse
//	<update>
//	<array filter>...
//	----
//	ok | error <CodeName>: <message>
//
// Documents are extended JSON (relaxed: 1 is an int, 1.0 a double); the
// output writes ints as 1, longs as NumberLong(1), doubles as 1.0 and
// decimals as NumberDecimal("1"). Expected outputs are MongoDB 7.0's
// answers, not a recording of ours: check each change a --rewrite makes.
func TestDataDriven(t *testing.T) {
	t.Parallel()
	env := Env{Now: time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC), Timestamp: Timestamp{T: 1700000000, I: 7}}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			need := map[string]int{"apply": 2, "upsert": 2, "parse": 1}[d.Cmd]
			if need == 0 {
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			if len(lines) < need {
				d.Fatalf(t, "%s needs %d lines", d.Cmd, need)
			}
			specLine := lines[need-1]
			var filters []bsoncore.Document
			for _, l := range lines[need:] {
				filters = append(filters, parseDoc(t, d.Pos, l))
			}
			u, err := Parse(parseValue(t, d.Pos, specLine), Options{ArrayFilters: filters})
			if err != nil {
				return showError(t, err)
			}
			switch d.Cmd {
			case "parse":
				return "ok\n"
			case "apply":
				e := env
				for _, arg := range d.CmdArgs {
					if arg.Key == "pos" {
						n, _ := strconv.Atoi(arg.Vals[0])
						e.Position, e.HasPosition = n, true
					}
				}
				doc := parseDoc(t, d.Pos, lines[0])
				out, changed, err := u.Apply(doc, e)
				if err != nil {
					return showError(t, err)
				}
				if !changed {
					if string(out) != string(doc) {
						t.Errorf("%s: unchanged, but the result differs from the input", d.Pos)
					}
					return "unchanged\n"
				}
				if string(out) == string(doc) {
					t.Errorf("%s: changed, but the result is the input", d.Pos)
				}
				return show(out) + "\n"
			default:
				out, err := u.Upsert(parseDoc(t, d.Pos, lines[0]), env)
				if err != nil {
					return showError(t, err)
				}
				return show(out) + "\n"
			}
		})
	})
}

var codeNames = []struct {
	cat  error
	name string
}{
	{ErrBadValue, "BadValue"},
	{ErrFailedToParse, "FailedToParse"},
	{ErrTypeMismatch, "TypeMismatch"},
	{ErrPathNotViable, "PathNotViable"},
	{ErrConflictingOperators, "ConflictingUpdateOperators"},
	{ErrDollarPrefixedField, "DollarPrefixedFieldName"},
	{ErrInvalidIDField, "InvalidIdField"},
	{ErrNotSingleValueField, "NotSingleValueField"},
	{ErrEmptyFieldName, "EmptyFieldName"},
	{ErrImmutableField, "ImmutableField"},
	{ErrInvalidOptions, "InvalidOptions"},
	{ErrUnsupported, "CommandNotSupported"},
	{ErrInvalidPipelineUpdate, "InvalidPipelineUpdate"},
	{ErrUnknownStage, "UnknownStage"},
	{ErrReplaceRootNotObject, "ReplaceRootNotObject"},
}

func showError(t *testing.T, err error) string {
	t.Helper()
	var ue *Error
	if !errors.As(err, &ue) {
		t.Fatalf("error without a category: %v", err)
	}
	if errors.Is(err, ErrQuery) {
		name := "query:" + errors.Unwrap(ue.cause).Error()
		switch {
		case errors.Is(err, langerr.ErrBadValue):
			name = "BadValue"
		case errors.Is(err, langerr.ErrTypeMismatch):
			name = "TypeMismatch"
		case errors.Is(err, langerr.ErrFailedToParse), errors.Is(err, langerr.ErrFailedToParse):
			name = "FailedToParse"
		case errors.Is(err, langerr.ErrBadValue):
			name = "BadValue"
		case errors.Is(err, langerr.ErrTypeMismatch):
			name = "TypeMismatch"
		}
		return fmt.Sprintf("error %s: %s\n", name, err.Error())
	}
	for _, c := range codeNames {
		if errors.Is(err, c.cat) {
			return fmt.Sprintf("error %s: %s\n", c.name, err.Error())
		}
	}
	t.Fatalf("unknown category: %v", err)
	return ""
}

func parseDoc(t *testing.T, pos, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("%s: bad extended JSON %s: %v", pos, s, err)
	}
	return bsoncore.Document(raw)
}

// parseValue reads a document or (a line starting with '[') an array.
func parseValue(t *testing.T, pos, s string) bsoncore.Value {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(s), "[") {
		d := parseDoc(t, pos, `{"a": `+s+`}`)
		return d.Lookup("a")
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: parseDoc(t, pos, s)}
}

// show renders a document with every numeric type told apart.
func show(d []byte) string {
	elems, _ := bsoncore.Document(d).Elements()
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = e.Key() + ": " + showValue(e.Value())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func showValue(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return "NumberLong(" + strconv.FormatInt(v.Int64(), 10) + ")"
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 0):
			return strconv.FormatFloat(f, 'g', -1, 64)
		case f == math.Trunc(f) && math.Abs(f) < 1e15:
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bsoncore.TypeDecimal128:
		return `NumberDecimal("` + bson.NewDecimal128(v.Decimal128()).String() + `")`
	case bsoncore.TypeDateTime:
		return "Date(" + time.UnixMilli(v.DateTime()).UTC().Format(time.RFC3339Nano) + ")"
	case bsoncore.TypeEmbeddedDocument:
		return show(v.Data)
	case bsoncore.TypeArray:
		vals, _ := bsoncore.Document(v.Data).Values()
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = showValue(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return value.Render(v)
}
