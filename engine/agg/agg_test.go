package agg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDataDriven replays testdata/*. Directives:
//
//	docs [coll=<name>]          replace a collection ("input" by default)
//	<document per line, extended JSON>
//	----
//
//	agg [coll=<name>] [allowDiskUse] [memory=<bytes>] [partitions=<n>] [sorted]
//	[let <document>]
//	<pipeline, extended JSON array, may span lines>
//	----
//	<one output document per line> | error (<category>): <message>
//
//	show [coll=<name>]          print a collection ($out, $merge)
//
//	split                       how Split divides a pipeline
//	<pipeline>
//	----
//	shards: <stages>
//	merger: <stages>
//
// Every agg case also runs through Split with one partition and must
// give the same output in the same order; partitions=n splits the input
// into n contiguous parts and runs them in parallel (use sorted when the
// order then differs). Values are shown in the notation of
// engine/expr's tests: 1 (int32), long(1), 1.0 (double), dec(1),
// date(...), oid(...).
//
// Expected outputs are MongoDB 7.0's documented answers, not a recording:
// do not --rewrite without checking.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		colls := newMemColls()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			coll := "input"
			if d.HasArg("coll") {
				d.ScanArgs(t, "coll", &coll)
			}
			switch d.Cmd {
			case "docs":
				var docs []bsoncore.Document
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if strings.TrimSpace(line) == "" {
						continue
					}
					docs = append(docs, parseDoc(t, line))
				}
				colls.set(coll, docs)
				return ""
			case "show":
				var out strings.Builder
				for _, doc := range colls.get(coll) {
					out.WriteString(showDoc(doc) + "\n")
				}
				return out.String()
			case "agg":
				return runAgg(t, d, colls, coll)
			case "split":
				p, err := Parse(parseArray(t, d.Input), Options{DB: "test", Coll: coll, Collections: colls})
				if err != nil {
					return fmt.Sprintf("error (%s): %v\n", category(err), err)
				}
				shards, merger := p.Split().Explain()
				return "shards: " + showStages(shards) + "\nmerger: " + showStages(merger) + "\n"
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

func runAgg(t *testing.T, d *datadriven.TestData, colls *memColls, coll string) string {
	opts := Options{DB: "test", Coll: coll, Now: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), Collections: colls,
		TempDir: t.TempDir(), Seed: 42}
	partitions := 0
	sorted := false
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "coll":
		case "allowDiskUse":
			opts.AllowDiskUse = true
		case "memory":
			n, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				d.Fatalf(t, "bad memory: %v", err)
			}
			opts.MemoryLimit = n
		case "partitions":
			n, err := strconv.Atoi(a.Vals[0])
			if err != nil {
				d.Fatalf(t, "bad partitions: %v", err)
			}
			partitions = n
		case "sorted":
			sorted = true
		default:
			d.Fatalf(t, "unknown argument %s", a.Key)
		}
	}
	input := d.Input
	if rest, ok := strings.CutPrefix(input, "let "); ok {
		line, tail, _ := strings.Cut(rest, "\n")
		opts.Let, input = parseDoc(t, line), tail
	}
	arr := parseArray(t, input)
	p, err := Parse(arr, opts)
	if err != nil {
		return fmt.Sprintf("error (%s): %v\n", category(err), err)
	}
	ctx := context.Background()
	source := func() Iterator { return Docs(slices.Clone(colls.get(coll))) }
	var out []string
	if partitions > 0 {
		docs := colls.get(coll)
		var parts []Iterator
		for i := range partitions {
			lo, hi := i*len(docs)/partitions, (i+1)*len(docs)/partitions
			parts = append(parts, Docs(slices.Clone(docs[lo:hi])))
		}
		out, err = renderAll(ctx, p.Split().Run(parts, 2))
	} else {
		var split []string
		var serr error
		if p.NeedsInput() && !p.Writes() {
			split, serr = renderAll(ctx, p.Split().Run([]Iterator{source()}, 1))
		}
		out, err = renderAll(ctx, p.Run(source()))
		if err == nil && p.NeedsInput() && !p.Writes() {
			if serr != nil {
				t.Errorf("%s: split run failed (%v) where the whole run did not", d.Pos, serr)
			} else if !slices.Equal(out, split) {
				t.Errorf("%s: split run differs:\nwhole: %v\nsplit: %v", d.Pos, out, split)
			}
		}
	}
	if sorted {
		sort.Strings(out)
	}
	res := strings.Join(out, "\n")
	if len(out) > 0 {
		res += "\n"
	}
	if err != nil {
		res += fmt.Sprintf("error (%s): %v\n", category(err), err)
	}
	return res
}

func renderAll(ctx context.Context, it Iterator) ([]string, error) {
	var out []string
	err := Drain(ctx, it, func(d bsoncore.Document) error {
		out = append(out, showDoc(d))
		return nil
	})
	return out, err
}

func parseDoc(t *testing.T, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("bad extended JSON %s: %v", s, err)
	}
	return bsoncore.Document(raw)
}

func parseArray(t *testing.T, s string) bsoncore.Document {
	t.Helper()
	v := parseDoc(t, `{"v": `+s+`}`).Lookup("v")
	if v.Type != bsoncore.TypeArray {
		t.Fatalf("pipeline is not an array: %s", s)
	}
	return v.Data
}

var categories = []struct {
	err  error
	name string
}{
	{ErrMemoryLimit, "MemoryLimit"}, {ErrStageNotObject, "StageNotObject"}, {ErrStageFields, "StageFields"},
	{ErrUnknownStage, "UnknownStage"}, {ErrMustBeLast, "MustBeLast"}, {ErrMustBeFirst, "MustBeFirst"},
	{ErrNotInFacet, "NotInFacet"}, {ErrNotInLookup, "NotInLookup"}, {ErrNotInUnionWith, "NotInUnionWith"},
	{ErrNeedsCollection, "NeedsCollection"}, {ErrGroupNoID, "GroupNoID"}, {ErrUnknownAccumulator, "UnknownAccumulator"},
	{ErrGroupFieldName, "GroupFieldName"}, {ErrAccumulatorObject, "AccumulatorObject"}, {ErrAccumulatorOne, "AccumulatorOne"},
	{ErrAccumulatorUnary, "AccumulatorUnary"}, {ErrGroupNotObject, "GroupNotObject"}, {ErrLimitNotNumber, "LimitNotNumber"},
	{ErrLimitNotPositive, "LimitNotPositive"}, {ErrSkipNotNumber, "SkipNotNumber"}, {ErrSkipNegative, "SkipNegative"},
	{ErrSortNotObject, "SortNotObject"}, {ErrSortEmpty, "SortEmpty"}, {ErrProjectEmpty, "ProjectEmpty"},
	{ErrProjectNotObject, "ProjectNotObject"}, {ErrInclusionInExclusion, "InclusionInExclusion"},
	{ErrExclusionInInclusion, "ExclusionInInclusion"}, {ErrExprInExclusion, "ExprInExclusion"},
	{ErrPathCollision, "PathCollision"}, {ErrPathPrefixCollision, "PathPrefixCollision"},
	{ErrEmptySubProjection, "EmptySubProjection"}, {ErrAddFieldsNotObject, "AddFieldsNotObject"},
	{ErrUnsetSpec, "UnsetSpec"}, {ErrFieldPath, "FieldPath"}, {ErrNewRootNotObject, "NewRootNotObject"},
	{ErrReplaceRootSpec, "ReplaceRootSpec"}, {ErrUnwindSpec, "UnwindSpec"}, {ErrUnwindPath, "UnwindPath"},
	{ErrCountSpec, "CountSpec"}, {ErrSampleSpec, "SampleSpec"}, {ErrFacetSpec, "FacetSpec"},
	{ErrBucketSpec, "BucketSpec"}, {ErrBucketAutoSpec, "BucketAutoSpec"}, {ErrRedactResult, "RedactResult"},
	{ErrMergeNoMatch, "MergeNoMatch"}, {ErrMergeOnFields, "MergeOnFields"}, {ErrDuplicateKey, "DuplicateKey"},
	{ErrOutSpec, "OutSpec"}, {ErrWindowSpec, "WindowSpec"}, {ErrDocumentsSpec, "DocumentsSpec"},
	{ErrLookupResultTooLarge, "LookupResultTooLarge"}, {ErrGraphLookupSpec, "GraphLookupSpec"},
	{ErrGraphLookupMemory, "GraphLookupMemory"},
	{langerr.ErrBadValue, "BadValue"}, {langerr.ErrFailedToParse, "FailedToParse"}, {langerr.ErrTypeMismatch, "TypeMismatch"},
	{langerr.ErrNotImplemented, "NotImplemented"}, {ErrInvalidNamespace, "InvalidNamespace"},
	{expr.ErrUnknownOperator, "expr.UnknownOperator"}, {expr.ErrUndefinedVariable, "expr.UndefinedVariable"},
	{expr.ErrArity, "expr.Arity"}, {expr.ErrConversion, "expr.Conversion"},
	{expr.ErrFieldPath, "expr.FieldPath"}, {expr.ErrExpressionSpec, "expr.ExpressionSpec"},
	{expr.ErrDivideByZero, "expr.DivideByZero"}, {expr.ErrNoSwitchBranch, "expr.NoSwitchBranch"},
	{expr.ErrTimezone, "expr.Timezone"}, {expr.ErrInternalConstant, "expr.InternalConstant"},
	{query.ErrBadSortKey, "query.BadSortKey"}, {query.ErrBadSortOrder, "query.BadSortOrder"},
}

func category(err error) string {
	for _, c := range categories {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "uncategorized"
}

// showDoc renders a document compactly, keeping numeric types apart.
func showDoc(d bsoncore.Document) string { return show(docValue(d)) }

func show(v bsoncore.Value) string {
	switch v.Type {
	case 0:
		return "missing"
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return "long(" + strconv.FormatInt(v.Int64(), 10) + ")"
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		case f == math.Trunc(f) && math.Abs(f) < 1e15:
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bsoncore.TypeDecimal128:
		return "dec(" + bson.NewDecimal128(v.Decimal128()).String() + ")"
	case bsoncore.TypeString:
		return strconv.Quote(stringOf(v))
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeDateTime:
		return "date(" + time.UnixMilli(v.DateTime()).UTC().Format("2006-01-02T15:04:05.000Z") + ")"
	case bsoncore.TypeObjectID:
		return "oid"
	case bsoncore.TypeArray:
		var parts []string
		for _, x := range expr.Elements(v) {
			parts = append(parts, show(x))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bsoncore.TypeEmbeddedDocument:
		var parts []string
		for _, f := range expr.Fields(v) {
			parts = append(parts, f.Key+": "+show(f.Val))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return v.String()
}

// memColls is an in-memory Collections.
type memColls struct {
	mu    sync.Mutex
	colls map[string][]bsoncore.Document
}

func newMemColls() *memColls { return &memColls{colls: map[string][]bsoncore.Document{}} }

func (m *memColls) set(name string, docs []bsoncore.Document) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.colls[name] = docs
}

func (m *memColls) get(name string) []bsoncore.Document {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.colls[name])
}

func (m *memColls) Scan(_ context.Context, _, coll string) (Iterator, error) {
	return Docs(m.get(coll)), nil
}

func (m *memColls) find(coll string, id bsoncore.Value) int {
	for i, d := range m.colls[coll] {
		if expr.Compare(d.Lookup("_id"), id) == 0 {
			return i
		}
	}
	return -1
}

func (m *memColls) Get(_ context.Context, _, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.find(coll, id); i >= 0 {
		return m.colls[coll][i], true, nil
	}
	return nil, false, nil
}

func (m *memColls) Insert(_ context.Context, _, coll string, doc bsoncore.Document) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.find(coll, doc.Lookup("_id")) >= 0 {
		return langerr.New(ErrDuplicateKey, "E11000 duplicate key error")
	}
	m.colls[coll] = append(m.colls[coll], clone(doc))
	return nil
}

func (m *memColls) Replace(_ context.Context, _, coll string, id bsoncore.Value, doc bsoncore.Document) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(coll, id)
	if i < 0 {
		return fmt.Errorf("no document %s", value.Render(id))
	}
	m.colls[coll][i] = clone(doc)
	return nil
}

type memOut struct {
	m    *memColls
	coll string
	docs []bsoncore.Document
}

func (o *memOut) Insert(_ context.Context, doc bsoncore.Document) error {
	for _, d := range o.docs {
		if expr.Compare(d.Lookup("_id"), doc.Lookup("_id")) == 0 {
			return langerr.New(ErrDuplicateKey, "E11000 duplicate key error")
		}
	}
	o.docs = append(o.docs, clone(doc))
	return nil
}

func (o *memOut) Commit(context.Context) error { o.m.set(o.coll, o.docs); return nil }
func (o *memOut) Abort()                       {}

func (m *memColls) OpenOut(_ context.Context, _, coll string) (OutWriter, error) {
	return &memOut{m: m, coll: coll}, nil
}

func (m *memColls) CollStats(_ context.Context, db, coll string, _ bsoncore.Document) ([]bsoncore.Document, error) {
	return []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendString("ns", db+"."+coll).
		AppendInt64("count", int64(len(m.get(coll)))).Build()}, nil
}

func (m *memColls) IndexStats(context.Context, string, string) ([]bsoncore.Document, error) {
	return []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendString("name", "_id_").Build()}, nil
}

func showStages(stages []bsoncore.Document) string {
	var out []string
	for _, st := range stages {
		out = append(out, showDoc(st))
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ", ")
}
