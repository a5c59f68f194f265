package unified

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Resolver gives the matcher the entities its special operators name
// ($$matchesEntity, $$sessionLsid).
type Resolver interface {
	BSONEntity(name string) (bson.RawValue, error)
	SessionLsid(name string) (bson.Raw, error)
}

// Mismatch is the first difference between an expected and an actual
// value. Path is dotted from the compared value ("" for the value itself).
type Mismatch struct {
	Path string
	Msg  string
}

func (m *Mismatch) Error() string {
	if m.Path == "" {
		return m.Msg
	}
	return m.Path + ": " + m.Msg
}

// Match checks actual against expected with the unified format's rules.
// root says whether actual is a root-level document, which may hold keys
// expected does not name. An absent actual value has Type 0.
func Match(expected, actual bson.RawValue, root bool, r Resolver) error {
	return matcher{r: r}.value("", expected, actual, root)
}

// MatchDocuments checks an iterable's documents (find, aggregate, …):
// the same number of elements, each matched as a root-level document.
// expected may also be a special operator ($$unsetOrMatches, …).
func MatchDocuments(expected bson.RawValue, actual []bson.Raw, r Resolver) error {
	m := matcher{r: r}
	av := arrayValue(actual)
	if expected.Type != bson.TypeArray {
		return m.value("", expected, av, false)
	}
	ev, err := expected.Array().Values()
	if err != nil {
		return err
	}
	if len(ev) != len(actual) {
		return &Mismatch{Msg: fmt.Sprintf("%d documents, want %d: got %s", len(actual), len(ev), Show(av))}
	}
	for i := range ev {
		if err := m.value(strconv.Itoa(i), ev[i], docValue(actual[i]), true); err != nil {
			return err
		}
	}
	return nil
}

// Equal checks that actual is exactly expected, up to key order and the
// numeric type of numbers (the rule for a test's outcome): no special
// operators, no extra keys at any level.
func Equal(expected, actual bson.RawValue) error {
	return matcher{exact: true}.value("", expected, actual, false)
}

