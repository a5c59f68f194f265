package agg

import (
	"slices"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// accumulator folds the values of one group (or window). Every
// accumulator can also export its state as a BSON value and merge such
// states: that is how a partial $group on each partition hands over to
// the final one, and how a spilled $group is merged back.
type accumulator interface {
	// add folds one input: v is the argument's value (missing when the
	// path reaches nothing); ctx is the document's context ($top and
	// $bottom read their sort keys from it). Kept values are copied.
	add(v bsoncore.Value, ctx *expr.Context) error
	result() bsoncore.Value
	state() bsoncore.Value
	merge(state bsoncore.Value) error
	// size approximates the bytes held.
	size() int
}

// accSpec is one compiled accumulator of a $group (or window function).
type accSpec struct {
	field  string
	op     string
	arg    expr.Expression // nil: $count
	n      expr.Expression // $firstN, $topN, ...: evaluated per group
	sortBy *query.Sort     // $top, $bottom, $topN, $bottomN
	ps     []float64       // $percentile
	raw    bsoncore.Value
	coll   *value.Collator // the pipeline's collation: $min, $max, $addToSet
}

// unaryAccumulators take one expression.
var unaryAccumulators = map[string]bool{
	"$sum": true, "$avg": true, "$min": true, "$max": true, "$first": true, "$last": true, "$push": true,
	"$addToSet": true, "$mergeObjects": true, "$stdDevPop": true, "$stdDevSamp": true,
}

func parseAccumulator(e *env, field, op string, arg bsoncore.Value) (*accSpec, error) {
	a := &accSpec{field: field, op: op, raw: cloneValue(arg), coll: e.opts.Collation}
	var err error
	switch {
	case unaryAccumulators[op]:
		if arg.Type == bsoncore.TypeArray {
			return nil, langerr.New(ErrAccumulatorUnary, "The %s accumulator is a unary operator", op)
		}
		a.arg, err = e.compile(arg)
	case op == "$count":
		if arg.Type != bsoncore.TypeEmbeddedDocument || len(arg.Data) > 5 {
			return nil, langerr.BadValue("$count takes no arguments, i.e. $count:{}")
		}
	case op == "$firstN" || op == "$lastN" || op == "$maxN" || op == "$minN":
		m, err := namedArgs(op, arg, []string{"n", "input"}, "input", "n")
		if err != nil {
			return nil, err
		}
		if a.n, err = e.compile(m["n"]); err != nil {
			return nil, err
		}
		a.arg, err = e.compile(m["input"])
		if err != nil {
			return nil, err
		}
	case op == "$top" || op == "$bottom" || op == "$topN" || op == "$bottomN":
		allowed, required := []string{"sortBy", "output"}, []string{"output", "sortBy"}
		if op == "$topN" || op == "$bottomN" {
			allowed, required = append(allowed, "n"), append(required, "n")
		}
		m, err := namedArgs(op, arg, allowed, required...)
		if err != nil {
			return nil, err
		}
		sb := m["sortBy"]
		if sb.Type != bsoncore.TypeEmbeddedDocument {
			return nil, langerr.BadValue("%s expects 'sortBy' to be an object, but found %s", op, typeName(sb))
		}
		if a.sortBy, err = query.CompileSort(sb.Document()); err != nil {
			return nil, err
		}
		a.sortBy = a.sortBy.WithCollation(e.opts.Collation)
		if a.arg, err = e.compile(m["output"]); err != nil {
			return nil, err
		}
		if n, ok := m["n"]; ok {
			if a.n, err = e.compile(n); err != nil {
				return nil, err
			}
		}
	case op == "$median" || op == "$percentile":
		allowed := []string{"input", "method"}
		if op == "$percentile" {
			allowed = append(allowed, "p")
		}
		m, err := namedArgs(op, arg, allowed, allowed...)
		if err != nil {
			return nil, err
		}
		if err := expr.CheckPercentileMethod(op, m["method"]); err != nil {
			return nil, err
		}
		if op == "$percentile" {
			if a.ps, err = expr.PercentileList(m["p"]); err != nil {
				return nil, err
			}
		}
		a.arg, err = e.compile(m["input"])
		if err != nil {
			return nil, err
		}
	case op == "$accumulator" || op == "$function":
		return nil, langerr.New(langerr.ErrNotImplemented, "%s is not supported by Parsec: server-side JavaScript is not available", op)
	default:
		return nil, langerr.New(ErrUnknownAccumulator, "unknown group operator '%s'", op)
	}
	return a, err
}

// namedArgs reads an accumulator's object argument.
func namedArgs(op string, arg bsoncore.Value, allowed []string, required ...string) (map[string]bsoncore.Value, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, langerr.BadValue("specification must be an object; found %s: %s", op, value.Render(arg))
	}
	m := map[string]bsoncore.Value{}
	elems, _ := arg.Document().Elements()
	for _, el := range elems {
		if !slices.Contains(allowed, el.Key()) {
			return nil, langerr.BadValue("Unknown argument for '%s' operator: %s", op, el.Key())
		}
		m[el.Key()] = el.Value()
	}
	for _, r := range required {
		if _, ok := m[r]; !ok {
			return nil, langerr.BadValue("Missing value for '%s'", r)
		}
	}
	return m, nil
}

