package agg

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $setWindowFields: documents are sorted by (partitionBy, sortBy); each
// output field is computed per document over its partition.

type windowStage struct {
	env         *env
	partitionBy expr.Expression // nil: one partition
	sortBy      *query.Sort     // nil: input order
	sortSpec    bsoncore.Document
	outputs     []*windowOutput
	raw         bsoncore.Document
}

// bound is one end of a window: unbounded, the current document, or an
// offset (documents: positions; range: sortBy values).
type bound struct {
	unbounded bool
	current   bool
	offset    bsoncore.Value
}

type windowOutput struct {
	path     []string
	fn       string
	acc      *accSpec        // accumulator functions
	arg      expr.Expression // $shift output, $locf and $expMovingAvg input
	by       int64           // $shift
	def      bsoncore.Value  // $shift default
	alpha    float64         // $expMovingAvg
	byRange  bool
	unit     string // range unit for dates ("" : numbers)
	lo, hi   bound
	windowed bool  // a window was given
	rateMs   int64 // $derivative and $integral: the unit's milliseconds (0: numbers)
}

var rankFunctions = map[string]bool{"$rank": true, "$denseRank": true, "$documentNumber": true}

var windowAccumulators = map[string]bool{
	"$sum": true, "$avg": true, "$min": true, "$max": true, "$count": true, "$first": true, "$last": true,
	"$push": true, "$addToSet": true, "$stdDevPop": true, "$stdDevSamp": true, "$firstN": true, "$lastN": true,
	"$minN": true, "$maxN": true, "$top": true, "$bottom": true, "$topN": true, "$bottomN": true,
	"$median": true, "$percentile": true,
}

func windowError(format string, args ...any) error {
	return langerr.New(ErrWindowSpec, format, args...)
}

func parseSetWindowFields(p *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, windowError("the $setWindowFields stage specification must be an object, found %s", typeName(arg))
	}
	w := &windowStage{env: p.env, raw: raw}
	var output bsoncore.Value
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "partitionBy":
			w.partitionBy, err = p.env.compile(v)
		case "sortBy":
			sd, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			w.sortSpec = clone(sd)
			if w.sortBy, err = query.CompileSort(sd); err == nil {
				w.sortBy = w.sortBy.WithCollation(p.env.opts.Collation)
			}
		case "output":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			output = v
		default:
			return nil, langerr.FailedToParse("BSON field '$setWindowFields.%s' is an unknown field.", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if output.Type == 0 {
		return nil, langerr.FailedToParse("BSON field '$setWindowFields.output' is missing but a required field")
	}
	oel, _ := output.Document().Elements()
	for _, el := range oel {
		if err := checkFieldPath(el.Key()); err != nil {
			return nil, err
		}
		o, err := w.parseOutput(el.Key(), el.Value())
		if err != nil {
			return nil, err
		}
		w.outputs = append(w.outputs, o)
	}
	return []stage{w}, nil
}

func (w *windowStage) sortFields() int {
	if w.sortSpec == nil {
		return 0
	}
	el, _ := w.sortSpec.Elements()
	return len(el)
}