type matcher struct {
	r     Resolver
	exact bool
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func mismatch(path, format string, args ...any) error {
	return &Mismatch{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// specialOperator reports a document whose first and only key starts with
// "$$".
func specialOperator(doc bson.Raw) (string, bson.RawValue, bool) {
	elems, err := doc.Elements()
	if err != nil || len(elems) != 1 || !strings.HasPrefix(elems[0].Key(), "$$") {
		return "", bson.RawValue{}, false
	}
	return elems[0].Key(), elems[0].Value(), true
}

func (m matcher) value(path string, exp, act bson.RawValue, root bool) error {
	switch exp.Type {
	case bson.TypeEmbeddedDocument:
		doc := exp.Document()
		if !m.exact {
			if op, arg, ok := specialOperator(doc); ok {
				return m.operator(path, op, arg, act, root)
			}
		}
		if act.Type == 0 {
			return mismatch(path, "missing, want %s", Show(exp))
		}
		if act.Type != bson.TypeEmbeddedDocument {
			return mismatch(path, "got %s, want a document %s", Show(act), Show(exp))
		}
		return m.document(path, doc, act.Document(), root)
	case bson.TypeArray:
		if act.Type == 0 {
			return mismatch(path, "missing, want %s", Show(exp))
		}
		if act.Type != bson.TypeArray {
			return mismatch(path, "got %s, want an array %s", Show(act), Show(exp))
		}
		ev, err := exp.Array().Values()
		if err != nil {
			return err
		}
		av, err := act.Array().Values()
		if err != nil {
			return err
		}
		if len(ev) != len(av) {
			return mismatch(path, "array of %d elements %s, want %d: %s", len(av), Show(act), len(ev), Show(exp))
		}
		for i := range ev {
			if err := m.value(joinPath(path, strconv.Itoa(i)), ev[i], av[i], false); err != nil {
				return err
			}
		}
		return nil
	}
	if act.Type == 0 {
		return mismatch(path, "missing, want %s", Show(exp))
	}
	if !scalarEqual(exp, act) {
		return mismatch(path, "got %s (%s), want %s (%s)", Show(act), TypeName(act.Type), Show(exp), TypeName(exp.Type))
	}
	return nil
}

func (m matcher) document(path string, exp, act bson.Raw, root bool) error {
	elems, err := exp.Elements()
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(elems))
	for _, e := range elems {
		key, ev := e.Key(), e.Value()
		want[key] = true
		p := joinPath(path, key)
		av, err := act.LookupErr(key)
		if err != nil {
			av = bson.RawValue{}
		}
		if ev.Type == bson.TypeEmbeddedDocument && !m.exact {
			if op, arg, ok := specialOperator(ev.Document()); ok {
				if err := m.operator(p, op, arg, av, false); err != nil {
					return err
				}
				continue
			}
		}
		if av.Type == 0 {
			return mismatch(p, "missing, want %s", Show(ev))
		}
		if err := m.value(p, ev, av, false); err != nil {
			return err
		}
	}
	if root && !m.exact {
		return nil
	}
	actElems, err := act.Elements()
	if err != nil {
		return err
	}
	for _, e := range actElems {
		if !want[e.Key()] {
			return mismatch(joinPath(path, e.Key()), "unexpected field (value %s)", Show(e.Value()))
		}
	}
	return nil
}

func (m matcher) operator(path, op string, arg, act bson.RawValue, root bool) error {
	switch op {
	case "$$exists":
		want, ok := arg.BooleanOK()
		if !ok {
			return fmt.Errorf("runner: $$exists takes a boolean, got %s", Show(arg))
		}
		if got := act.Type != 0; got != want {
			if want {
				return mismatch(path, "missing, want it to exist")
			}
			return mismatch(path, "exists (value %s), want it absent", Show(act))
		}
		return nil
	case "$$type":
		if act.Type == 0 {
			return mismatch(path, "missing, want type %s", Show(arg))
		}
		var names []string
		if s, ok := arg.StringValueOK(); ok {
			names = []string{s}
		} else if arr, ok := arg.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				names = append(names, v.StringValue())
			}
		}
		for _, n := range names {
			if typeMatches(n, act.Type) {
				return nil
			}
		}
		return mismatch(path, "type %s (value %s), want %s", TypeName(act.Type), Show(act), strings.Join(names, " or "))
	case "$$unsetOrMatches":
		if act.Type == 0 {
			return nil
		}
		return m.value(path, arg, act, root)
	case "$$matchesEntity":
		if m.r == nil {
			return fmt.Errorf("runner: $$matchesEntity without entities")
		}
		v, err := m.r.BSONEntity(arg.StringValue())
		if err != nil {
			return err
		}
		return m.value(path, v, act, root)
	case "$$matchesHexBytes":
		want, err := hex.DecodeString(arg.StringValue())
		if err != nil {
			return fmt.Errorf("runner: $$matchesHexBytes %q: %w", arg.StringValue(), err)
		}
		var got []byte
		switch act.Type {
		case bson.TypeString:
			got = []byte(act.StringValue())
		case bson.TypeBinary:
			_, got = act.Binary()
		default:
			return mismatch(path, "got %s, want bytes %s", Show(act), arg.StringValue())
		}
		if !bytes.Equal(got, want) {
			return mismatch(path, "bytes %x, want %x", got, want)
		}
		return nil
	case "$$sessionLsid":
		if m.r == nil {
			return fmt.Errorf("runner: $$sessionLsid without entities")
		}
		lsid, err := m.r.SessionLsid(arg.StringValue())
		if err != nil {
			return err
		}
		if act.Type == 0 {
			return mismatch(path, "missing, want the lsid of %s", arg.StringValue())
		}
		if err := (matcher{exact: true}).value(path, docValue(lsid), act, false); err != nil {
			return mismatch(path, "%s is not the lsid of %s (%s)", Show(act), arg.StringValue(), Show(docValue(lsid)))
		}
		return nil
	case "$$lte":
		if act.Type == 0 {
			return mismatch(path, "missing, want <= %s", Show(arg))
		}
		if !isNumber(act.Type) || !isNumber(arg.Type) {
			return mismatch(path, "got %s, want a number <= %s", Show(act), Show(arg))
		}
		if compareNumbers(act, arg) > 0 {
			return mismatch(path, "got %s, want <= %s", Show(act), Show(arg))
		}
		return nil
	case "$$matchAsDocument":
		s, ok := act.StringValueOK()
		if !ok {
			return mismatch(path, "got %s, want an Extended JSON string", Show(act))
		}
		var doc bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(s), false, &doc); err != nil {
			return mismatch(path, "not Extended JSON: %v", err)
		}
		return m.value(path, arg, docValue(doc), false)
	case "$$matchAsRoot":
		return m.value(path, arg, act, true)
	}
	return fmt.Errorf("runner: special operator %s not implemented", op)
}