// newAccumulator starts a group's accumulator; nCtx evaluates n.
func (a *accSpec) newAccumulator(nCtx *expr.Context) (accumulator, error) {
	n := int64(1)
	if a.n != nil {
		v, err := a.n.Eval(nCtx)
		if err != nil {
			return nil, err
		}
		if n, err = expr.CheckN(a.op, v); err != nil {
			return nil, err
		}
	}
	switch a.op {
	case "$sum", "$count":
		return &sumAcc{}, nil
	case "$avg":
		return &sumAcc{avg: true}, nil
	case "$min", "$max":
		return &extremeAcc{max: a.op == "$max", coll: a.coll}, nil
	case "$first", "$last":
		return &firstLastAcc{last: a.op == "$last"}, nil
	case "$push":
		return &pushAcc{}, nil
	case "$addToSet":
		return &setAcc{seen: map[string]bool{}, coll: a.coll}, nil
	case "$mergeObjects":
		return &mergeObjectsAcc{}, nil
	case "$stdDevPop", "$stdDevSamp":
		return &stdDevAcc{sample: a.op == "$stdDevSamp"}, nil
	case "$firstN", "$lastN":
		return &firstLastNAcc{n: n, last: a.op == "$lastN"}, nil
	case "$minN", "$maxN":
		return &extremeNAcc{n: n, max: a.op == "$maxN"}, nil
	case "$top", "$bottom", "$topN", "$bottomN":
		return &topAcc{spec: a, n: n, single: a.n == nil, bottom: a.op == "$bottom" || a.op == "$bottomN"}, nil
	case "$median", "$percentile":
		return &percentileAcc{ps: a.ps, median: a.op == "$median"}, nil
	}
	return nil, langerr.New(ErrUnknownAccumulator, "unknown group operator '%s'", a.op)
}

// eval computes the accumulator's argument for the document in ctx.
func (a *accSpec) eval(ctx *expr.Context) (bsoncore.Value, error) {
	if a.arg == nil {
		return one, nil
	}
	return a.arg.Eval(ctx)
}

var one = expr.Int32(1)

// $sum, $avg and $count

type sumAcc struct {
	s   expr.Sum
	avg bool
}

func (a *sumAcc) add(v bsoncore.Value, _ *expr.Context) error {
	a.s.Add(v)
	return nil
}

func (a *sumAcc) result() bsoncore.Value {
	if a.avg {
		return a.s.Average()
	}
	return a.s.Total()
}

func (a *sumAcc) state() bsoncore.Value {
	st := a.s.State()
	b := bsoncore.NewDocumentBuilder().AppendInt32("k", st.Kind).AppendInt64("n", st.N).
		AppendInt64("ih", st.IntHi).AppendInt64("il", st.IntLo).AppendDouble("h", st.Hi).AppendDouble("l", st.Lo).
		AppendInt32("s", st.DecSpecial).AppendBoolean("f", st.HasFloat)
	if st.Dec.Type != 0 {
		b.AppendValue("d", st.Dec)
	}
	return docValue(b.Build())
}

