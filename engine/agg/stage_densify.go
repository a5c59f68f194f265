package agg

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $densify fills gaps in a sequence of numbers or dates: {field,
// partitionByFields, range: {step, unit, bounds: "full" | "partition" |
// [lower, upper]}}. Within each partition (the values of
// partitionByFields), documents come out in field order, with a new
// document {<field>: v, <partition fields>...} for every v on the grid
// lower, lower+step, ... that no document holds:
//   - "full": the grid spans the smallest to the largest value of all
//     documents, in every partition;
//   - "partition": each partition's own smallest to largest value;
//   - [lower, upper]: lower up to, not including, upper (documents outside
//     pass through).
//
// Documents whose field is null or missing pass through first, unchanged.
// Dates step by unit (millisecond ... year, calendar months for month,
// quarter and year); numbers take no unit.

type densifyStage struct {
	env        *env
	field      string
	path       []string
	partitions [][]string // partitionByFields paths
	partNames  []string
	step       bsoncore.Value
	unit       string
	bounds     string // "full", "partition" or "" (explicit)
	lower      bsoncore.Value
	upper      bsoncore.Value
	raw        bsoncore.Document
}

var densifyUnits = map[string]bool{
	"millisecond": true, "second": true, "minute": true, "hour": true, "day": true,
	"week": true, "month": true, "quarter": true, "year": true,
}

func densifyError(format string, args ...any) error {
	return langerr.New(langerr.ErrFailedToParse, format, args...)
}

func parseDensify(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(langerr.ErrTypeMismatch, "$densify specification must be an object, found %s", typeName(arg))
	}
	s := &densifyStage{env: p.env, raw: raw}
	var rng bsoncore.Document
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch k := el.Key(); k {
		case "field":
			f, ok := v.StringValueOK()
			if !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$densify.field' is the wrong type '%s', expected type 'string'", typeName(v))
			}
			if strings.HasPrefix(f, "$") {
				return nil, densifyError("Cannot densify field '%s': a field path must not start with '$'", f)
			}
			if err := checkFieldPath(f); err != nil {
				return nil, err
			}
			s.field, s.path = f, strings.Split(f, ".")
		case "partitionByFields":
			fields, err := partitionByFieldsArg("$densify", v)
			if err != nil {
				return nil, err
			}
			for _, f := range fields {
				s.partNames = append(s.partNames, f)
				s.partitions = append(s.partitions, strings.Split(f, "."))
			}
		case "range":
			r, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$densify.range' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			rng = r
		default:
			return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.%s' is an unknown field.", k)
		}
	}
	switch {
	case s.field == "":
		return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.field' is missing but a required field")
	case rng == nil:
		return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.range' is missing but a required field")
	}
	for _, f := range s.partNames {
		if f == s.field || strings.HasPrefix(f, s.field+".") || strings.HasPrefix(s.field, f+".") {
			return nil, densifyError("BSON field '$densify.partitionByFields' contains the field that is being densified: %s", f)
		}
	}
	if err := s.parseRange(rng); err != nil {
		return nil, err
	}
	return []stage{s}, nil
}

func (s *densifyStage) parseRange(rng bsoncore.Document) error {
	var haveStep, haveBounds bool
	elems, _ := rng.Elements()
	for _, el := range elems {
		v := el.Value()
		switch k := el.Key(); k {
		case "step":
			if !isNumeric(v) || value.Float(v) <= 0 || math.IsInf(value.Float(v), 0) {
				return densifyError("the step parameter in a range statement must be a strictly positive numeric value, found %s", value.Render(v))
			}
			s.step, haveStep = v, true
		case "unit":
			u, ok := v.StringValueOK()
			if !ok || !densifyUnits[u] {
				return densifyError("unknown time unit value: %s", value.Render(v))
			}
			s.unit = u
		case "bounds":
			haveBounds = true
			if b, ok := v.StringValueOK(); ok {
				if b != "full" && b != "partition" {
					return densifyError("the bounds must be \"full\", \"partition\" or an array of two values, found \"%s\"", b)
				}
				s.bounds = b
				continue
			}
			arr, ok := v.ArrayOK()
			vals, _ := arr.Values()
			if !ok || len(vals) != 2 {
				return densifyError("the bounds must be \"full\", \"partition\" or an array of two values, found %s", value.Render(v))
			}
			s.lower, s.upper = vals[0], vals[1]
			bothNumbers := isNumeric(s.lower) && isNumeric(s.upper)
			bothDates := s.lower.Type == bsoncore.TypeDateTime && s.upper.Type == bsoncore.TypeDateTime
			if !bothNumbers && !bothDates {
				return densifyError("explicit bounds must be two numbers or two dates, found %s", value.Render(v))
			}
			if expr.Compare(s.lower, s.upper) > 0 {
				return densifyError("the lower bound must not be greater than the upper bound, found %s", value.Render(v))
			}
		default:
			return langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.range.%s' is an unknown field.", k)
		}
	}
	switch {
	case !haveStep:
		return langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.range.step' is missing but a required field")
	case !haveBounds:
		return langerr.New(langerr.ErrFailedToParse, "BSON field '$densify.range.bounds' is missing but a required field")
	case s.unit != "":
		if n, ok := wholeNumber(s.step); !ok || n <= 0 {
			return densifyError("the step must be a whole number when a unit is given, found %s", value.Render(s.step))
		}
		if s.lower.Type != 0 && s.lower.Type != bsoncore.TypeDateTime {
			return densifyError("numeric bounds take no unit")
		}
	case s.lower.Type == bsoncore.TypeDateTime:
		return densifyError("date bounds need a unit")
	}
	return nil
}

func (*densifyStage) name() string              { return "$densify" }
func (s *densifyStage) spec() bsoncore.Document { return s.raw }