func isNumber(t bson.Type) bool {
	return t == bson.TypeInt32 || t == bson.TypeInt64 || t == bson.TypeDouble
}

// compareNumbers orders two int32/int64/double values numerically.
func compareNumbers(a, b bson.RawValue) int {
	if a.Type != bson.TypeDouble && b.Type != bson.TypeDouble {
		x, y := a.AsInt64(), b.AsInt64()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	x, y := a.AsFloat64(), b.AsFloat64()
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func scalarEqual(exp, act bson.RawValue) bool {
	if isNumber(exp.Type) && isNumber(act.Type) {
		if exp.Type == bson.TypeDouble || act.Type == bson.TypeDouble {
			return exp.AsFloat64() == act.AsFloat64()
		}
		return exp.AsInt64() == act.AsInt64()
	}
	return exp.Type == act.Type && bytes.Equal(exp.Value, act.Value)
}

var typeNames = map[bson.Type]string{
	bson.TypeDouble: "double", bson.TypeString: "string", bson.TypeEmbeddedDocument: "object",
	bson.TypeArray: "array", bson.TypeBinary: "binData", bson.TypeUndefined: "undefined",
	bson.TypeObjectID: "objectId", bson.TypeBoolean: "bool", bson.TypeDateTime: "date",
	bson.TypeNull: "null", bson.TypeRegex: "regex", bson.TypeDBPointer: "dbPointer",
	bson.TypeJavaScript: "javascript", bson.TypeSymbol: "symbol",
	bson.TypeCodeWithScope: "javascriptWithScope", bson.TypeInt32: "int",
	bson.TypeTimestamp: "timestamp", bson.TypeInt64: "long", bson.TypeDecimal128: "decimal",
	bson.TypeMinKey: "minKey", bson.TypeMaxKey: "maxKey",
}

// TypeName is the $type alias of a BSON type.
func TypeName(t bson.Type) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	if t == 0 {
		return "absent"
	}
	return fmt.Sprintf("type 0x%02x", byte(t))
}

func typeMatches(name string, t bson.Type) bool {
	if name == "number" {
		return isNumber(t) || t == bson.TypeDecimal128
	}
	return typeNames[t] == name
}

func docValue(d bson.Raw) bson.RawValue {
	return bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d}
}

func arrayValue(docs []bson.Raw) bson.RawValue {
	a := make(bson.A, len(docs))
	for i, d := range docs {
		a[i] = d
	}
	return mustValue(a)
}

// mustValue marshals a Go value the driver's codecs know.
func mustValue(v any) bson.RawValue {
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		panic(fmt.Sprintf("unified: marshal %T: %v", v, err))
	}
	return bson.RawValue{Type: t, Value: data}
}

// Show renders a value as relaxed Extended JSON, shortened for messages.
func Show(v bson.RawValue) string {
	if v.Type == 0 {
		return "<absent>"
	}
	out, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	s := string(out)
	if err != nil {
		s = v.String()
	} else {
		s = strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