func (a *sumAcc) merge(state bsoncore.Value) error {
	d, ok := state.DocumentOK()
	if !ok {
		return langerr.BadValue("bad partial $sum state")
	}
	get := func(k string) bsoncore.Value { v, _ := d.LookupErr(k); return v }
	st := expr.SumState{
		Kind: get("k").Int32(), N: get("n").Int64(), IntHi: get("ih").Int64(), IntLo: get("il").Int64(),
		Hi: get("h").Double(), Lo: get("l").Double(), DecSpecial: get("s").Int32(), HasFloat: get("f").Boolean(), Dec: get("d"),
	}
	o := expr.SumFromState(st)
	a.s.Merge(&o)
	return nil
}

func (a *sumAcc) size() int { return 96 }

// $min and $max

type extremeAcc struct {
	coll  *value.Collator
	max   bool
	v     bsoncore.Value
	found bool
}

func (a *extremeAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return nil
	}
	c := expr.CompareWith(v, a.v, a.coll)
	if !a.found || (a.max && c > 0) || (!a.max && c < 0) {
		a.v, a.found = cloneValue(v), true
	}
	return nil
}

func (a *extremeAcc) result() bsoncore.Value {
	if !a.found {
		return expr.Null
	}
	return a.v
}

func (a *extremeAcc) state() bsoncore.Value {
	if !a.found {
		return expr.Array(nil)
	}
	return expr.Array([]bsoncore.Value{a.v})
}

func (a *extremeAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		if err := a.add(v, nil); err != nil {
			return err
		}
	}
	return nil
}

func (a *extremeAcc) size() int { return 32 + len(a.v.Data) }

// $first and $last

type firstLastAcc struct {
	last bool
	v    bsoncore.Value
	set  bool
}

func (a *firstLastAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if a.set && !a.last {
		return nil
	}
	if v.Type == 0 {
		v = expr.Null
	}
	a.v, a.set = cloneValue(v), true
	return nil
}

func (a *firstLastAcc) result() bsoncore.Value {
	if !a.set {
		return expr.Null
	}
	return a.v
}

func (a *firstLastAcc) state() bsoncore.Value {
	if !a.set {
		return expr.Array(nil)
	}
	return expr.Array([]bsoncore.Value{a.v})
}

func (a *firstLastAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}

func (a *firstLastAcc) size() int { return 32 + len(a.v.Data) }

// $push

type pushAcc struct {
	vals  []bsoncore.Value
	bytes int
}

func (a *pushAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if v.Type == 0 {
		return nil
	}
	a.vals = append(a.vals, cloneValue(v))
	a.bytes += len(v.Data) + 24
	return nil
}

func (a *pushAcc) result() bsoncore.Value { return expr.Array(a.vals) }
func (a *pushAcc) state() bsoncore.Value  { return expr.Array(a.vals) }
func (a *pushAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}
func (a *pushAcc) size() int { return 32 + a.bytes }

// $addToSet

type setAcc struct {
	coll  *value.Collator
	vals  []bsoncore.Value
	seen  map[string]bool
	bytes int
	buf   []byte
}

func (a *setAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if v.Type == 0 {
		return nil
	}
	a.buf = keyOf(a.buf[:0], v, a.coll)
	if a.seen[string(a.buf)] {
		return nil
	}
	a.seen[string(a.buf)] = true
	a.vals = append(a.vals, cloneValue(v))
	a.bytes += 2*len(v.Data) + 48
	return nil
}

func (a *setAcc) result() bsoncore.Value { return expr.Array(a.vals) }
func (a *setAcc) state() bsoncore.Value  { return expr.Array(a.vals) }
func (a *setAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}
func (a *setAcc) size() int { return 48 + a.bytes }

// $mergeObjects

type mergeObjectsAcc struct {
	fields []expr.Field
	bytes  int
}