func (w *windowStage) parseOutput(field string, v bsoncore.Value) (*windowOutput, error) {
	spec, ok := v.DocumentOK()
	if !ok {
		return nil, windowError("The field '%s' must be an object", field)
	}
	o := &windowOutput{path: splitPath(field), lo: bound{unbounded: true}, hi: bound{unbounded: true}}
	var fnArg, window bsoncore.Value
	elems, _ := spec.Elements()
	for _, el := range elems {
		if el.Key() == "window" {
			window = el.Value()
			continue
		}
		if o.fn != "" {
			return nil, windowError("Window function found an unknown argument: %s", el.Key())
		}
		o.fn, fnArg = el.Key(), el.Value()
	}
	if o.fn == "" {
		return nil, windowError("Expected a $-prefixed window function, '%s' has none", field)
	}
	var err error
	switch {
	case windowAccumulators[o.fn]:
		if o.acc, err = parseAccumulator(w.env, field, o.fn, fnArg); err != nil {
			return nil, err
		}
	case rankFunctions[o.fn]:
		if fnArg.Type != bsoncore.TypeEmbeddedDocument || len(fnArg.Data) > 5 {
			return nil, windowError("%s must be specified with an empty object, i.e. %s: {}", o.fn, o.fn)
		}
		if window.Type != 0 {
			return nil, windowError("%s does not accept a 'window' field", o.fn)
		}
		if o.fn != "$documentNumber" && w.sortFields() != 1 {
			return nil, windowError("%s must be specified with a top level sortBy expression with exactly one element", o.fn)
		}
	case o.fn == "$shift":
		m, err := namedArgs(o.fn, fnArg, []string{"output", "by", "default"}, "output", "by")
		if err != nil {
			return nil, err
		}
		if window.Type != 0 {
			return nil, windowError("$shift does not accept a 'window' field")
		}
		if w.sortBy == nil {
			return nil, windowError("'$shift' requires a sortBy")
		}
		n, ok := wholeNumber(m["by"])
		if !ok || n != int64(int32(n)) {
			return nil, windowError("'$shift:by' field must be an integer, but found %s", value.Render(m["by"]))
		}
		o.by = n
		if o.arg, err = w.env.compile(m["output"]); err != nil {
			return nil, err
		}
		o.def = expr.Null
		if dv, ok := m["default"]; ok {
			x, err := w.env.compile(dv)
			if err != nil {
				return nil, err
			}
			c, isConst := expr.Constant(x)
			if !isConst {
				return nil, windowError("'$shift:default' expression must yield a constant value.")
			}
			o.def = c
		}
	case o.fn == "$locf":
		if window.Type != 0 {
			return nil, windowError("$locf does not accept a 'window' field")
		}
		if o.arg, err = w.env.compile(fnArg); err != nil {
			return nil, err
		}
	case o.fn == "$expMovingAvg":
		m, err := namedArgs(o.fn, fnArg, []string{"input", "N", "alpha"}, "input")
		if err != nil {
			return nil, err
		}
		if w.sortBy == nil {
			return nil, windowError("$expMovingAvg requires an explicit 'sortBy'")
		}
		nv, hasN := m["N"]
		av, hasA := m["alpha"]
		switch {
		case hasN == hasA:
			return nil, windowError("$expMovingAvg requires either 'N' or 'alpha', and not both")
		case hasN:
			n, ok := wholeNumber(nv)
			if !ok || n <= 0 {
				return nil, windowError("'N' field must be an integer greater than zero, but found %s", value.Render(nv))
			}
			o.alpha = 2 / (float64(n) + 1)
		default:
			a := value.Float(av)
			if !isNumeric(av) || a <= 0 || a >= 1 {
				return nil, windowError("'alpha' must be a number between 0 and 1 exclusive, but found %s", value.Render(av))
			}
			o.alpha = a
		}
		if o.arg, err = w.env.compile(m["input"]); err != nil {
			return nil, err
		}
	case o.fn == "$linearFill":
		if window.Type != 0 {
			return nil, windowError("$linearFill does not accept a 'window' field")
		}
		if w.sortBy == nil || len(w.sortBy.Paths()) != 1 {
			return nil, windowError("$linearFill requires a 'sortBy' on exactly one field")
		}
		if o.arg, err = w.env.compile(fnArg); err != nil {
			return nil, err
		}
	case o.fn == "$covariancePop" || o.fn == "$covarianceSamp":
		if o.arg, err = w.env.compile(fnArg); err != nil {
			return nil, err
		}
	case o.fn == "$derivative" || o.fn == "$integral":
		m, err := namedArgs(o.fn, fnArg, []string{"input", "unit"}, "input")
		if err != nil {
			return nil, err
		}
		if w.sortBy == nil || len(w.sortBy.Paths()) != 1 {
			return nil, windowError("%s requires a 'sortBy' on exactly one field", o.fn)
		}
		if o.fn == "$derivative" && window.Type == 0 {
			return nil, windowError("$derivative requires explicit window bounds")
		}
		if u, ok := m["unit"]; ok {
			s, isStr := u.StringValueOK()
			if !isStr {
				return nil, windowError("%s 'unit' must be a string, found %s", o.fn, typeName(u))
			}
			ms, err := windowUnitMillis(s)
			if err != nil {
				return nil, err
			}
			if ms == 0 {
				return nil, windowError("%s 'unit' must be week or a smaller unit, found %s", o.fn, s)
			}
			o.rateMs = ms
		}
		if o.arg, err = w.env.compile(m["input"]); err != nil {
			return nil, err
		}
	default:
		return nil, windowError("Unrecognized window function, %s", o.fn)
	}
	if window.Type != 0 {
		if err := w.parseWindow(o, window); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (w *windowStage) parseWindow(o *windowOutput, v bsoncore.Value) error {
	d, ok := v.DocumentOK()
	if !ok {
		return windowError("'window' field must be an object")
	}
	o.windowed = true
	elems, _ := d.Elements()
	var bounds bsoncore.Value
	for _, el := range elems {
		switch el.Key() {
		case "documents":
			if bounds.Type != 0 {
				return windowError("Window bounds can specify either 'documents' or 'unit', not both")
			}
			bounds = el.Value()
		case "range":
			if bounds.Type != 0 {
				return windowError("Window bounds can specify either 'documents' or 'range', not both")
			}
			bounds, o.byRange = el.Value(), true
		case "unit":
			u, ok := el.Value().StringValueOK()
			if !ok {
				return windowError("'unit' must be a string")
			}
			if _, err := windowUnitMillis(u); err != nil {
				return err
			}
			o.unit = u
		default:
			return windowError("'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
		}
	}
	if bounds.Type != bsoncore.TypeArray || len(expr.Elements(bounds)) != 2 {
		return windowError("Window bounds must be a 2-element array: %s", value.Render(bounds))
	}
	if o.unit != "" && !o.byRange {
		return windowError("Window bounds can only specify 'unit' with range-based bounds")
	}
	if (o.byRange || o.fn == "$expMovingAvg") && w.sortFields() != 1 {
		return windowError("Range-based window require sortBy a single field")
	}
	if w.sortBy == nil && !o.lo.unbounded {
		return windowError("Document-based bounds require a sortBy")
	}
	parts := expr.Elements(bounds)
	for i, b := range parts {
		dst := &o.lo
		if i == 1 {
			dst = &o.hi
		}
		switch {
		case b.Type == bsoncore.TypeString && stringOf(b) == "unbounded":
			*dst = bound{unbounded: true}
		case b.Type == bsoncore.TypeString && stringOf(b) == "current":
			*dst = bound{current: true}
		case isNumeric(b):
			if !o.byRange {
				if _, ok := wholeNumber(b); !ok {
					return windowError("Numeric document-based bounds must be an integer")
				}
			} else if o.unit != "" {
				if _, ok := wholeNumber(b); !ok {
					return windowError("With 'unit', range-based bounds must be an integer")
				}
			}
			*dst = bound{offset: cloneValue(b)}
		default:
			return windowError("Window bounds must be 'unbounded', 'current', or a number")
		}
	}
	if w.sortBy == nil {
		return windowError("Document-based bounds require a sortBy")
	}
	if !o.lo.unbounded && !o.hi.unbounded && o.lo.offset.Type != 0 && o.hi.offset.Type != 0 &&
		expr.Compare(o.lo.offset, o.hi.offset) > 0 {
		return windowError("Lower bound must not exceed upper bound: %s", value.Render(bounds))
	}
	return nil
}

func windowUnitMillis(u string) (int64, error) {
	switch u {
	case "year", "quarter", "month":
		return 0, nil
	case "week":
		return 7 * 86_400_000, nil
	case "day":
		return 86_400_000, nil
	case "hour":
		return 3_600_000, nil
	case "minute":
		return 60_000, nil
	case "second":
		return 1000, nil
	case "millisecond":
		return 1, nil
	}
	return 0, windowError("unknown time unit value: %s", u)
}

func (*windowStage) name() string              { return "$setWindowFields" }
func (w *windowStage) spec() bsoncore.Document { return w.raw }

type windowRow struct {
	part bsoncore.Value
	keys []bsoncore.Value
	doc  bsoncore.Document
	out  []bsoncore.Value
}

func (w *windowStage) open(in Iterator) Iterator {
	return blocking(in, w.run)
}

func (w *windowStage) run(ctx context.Context, in Iterator) ([]bsoncore.Document, error) {
	ectx := w.env.context()
	mem := newMemory(w.env, "$setWindowFields")
	var rows []*windowRow
	err := drain(ctx, in, func(d bsoncore.Document) error {
		if err := mem.add(len(d)); err != nil {
			return err
		}
		r := &windowRow{doc: clone(d), part: expr.Null}
		if w.partitionBy != nil {
			ectx.Root = r.doc
			v, err := w.partitionBy.Eval(ectx)
			if err != nil {
				return err
			}
			if v.Type == bsoncore.TypeArray {
				return windowError("An expression used to partition cannot evaluate to value of type array")
			}
			if v.Type != 0 {
				r.part = v
			}
		}
		if w.sortBy != nil {
			r.keys = w.sortBy.Keys(r.doc)
		}
		r.out = make([]bsoncore.Value, len(w.outputs))
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b *windowRow) int {
		if c := expr.Compare(a.part, b.part); c != 0 {
			return c
		}
		if w.sortBy != nil {
			return w.sortBy.CompareKeys(a.keys, b.keys)
		}
		return 0
	})
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && expr.Compare(rows[end].part, rows[start].part) == 0 {
			end++
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for oi, o := range w.outputs {
			if err := w.compute(ectx, o, oi, rows[start:end]); err != nil {
				return nil, err
			}
		}
		start = end
	}
	out := make([]bsoncore.Document, len(rows))
	for i, r := range rows {
		d := r.doc
		for oi, o := range w.outputs {
			v := r.out[oi]
			if v.Type == 0 {
				v = expr.Null
			}
			d = setPath(d, o.path, v)
		}
		out[i] = d
	}
	return out, nil
}

// sortValue is the single sortBy field's value of a row (range windows).
func (w *windowStage) sortValue(r *windowRow) bsoncore.Value {
	el, _ := w.sortSpec.Elements()
	return getPathAny(r.doc, splitPath(el[0].Key()))
}

func getPathAny(doc bsoncore.Document, path []string) bsoncore.Value {
	v := getPath(doc, path)
	if v.Type == 0 {
		return expr.Null
	}
	return v
}

func (w *windowStage) descending() bool {
	el, _ := w.sortSpec.Elements()
	return value.Float(el[0].Value()) < 0
}

func (w *windowStage) compute(ectx *expr.Context, o *windowOutput, oi int, rows []*windowRow) error {
	n := len(rows)
	switch o.fn {
	case "$documentNumber":
		for i, r := range rows {
			r.out[oi] = expr.Int32(int32(i + 1))
		}
		return nil
	case "$rank", "$denseRank":
		rank, dense := 0, 0
		for i, r := range rows {
			if i == 0 || w.sortBy.CompareKeys(rows[i-1].keys, r.keys) != 0 {
				rank, dense = i+1, dense+1
			}
			if o.fn == "$rank" {
				r.out[oi] = expr.Int32(int32(rank))
			} else {
				r.out[oi] = expr.Int32(int32(dense))
			}
		}
		return nil
	case "$shift":
		for i, r := range rows {
			j := i + int(o.by)
			if j < 0 || j >= n {
				r.out[oi] = o.def
				continue
			}
			ectx.Root = rows[j].doc
			v, err := o.arg.Eval(ectx)
			if err != nil {
				return err
			}
			if v.Type == 0 {
				v = expr.Null
			}
			r.out[oi] = v
		}
		return nil
	case "$locf":
		last := expr.Null
		for _, r := range rows {
			ectx.Root = r.doc
			v, err := o.arg.Eval(ectx)
			if err != nil {
				return err
			}
			if v.Type != 0 && v.Type != bsoncore.TypeNull && v.Type != bsoncore.TypeUndefined {
				last = v
			}
			r.out[oi] = last
		}
		return nil
	case "$linearFill":
		return linearFill(ectx, o, oi, rows)
	case "$expMovingAvg":
		var ema float64
		started := false
		for _, r := range rows {
			ectx.Root = r.doc
			v, err := o.arg.Eval(ectx)
			if err != nil {
				return err
			}
			if !isNumeric(v) {
				r.out[oi] = expr.Null
				continue
			}
			x := value.Float(v)
			if !started {
				ema, started = x, true
			} else {
				ema = x*o.alpha + ema*(1-o.alpha)
			}
			r.out[oi] = expr.Double(ema)
		}
		return nil
	}
	// Accumulators over a window.
	if !o.windowed || (o.lo.unbounded && o.hi.unbounded) {
		v, err := w.accumulate(ectx, o, rows, 0, n)
		if err != nil {
			return err
		}
		for _, r := range rows {
			r.out[oi] = v
		}
		return nil
	}
	for i, r := range rows {
		s, e, err := w.bounds(o, rows, i)
		if err != nil {
			return err
		}
		v, err := w.accumulate(ectx, o, rows, s, e)
		if err != nil {
			return err
		}
		r.out[oi] = v
	}
	return nil
}

// accumulate runs the output's accumulator over rows[s:e].
func (w *windowStage) accumulate(ectx *expr.Context, o *windowOutput, rows []*windowRow, s, e int) (bsoncore.Value, error) {
	switch o.fn {
	case "$covariancePop", "$covarianceSamp":
		return covariance(ectx, o, rows[s:e])
	case "$derivative", "$integral":
		return rate(ectx, o, rows[s:e])
	}
	nctx := w.env.context()
	nctx.Root = emptyDoc
	acc, err := o.acc.newAccumulator(nctx)
	if err != nil {
		return expr.Missing, err
	}
	for j := s; j < e; j++ {
		ectx.Root = rows[j].doc
		v, err := o.acc.eval(ectx)
		if err != nil {
			return expr.Missing, err
		}
		if err := acc.add(v, ectx); err != nil {
			return expr.Missing, err
		}
	}
	return acc.result(), nil
}

// bounds is the window [s, e) of row i.
func (w *windowStage) bounds(o *windowOutput, rows []*windowRow, i int) (int, int, error) {
	n := len(rows)
	if !o.byRange {
		s, e := 0, n
		if !o.lo.unbounded {
			s = i
			if o.lo.offset.Type != 0 {
				k, _ := wholeNumber(o.lo.offset)
				s = i + int(k)
			}
		}
		if !o.hi.unbounded {
			e = i + 1
			if o.hi.offset.Type != 0 {
				k, _ := wholeNumber(o.hi.offset)
				e = i + int(k) + 1
			}
		}
		s, e = max(s, 0), min(e, n)
		if e < s {
			e = s
		}
		return s, e, nil
	}
	x := w.sortValue(rows[i])
	if o.unit == "" && !isNumeric(x) {
		return 0, 0, windowError("Invalid range: Expected the sortBy field to be a number, but it was %s", typeName(x))
	}
	if o.unit != "" && x.Type != bsoncore.TypeDateTime {
		return 0, 0, windowError("Invalid range: Expected the sortBy field to be a Date, but it was %s", typeName(x))
	}
	limit := func(b bound) (bsoncore.Value, bool) {
		switch {
		case b.unbounded:
			return expr.Missing, false
		case b.current:
			return x, true
		}
		if o.unit != "" {
			k, _ := wholeNumber(b.offset)
			t := time.UnixMilli(x.DateTime()).UTC()
			return expr.DateTime(expr.DateAdd(t, o.unit, k).UnixMilli()), true
		}
		return expr.Double(value.Float(x) + value.Float(b.offset)), true
	}
	lo, hasLo := limit(o.lo)
	hi, hasHi := limit(o.hi)
	desc := w.descending()
	in := func(j int) bool {
		y := w.sortValue(rows[j])
		if hasLo && expr.Compare(y, lo) < 0 {
			return false
		}
		if hasHi && expr.Compare(y, hi) > 0 {
			return false
		}
		return true
	}
	// Rows are sorted by the value (ascending or descending), so the
	// window is contiguous: find its ends by binary search.
	before := func(j int) bool { // row j comes before the window
		y := w.sortValue(rows[j])
		if desc {
			return hasHi && expr.Compare(y, hi) > 0
		}
		return hasLo && expr.Compare(y, lo) < 0
	}
	s := sortSearch(len(rows), func(j int) bool { return !before(j) })
	e := s
	for e < len(rows) && in(e) {
		e++
	}
	_ = math.Inf
	return s, e, nil
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// linearFill fills each null or missing value of o's input (rows are one
// partition in sortBy order) on the line between the nearest values before
// and after it, by the sortBy value (a number or a date); at either end of
// the partition it stays null.
func linearFill(ectx *expr.Context, o *windowOutput, oi int, rows []*windowRow) error {
	ys := make([]bsoncore.Value, len(rows))
	xs := make([]float64, len(rows))
	for i, r := range rows {
		ectx.Root = r.doc
		v, err := o.arg.Eval(ectx)
		if err != nil {
			return err
		}
		switch {
		case v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined:
			v = bsoncore.Value{}
		case !isNumeric(v):
			return windowError("$linearFill only supports numeric types, found %s", typeName(v))
		}
		ys[i] = v
		k := r.keys[0]
		switch {
		case isNumeric(k):
			xs[i] = value.Float(k)
		case k.Type == bsoncore.TypeDateTime:
			xs[i] = float64(k.DateTime())
		default:
			return windowError("$linearFill requires the sortBy field to be a number or a date, found %s", typeName(k))
		}
		if i > 0 && xs[i] == xs[i-1] {
			return windowError("There can be no repeated values in the sortBy field for $linearFill in one partition")
		}
	}
	next := make([]int, len(rows)) // index of the next row with a value (-1: none)
	n := -1
	for i := len(rows) - 1; i >= 0; i-- {
		next[i] = n
		if ys[i].Type != 0 {
			n = i
		}
	}
	prev := -1
	for i, r := range rows {
		switch {
		case ys[i].Type != 0:
			r.out[oi] = ys[i]
			prev = i
		case prev < 0 || next[i] < 0:
			r.out[oi] = expr.Null
		default:
			j := next[i]
			y1, y2 := value.Float(ys[prev]), value.Float(ys[j])
			y := y1 + (y2-y1)*(xs[i]-xs[prev])/(xs[j]-xs[prev])
			r.out[oi] = bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, y)}
		}
	}
	return nil
}

// covariance is $covariancePop or $covarianceSamp over rows: the input is
// [x, y]; pairs that are not two numbers are skipped.
func covariance(ectx *expr.Context, o *windowOutput, rows []*windowRow) (bsoncore.Value, error) {
	var xs, ys []float64
	for _, r := range rows {
		ectx.Root = r.doc
		v, err := o.arg.Eval(ectx)
		if err != nil {
			return expr.Missing, err
		}
		pair := expr.Elements(v)
		if v.Type != bsoncore.TypeArray || len(pair) != 2 || !isNumeric(pair[0]) || !isNumeric(pair[1]) {
			continue
		}
		xs, ys = append(xs, value.Float(pair[0])), append(ys, value.Float(pair[1]))
	}
	n := float64(len(xs))
	if n == 0 || (o.fn == "$covarianceSamp" && n < 2) {
		return expr.Null, nil
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var c float64
	for i := range xs {
		c += (xs[i] - mx) * (ys[i] - my)
	}
	if o.fn == "$covarianceSamp" {
		return expr.Double(c / (n - 1)), nil
	}
	return expr.Double(c / n), nil
}

// rate is $derivative (the change of the input per sortBy unit between the
// window's first and last documents) or $integral (the area under the
// input by the trapezoidal rule) over rows. Dates on the sortBy field need
// a unit; numbers take none.
func rate(ectx *expr.Context, o *windowOutput, rows []*windowRow) (bsoncore.Value, error) {
	xs := make([]float64, 0, len(rows))
	ys := make([]float64, 0, len(rows))
	for _, r := range rows {
		k := r.keys[0]
		var x float64
		switch {
		case k.Type == bsoncore.TypeDateTime:
			if o.rateMs == 0 {
				return expr.Missing, windowError("%s where the sortBy is a Date requires an 'unit'", o.fn)
			}
			x = float64(k.DateTime()) / float64(o.rateMs)
		case isNumeric(k):
			if o.rateMs != 0 {
				return expr.Missing, windowError("%s with 'unit' expects the sortBy field to be a Date", o.fn)
			}
			x = value.Float(k)
		default:
			return expr.Missing, windowError("%s requires the sortBy field to be a number or a date, found %s", o.fn, typeName(k))
		}
		ectx.Root = r.doc
		v, err := o.arg.Eval(ectx)
		if err != nil {
			return expr.Missing, err
		}
		if !isNumeric(v) {
			return expr.Missing, windowError("%s requires a numeric input, found %s", o.fn, typeName(v))
		}
		xs, ys = append(xs, x), append(ys, value.Float(v))
	}
	if o.fn == "$derivative" {
		if len(xs) < 2 || xs[len(xs)-1] == xs[0] {
			return expr.Null, nil
		}
		return expr.Double((ys[len(ys)-1] - ys[0]) / (xs[len(xs)-1] - xs[0])), nil
	}
	if len(xs) == 0 {
		return expr.Null, nil
	}
	var area float64
	for i := 1; i < len(xs); i++ {
		area += (ys[i] + ys[i-1]) / 2 * (xs[i] - xs[i-1])
	}
	return expr.Double(area), nil
}