func (s *densifyStage) open(in Iterator) Iterator {
	return blocking(in, s.run)
}

// densifyRow is one document with its field value.
type densifyRow struct {
	doc bsoncore.Document
	v   bsoncore.Value
}

func (s *densifyStage) run(ctx context.Context, in Iterator) ([]bsoncore.Document, error) {
	mem := newMemory(s.env, "$densify")
	var out []bsoncore.Document // null or missing field: first, as they came
	parts := map[string][]densifyRow{}
	var order []string
	var partVals = map[string][]bsoncore.Value{}
	var lo, hi bsoncore.Value // over every document ("full")
	err := drain(ctx, in, func(d bsoncore.Document) error {
		if err := mem.add(len(d)); err != nil {
			return err
		}
		d = clone(d)
		v := getPath(d, s.path)
		if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			out = append(out, d)
			return nil
		}
		if err := s.checkValue(v); err != nil {
			return err
		}
		pv := make([]bsoncore.Value, len(s.partitions))
		key := make([]byte, 0, 32)
		for i, p := range s.partitions {
			pv[i] = getPath(d, p)
			key = append(key, byte(pv[i].Type))
			key = append(key, pv[i].Data...)
		}
		k := string(key)
		if _, seen := parts[k]; !seen {
			order = append(order, k)
			partVals[k] = pv
		}
		parts[k] = append(parts[k], densifyRow{doc: d, v: v})
		if lo.Type == 0 || expr.Compare(v, lo) < 0 {
			lo = v
		}
		if hi.Type == 0 || expr.Compare(v, hi) > 0 {
			hi = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Partitions in the order of their values, documents by field value.
	slices.SortFunc(order, func(a, b string) int { return compareValues(partVals[a], partVals[b]) })
	for _, k := range order {
		rows := parts[k]
		slices.SortStableFunc(rows, func(a, b densifyRow) int { return expr.Compare(a.v, b.v) })
		start, end, hasEnd := lo, hi, true // "full": [lo, hi]
		switch s.bounds {
		case "partition":
			start, end = rows[0].v, rows[len(rows)-1].v
		case "":
			start, end, hasEnd = s.lower, s.upper, false
		}
		gen, err := s.grid(start, end, hasEnd)
		if err != nil {
			return nil, err
		}
		i := 0
		for _, g := range gen {
			for i < len(rows) && expr.Compare(rows[i].v, g) < 0 {
				out = append(out, rows[i].doc)
				i++
			}
			if i < len(rows) && expr.Compare(rows[i].v, g) == 0 {
				continue // a document holds it
			}
			doc := setPath(emptyDoc, s.path, g)
			for pi, p := range s.partitions {
				if pv := partVals[k][pi]; pv.Type != 0 {
					doc = setPath(doc, p, pv)
				}
			}
			if err := mem.add(len(doc)); err != nil {
				return nil, err
			}
			out = append(out, doc)
		}
		for ; i < len(rows); i++ {
			out = append(out, rows[i].doc)
		}
	}
	return out, nil
}

// maxDensified bounds the documents one partition's grid may add.
const maxDensified = 1 << 20

// grid lists start, start+step, ... up to end (included when inclusive,
// as "full" and "partition" bounds are; an explicit upper bound is not).
func (s *densifyStage) grid(start, end bsoncore.Value, inclusive bool) ([]bsoncore.Value, error) {
	var out []bsoncore.Value
	for v := start; ; {
		c := expr.Compare(v, end)
		if c > 0 || (c == 0 && !inclusive) {
			return out, nil
		}
		out = append(out, v)
		if len(out) > maxDensified {
			return nil, langerr.New(langerr.ErrBadValue, "$densify would generate more than %d documents in one partition", maxDensified)
		}
		next, err := s.add(v)
		if err != nil {
			return nil, err
		}
		if expr.Compare(next, v) <= 0 {
			return out, nil // the step no longer moves a double
		}
		v = next
	}
}

// add steps v once.
func (s *densifyStage) add(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeDateTime {
		n, _ := wholeNumber(s.step)
		t := time.UnixMilli(v.DateTime()).UTC()
		return expr.DateTime(expr.DateAdd(t, s.unit, n).UnixMilli()), nil
	}
	a, aInt := wholeNumber(v)
	b, bInt := wholeNumber(s.step)
	if aInt && bInt && v.Type != bsoncore.TypeDouble && s.step.Type != bsoncore.TypeDouble && v.Type != bsoncore.TypeDecimal128 && s.step.Type != bsoncore.TypeDecimal128 {
		sum := a + b
		if v.Type == bsoncore.TypeInt32 && s.step.Type == bsoncore.TypeInt32 && sum >= math.MinInt32 && sum <= math.MaxInt32 {
			return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(sum))}, nil
		}
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, sum)}, nil
	}
	return expr.Double(value.Float(v) + value.Float(s.step)), nil
}

// checkValue refuses a field value $densify cannot step: not a number
// with no unit, not a date with one.
func (s *densifyStage) checkValue(v bsoncore.Value) error {
	switch {
	case s.unit == "" && !isNumeric(v):
		return densifyError("Densify field type must be numeric when no unit is given, found %s", typeName(v))
	case s.unit != "" && v.Type != bsoncore.TypeDateTime:
		return densifyError("Densify field type must be a date when a unit is given, found %s", typeName(v))
	case s.lower.Type != 0 && (s.lower.Type == bsoncore.TypeDateTime) != (v.Type == bsoncore.TypeDateTime):
		return densifyError("Densify field values and bounds must be of the same kind (numbers or dates), found %s", typeName(v))
	}
	return nil
}

// compareValues orders partition keys value by value.
func compareValues(a, b []bsoncore.Value) int {
	for i := range a {
		if c := expr.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}