func (a *mergeObjectsAcc) add(v bsoncore.Value, _ *expr.Context) error {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return langerr.BadValue("$mergeObjects requires object inputs, but input %s is of type %s", value.Render(v), typeName(v))
	}
next:
	for _, f := range expr.Fields(v) {
		f.Val = cloneValue(f.Val)
		a.bytes += len(f.Key) + len(f.Val.Data) + 32
		for i := range a.fields {
			if a.fields[i].Key == f.Key {
				a.fields[i].Val = f.Val
				continue next
			}
		}
		a.fields = append(a.fields, f)
	}
	return nil
}

func (a *mergeObjectsAcc) result() bsoncore.Value           { return expr.Document(a.fields) }
func (a *mergeObjectsAcc) state() bsoncore.Value            { return expr.Document(a.fields) }
func (a *mergeObjectsAcc) merge(state bsoncore.Value) error { return a.add(state, nil) }
func (a *mergeObjectsAcc) size() int                        { return 32 + a.bytes }

// $stdDevPop and $stdDevSamp

type stdDevAcc struct {
	d      expr.StdDev
	sample bool
}

func (a *stdDevAcc) add(v bsoncore.Value, _ *expr.Context) error {
	a.d.Add(v)
	return nil
}

func (a *stdDevAcc) result() bsoncore.Value { return a.d.Result(a.sample) }

func (a *stdDevAcc) state() bsoncore.Value {
	return docValue(bsoncore.NewDocumentBuilder().AppendInt64("n", a.d.N).AppendDouble("m", a.d.Mean).AppendDouble("m2", a.d.M2).Build())
}

func (a *stdDevAcc) merge(state bsoncore.Value) error {
	d, ok := state.DocumentOK()
	if !ok {
		return langerr.BadValue("bad partial $stdDev state")
	}
	n, _ := d.Lookup("n").Int64OK()
	m, _ := d.Lookup("m").DoubleOK()
	m2, _ := d.Lookup("m2").DoubleOK()
	a.d.Merge(expr.StdDev{N: n, Mean: m, M2: m2})
	return nil
}

func (a *stdDevAcc) size() int { return 48 }

// $firstN and $lastN keep nulls (and turn missing into null).

type firstLastNAcc struct {
	n     int64
	last  bool
	vals  []bsoncore.Value
	bytes int
}

func (a *firstLastNAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if !a.last && int64(len(a.vals)) >= a.n {
		return nil
	}
	if v.Type == 0 {
		v = expr.Null
	}
	a.vals = append(a.vals, cloneValue(v))
	a.bytes += len(v.Data) + 24
	if a.last && int64(len(a.vals)) > a.n {
		a.bytes -= len(a.vals[0].Data) + 24
		a.vals = a.vals[1:]
	}
	return nil
}

func (a *firstLastNAcc) result() bsoncore.Value { return expr.Array(a.vals) }
func (a *firstLastNAcc) state() bsoncore.Value  { return expr.Array(a.vals) }
func (a *firstLastNAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}
func (a *firstLastNAcc) size() int { return 32 + a.bytes }

// $minN and $maxN skip null and missing.

type extremeNAcc struct {
	n     int64
	max   bool
	vals  []bsoncore.Value
	bytes int
}

func (a *extremeNAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return nil
	}
	better := func(x, y bsoncore.Value) bool {
		c := expr.Compare(x, y)
		return (a.max && c > 0) || (!a.max && c < 0)
	}
	if int64(len(a.vals)) >= a.n && !better(v, a.vals[len(a.vals)-1]) {
		return nil
	}
	i := len(a.vals)
	for i > 0 && better(v, a.vals[i-1]) {
		i--
	}
	a.vals = slices.Insert(a.vals, i, cloneValue(v))
	a.bytes += len(v.Data) + 24
	if int64(len(a.vals)) > a.n {
		a.bytes -= len(a.vals[len(a.vals)-1].Data) + 24
		a.vals = a.vals[:a.n]
	}
	return nil
}

func (a *extremeNAcc) result() bsoncore.Value { return expr.Array(a.vals) }
func (a *extremeNAcc) state() bsoncore.Value  { return expr.Array(a.vals) }
func (a *extremeNAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}
func (a *extremeNAcc) size() int { return 32 + a.bytes }

// $top, $bottom, $topN and $bottomN: the first (or last) n outputs in
// the sortBy order of their documents.

type topAcc struct {
	spec   *accSpec
	n      int64
	single bool
	bottom bool
	items  []topItem
	bytes  int
}

type topItem struct {
	keys []bsoncore.Value
	out  bsoncore.Value
}

func (a *topAcc) better(x, y []bsoncore.Value) bool {
	c := a.spec.sortBy.CompareKeys(x, y)
	if a.bottom {
		return c > 0
	}
	return c < 0
}

func (a *topAcc) insert(keys []bsoncore.Value, out bsoncore.Value) {
	if int64(len(a.items)) >= a.n && !a.better(keys, a.items[len(a.items)-1].keys) {
		return
	}
	i := len(a.items)
	for i > 0 && a.better(keys, a.items[i-1].keys) {
		i--
	}
	a.items = slices.Insert(a.items, i, topItem{keys, out})
	a.bytes += len(out.Data) + 64
	if int64(len(a.items)) > a.n {
		a.items = a.items[:a.n]
	}
}

func (a *topAcc) add(v bsoncore.Value, ctx *expr.Context) error {
	if v.Type == 0 {
		v = expr.Null
	}
	root := ctx.Root
	keys := a.spec.sortBy.Keys(root)
	for i := range keys {
		keys[i] = cloneValue(keys[i])
	}
	a.insert(keys, cloneValue(v))
	return nil
}

func (a *topAcc) result() bsoncore.Value {
	if a.single {
		if len(a.items) == 0 {
			return expr.Null
		}
		return a.items[0].out
	}
	// Results are in sortBy order: $bottomN's kept items are held
	// bottom-first.
	out := make([]bsoncore.Value, len(a.items))
	for i, it := range a.items {
		if a.bottom {
			out[len(out)-1-i] = it.out
		} else {
			out[i] = it.out
		}
	}
	return expr.Array(out)
}

func (a *topAcc) state() bsoncore.Value {
	out := make([]bsoncore.Value, len(a.items))
	for i, it := range a.items {
		out[i] = expr.Array([]bsoncore.Value{expr.Array(it.keys), it.out})
	}
	return expr.Array(out)
}

func (a *topAcc) merge(state bsoncore.Value) error {
	for _, it := range expr.Elements(state) {
		pair := expr.Elements(it)
		if len(pair) != 2 {
			return langerr.BadValue("bad partial %s state", a.spec.op)
		}
		keys := expr.Elements(pair[0])
		for i := range keys {
			keys[i] = cloneValue(keys[i])
		}
		a.insert(keys, cloneValue(pair[1]))
	}
	return nil
}

func (a *topAcc) size() int { return 48 + a.bytes }

// $median and $percentile

type percentileAcc struct {
	ps     []float64
	median bool
	xs     []float64
}

func (a *percentileAcc) add(v bsoncore.Value, _ *expr.Context) error {
	if isNumeric(v) {
		a.xs = append(a.xs, value.Float(v))
	}
	return nil
}

func (a *percentileAcc) result() bsoncore.Value {
	xs := append([]float64(nil), a.xs...)
	if a.median {
		return expr.Percentiles(xs, []float64{0.5})[0]
	}
	return expr.Array(expr.Percentiles(xs, a.ps))
}

func (a *percentileAcc) state() bsoncore.Value {
	out := make([]bsoncore.Value, len(a.xs))
	for i, x := range a.xs {
		out[i] = expr.Double(x)
	}
	return expr.Array(out)
}

func (a *percentileAcc) merge(state bsoncore.Value) error {
	for _, v := range expr.Elements(state) {
		_ = a.add(v, nil)
	}
	return nil
}

func (a *percentileAcc) size() int { return 32 + 8*len(a.xs) }
