package expr

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// stdDevFn is $stdDevPop and $stdDevSamp as expressions: over the
// elements of a single array argument, or over the arguments.
func stdDevFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var d StdDev
	for _, v := range accumulate(args) {
		d.Add(v)
	}
	return d.Result(name == "$stdDevSamp"), nil
}

// nArrayExpr is $firstN, $lastN, $minN and $maxN as array expressions:
// {n, input}.
type nArrayExpr struct {
	name     string
	n, input Expression
}

func nArrayOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"n", "input"}, "n", "input")
	if err != nil {
		return nil, err
	}
	e := &nArrayExpr{name: name}
	if e.n, err = c.compile(m["n"]); err != nil {
		return nil, err
	}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	return e, nil
}

// CheckN validates the n of the N accumulators and array expressions: a
// positive integral number.
func CheckN(name string, v bsoncore.Value) (int64, error) {
	n, ok := exactInt(v)
	if !isNumber(v) || !ok {
		return 0, langerr.BadValue("Value for 'n' must be of integral type, but found %s", value.Render(v))
	}
	if n <= 0 {
		return 0, langerr.BadValue("'n' must be greater than 0, found %d", n)
	}
	return n, nil
}

func (e *nArrayExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	nv, err := e.n.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	n, err := CheckN(e.name, nv)
	if err != nil {
		return Missing, err
	}
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if in.Type != bsoncore.TypeArray {
		return Missing, langerr.BadValue("Input to %s must be an array, but found %s", e.name, value.Render(in))
	}
	vals := Elements(in)
	switch e.name {
	case "$firstN":
		return Array(vals[:min(int(n), len(vals))]), nil
	case "$lastN":
		return Array(vals[max(len(vals)-int(n), 0):]), nil
	}
	kept := vals[:0]
	for _, v := range vals {
		if !isNullish(v) {
			kept = append(kept, v)
		}
	}
	slices.SortStableFunc(kept, func(a, b bsoncore.Value) int {
		if e.name == "$maxN" {
			return Compare(b, a)
		}
		return Compare(a, b)
	})
	return Array(kept[:min(int(n), len(kept))]), nil
}

// percentileExpr is $median and $percentile as expressions.
type percentileExpr struct {
	name  string
	input Expression
	ps    []float64 // nil for $median
}

func percentileOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	allowed := []string{"input", "p", "method"}
	required := []string{"input", "p", "method"}
	if name == "$median" {
		allowed, required = []string{"input", "method"}, []string{"input", "method"}
	}
	m, err := namedArgs(name, arg, allowed, required...)
	if err != nil {
		return nil, err
	}
	if err := CheckPercentileMethod(name, m["method"]); err != nil {
		return nil, err
	}
	e := &percentileExpr{name: name}
	if name == "$percentile" {
		if e.ps, err = PercentileList(m["p"]); err != nil {
			return nil, err
		}
	}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	return e, nil
}

// CheckPercentileMethod accepts the one method MongoDB 7.0 has.
func CheckPercentileMethod(name string, v bsoncore.Value) error {
	if !isString(v) || stringOf(v) != "approximate" {
		return langerr.BadValue("Currently only 'approximate' can be used as percentile 'method'.")
	}
	return nil
}

// PercentileList reads $percentile's p: a non-empty array of numbers in
// [0, 1].
func PercentileList(v bsoncore.Value) ([]float64, error) {
	if v.Type != bsoncore.TypeArray || len(Elements(v)) == 0 {
		return nil, langerr.BadValue("The 'p' field must be an array of numbers, but found: %s", value.Render(v))
	}
	var out []float64
	for _, x := range Elements(v) {
		f := value.Float(x)
		if !isNumber(x) || f < 0 || f > 1 || math.IsNaN(f) {
			return nil, langerr.BadValue("The 'p' field must be an array of numbers from [0.0, 1.0], but found: %s", value.Render(x))
		}
		out = append(out, f)
	}
	return out, nil
}

// Percentiles returns the discrete percentiles ps of the numbers xs
// (sorted in place): the value at rank ceil(p*n); nulls when xs is empty.
func Percentiles(xs []float64, ps []float64) []bsoncore.Value {
	slices.Sort(xs)
	out := make([]bsoncore.Value, len(ps))
	for i, p := range ps {
		if len(xs) == 0 {
			out[i] = Null
			continue
		}
		r := int(math.Ceil(p*float64(len(xs)))) - 1
		r = min(max(r, 0), len(xs)-1)
		out[i] = Double(xs[r])
	}
	return out
}

func (e *percentileExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	var xs []float64
	vals := []bsoncore.Value{in}
	if in.Type == bsoncore.TypeArray {
		vals = Elements(in)
	}
	for _, v := range vals {
		if isNumber(v) {
			xs = append(xs, value.Float(v))
		}
	}
	if e.name == "$median" {
		return Percentiles(xs, []float64{0.5})[0], nil
	}
	return Array(Percentiles(xs, e.ps)), nil
}

// sortArrayExpr is $sortArray {input, sortBy}.
type sortArrayExpr struct {
	input Expression
	dir   int // sortBy: 1 or -1 (whole values)
	paths [][]string
	dirs  []int
}

func sortArrayOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "sortBy"}, "input", "sortBy")
	if err != nil {
		return nil, err
	}
	e := &sortArrayExpr{}
	sb := m["sortBy"]
	switch {
	case isNumber(sb):
		f := value.Float(sb)
		if f != 1 && f != -1 {
			return nil, langerr.BadValue("$sortArray sortBy must be either 1 or -1, or a document")
		}
		e.dir = int(f)
	case sb.Type == bsoncore.TypeEmbeddedDocument:
		fs := Fields(sb)
		if len(fs) == 0 {
			return nil, langerr.BadValue("$sortArray sortBy must not be empty")
		}
		for _, f := range fs {
			d := value.Float(f.Val)
			if !isNumber(f.Val) || (d != 1 && d != -1) {
				return nil, langerr.BadValue("$sortArray sort key ordering must be 1 (for ascending) or -1 (for descending)")
			}
			e.paths = append(e.paths, strings.Split(f.Key, "."))
			e.dirs = append(e.dirs, int(d))
		}
	default:
		return nil, langerr.BadValue("$sortArray requires sortBy to be either 1 or -1, or an object")
	}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *sortArrayExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if isNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrSortArrayType, "The input argument to $sortArray must be an array, but was of type: %s", TypeName(in))
	}
	vals := Elements(in)
	slices.SortStableFunc(vals, func(a, b bsoncore.Value) int {
		if e.dir != 0 {
			return e.dir * Compare(a, b)
		}
		for i, p := range e.paths {
			ka, kb := sortKeyOf(a, p, e.dirs[i]), sortKeyOf(b, p, e.dirs[i])
			if c := Compare(ka, kb); c != 0 {
				return c * e.dirs[i]
			}
		}
		return 0
	})
	return Array(vals), nil
}

// sortKeyOf is the value a path reaches for sorting (null when missing;
// an array gives its smallest element ascending, largest descending).
func sortKeyOf(v bsoncore.Value, path []string, dir int) bsoncore.Value {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return Null
	}
	x := getPath(v, path)
	if x.Type == bsoncore.TypeArray {
		els := Elements(x)
		if len(els) == 0 {
			return bsoncore.Value{Type: bsoncore.TypeUndefined}
		}
		best := els[0]
		for _, y := range els[1:] {
			if Compare(y, best)*dir < 0 {
				best = y
			}
		}
		return best
	}
	if x.Type == 0 {
		return Null
	}
	return x
}

// zipExpr is $zip {inputs, useLongestLength, defaults}.
type zipExpr struct {
	inputs   []Expression
	longest  bool
	defaults []Expression
}

func zipOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"inputs", "useLongestLength", "defaults"}, "inputs")
	if err != nil {
		return nil, err
	}
	e := &zipExpr{}
	in := m["inputs"]
	if in.Type != bsoncore.TypeArray {
		return nil, langerr.New(ErrZipInputsArray, "inputs must be an array of expressions, found %s", TypeName(in))
	}
	if e.inputs, err = c.compileAll(Elements(in)); err != nil {
		return nil, err
	}
	if len(e.inputs) == 0 {
		return nil, missingArgError(name, "inputs")
	}
	if l, ok := m["useLongestLength"]; ok {
		if l.Type != bsoncore.TypeBoolean {
			// MongoDB names the type of $zip's whole argument here, not
			// useLongestLength's: always "object".
			return nil, langerr.New(ErrZipLongestBool, "useLongestLength must be a bool, found %s", TypeName(arg))
		}
		e.longest = l.Boolean()
	}
	if d, ok := m["defaults"]; ok {
		if d.Type != bsoncore.TypeArray {
			return nil, langerr.New(ErrZipDefaultArray, "defaults must be an array of expressions, found %s", TypeName(d))
		}
		if e.defaults, err = c.compileAll(Elements(d)); err != nil {
			return nil, err
		}
		if !e.longest {
			return nil, langerr.New(ErrZipDefaults, "cannot specify defaults unless useLongestLength is true")
		}
		if len(e.defaults) != len(e.inputs) {
			return nil, langerr.New(ErrZipDefaultsLen, "defaults and inputs must have the same length")
		}
	}
	return e, nil
}

func (e *zipExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	var arrays [][]bsoncore.Value
	minLen, maxLen := math.MaxInt, 0
	for _, x := range e.inputs {
		v, err := x.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(v) {
			return Null, nil
		}
		if v.Type != bsoncore.TypeArray {
			return Missing, langerr.New(ErrZipType, "$zip found a non-array expression in input: %s", value.Render(v))
		}
		a := Elements(v)
		arrays = append(arrays, a)
		minLen, maxLen = min(minLen, len(a)), max(maxLen, len(a))
	}
	if len(arrays) == 0 {
		return Array(nil), nil
	}
	n := minLen
	if e.longest {
		n = maxLen
	}
	defs := make([]bsoncore.Value, len(arrays))
	for i := range defs {
		defs[i] = Null
		if e.defaults != nil {
			v, err := e.defaults[i].Eval(ctx)
			if err != nil {
				return Missing, err
			}
			defs[i] = v
		}
	}
	out := make([]bsoncore.Value, n)
	for i := range n {
		row := make([]bsoncore.Value, len(arrays))
		for j, a := range arrays {
			if i < len(a) {
				row[j] = a[i]
			} else {
				row[j] = defs[j]
			}
		}
		out[i] = Array(row)
	}
	return Array(out), nil
}

func bsonSizeFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	switch {
	case isNullish(a[0]):
		return Null, nil
	case a[0].Type != bsoncore.TypeEmbeddedDocument:
		return Missing, langerr.BadValue("$bsonSize requires a document input, found: %s", TypeName(a[0]))
	}
	return Int32(int32(len(a[0].Data))), nil
}

func binarySizeFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	switch {
	case isNullish(a[0]):
		return Null, nil
	case isString(a[0]):
		return Int32(int32(len(stringOf(a[0])))), nil
	case a[0].Type == bsoncore.TypeBinary:
		_, b := a[0].Binary()
		return Int32(int32(len(b))), nil
	}
	return Missing, langerr.BadValue("$binarySize requires a string or BinData argument, found: %s", TypeName(a[0]))
}

// constantArg is what an operator's argument that must be a constant
// holds: the value of {$literal: v} or {$const: v}, or v itself when it is
// neither an expression object nor a field path; constant is false for
// anything MongoDB would have to evaluate (an object, an operator, "$x").
func constantArg(v bsoncore.Value) (_ bsoncore.Value, constant bool) {
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument:
		fs := Fields(v)
		if len(fs) == 1 && (fs[0].Key == "$literal" || fs[0].Key == "$const") {
			return fs[0].Val, true
		}
		return v, false
	case v.Type == bsoncore.TypeArray:
		return v, false
	case isString(v) && strings.HasPrefix(stringOf(v), "$"):
		return v, false
	}
	return v, true
}

// setFieldExpr is $setField and $unsetField (value nil).
type setFieldExpr struct {
	field        string
	input, value Expression
}

func setFieldOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	allowed, required := []string{"field", "input", "value"}, []string{"field", "input", "value"}
	if name == "$unsetField" {
		allowed, required = []string{"field", "input"}, []string{"field", "input"}
	}
	m, err := namedArgs(name, arg, allowed, required...)
	if err != nil {
		return nil, err
	}
	f, constant := constantArg(m["field"])
	if isString(f) && strings.HasPrefix(stringOf(f), "$") && !constant {
		return nil, langerr.BadValue("%s: 'field' must be a constant string, but got a field path or variable", name)
	}
	if !constant {
		// MongoDB names $setField here, $unsetField too.
		return nil, langerr.New(ErrSetFieldNonConstant, "$setField requires 'field' to evaluate to a constant, but got a non-constant argument")
	}
	if !isString(f) {
		return nil, langerr.New(ErrSetFieldFieldType, "%s requires 'field' to evaluate to type String, but got %s", name, TypeName(f))
	}
	if strings.IndexByte(stringOf(f), 0) >= 0 {
		return nil, langerr.BadValue("%s: 'field' cannot contain an embedded null byte", name)
	}
	e := &setFieldExpr{field: stringOf(f)}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if name == "$setField" {
		if e.value, err = c.compile(m["value"]); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *setFieldExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if isNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, langerr.New(ErrSetFieldInputObject, "$setField requires 'input' to evaluate to type Object")
	}
	v := Missing
	if e.value != nil {
		if v, err = e.value.Eval(ctx); err != nil {
			return Missing, err
		}
	}
	fields := Fields(in)
	done := false
	for i := range fields {
		if fields[i].Key == e.field {
			fields[i].Val = v
			done = true
		}
	}
	if !done {
		fields = append(fields, Field{e.field, v})
	}
	return Document(fields), nil
}

func randFn(_ string, _ []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return Double(rand.Float64()), nil
}

func randOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(Fields(arg)) != 0 {
		return nil, langerr.New(ErrRandArguments, "$rand does not currently accept arguments")
	}
	return &callExpr{name: name, fn: randFn}, nil
}

func tsPartFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeTimestamp {
		return Missing, langerr.BadValue("Argument to %s must be a timestamp, but is %s", name, TypeName(a[0]))
	}
	t, i := a[0].Timestamp()
	if name == "$tsSecond" {
		return Int64(int64(t)), nil
	}
	return Int64(int64(i)), nil
}

// trigFn applies a trigonometric function with MongoDB's domain checks.
func trigFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	v := a[0]
	if isNullish(v) {
		return Null, nil
	}
	if !isNumber(v) {
		return Missing, langerr.New(ErrNotNumeric, "%s only supports numeric types, not %s", name, TypeName(v))
	}
	x := value.Float(v)
	type domain struct {
		lo, hi         float64
		loOpen, hiOpen bool
	}
	fns := map[string]struct {
		f func(float64) float64
		d *domain
	}{
		"$sin": {math.Sin, &domain{math.Inf(-1), math.Inf(1), true, true}}, "$cos": {math.Cos, &domain{math.Inf(-1), math.Inf(1), true, true}},
		"$tan":  {math.Tan, &domain{math.Inf(-1), math.Inf(1), true, true}},
		"$asin": {math.Asin, &domain{-1, 1, false, false}}, "$acos": {math.Acos, &domain{-1, 1, false, false}},
		"$atan": {math.Atan, nil}, "$sinh": {math.Sinh, nil}, "$cosh": {math.Cosh, nil}, "$tanh": {math.Tanh, nil},
		"$asinh": {math.Asinh, nil}, "$acosh": {math.Acosh, &domain{1, math.Inf(1), false, false}},
		"$atanh":            {math.Atanh, &domain{-1, 1, false, false}},
		"$degreesToRadians": {func(d float64) float64 { return d * math.Pi / 180 }, nil},
		"$radiansToDegrees": {func(r float64) float64 { return r * 180 / math.Pi }, nil},
	}
	fn := fns[name]
	if d := fn.d; d != nil && !math.IsNaN(x) {
		bad := x < d.lo || x > d.hi || (d.loOpen && x == d.lo) || (d.hiOpen && x == d.hi)
		if bad {
			open, close := "[", "]"
			if d.loOpen {
				open = "("
			}
			if d.hiOpen {
				close = ")"
			}
			shown := streamedDouble(x) // mongod streams the input as a double
			if v.Type == bsoncore.TypeDecimal128 {
				shown = value.Render(v) // a decimal as its string
			}
			return Missing, langerr.New(ErrTrigDomain, "cannot apply %s to %s, value must be in %s%s,%s%s", name, shown, open, streamedDouble(d.lo), streamedDouble(d.hi), close)
		}
	}
	r := fn.f(x)
	if v.Type == bsoncore.TypeDecimal128 {
		return toDecimal(Double(r)), nil
	}
	return Double(r), nil
}

// streamedDouble writes f as mongod's messages do when they stream a
// double rather than a BSON value (C's "%g"): 2, 0.5, 1e+20, inf, nan.
func streamedDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func atan2Fn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if null, err := numericArgs(name, a); err != nil || null {
		if err != nil {
			return Missing, err
		}
		return Null, nil
	}
	r := math.Atan2(value.Float(a[0]), value.Float(a[1]))
	if a[0].Type == bsoncore.TypeDecimal128 || a[1].Type == bsoncore.TypeDecimal128 {
		return toDecimal(Double(r)), nil
	}
	return Double(r), nil
}

func bitFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var acc int64
	switch name {
	case "$bitAnd":
		acc = -1
	case "$bitNot":
		if len(args) != 1 {
			return Missing, langerr.New(ErrArity, "Expression $bitNot takes exactly 1 arguments. %d were passed in.", len(args))
		}
	}
	long := false
	for _, a := range args {
		switch a.Type {
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			return Null, nil
		case bsoncore.TypeInt32:
		case bsoncore.TypeInt64:
			long = true
		default:
			return Missing, langerr.TypeMismatch("%s only supports int and long operands.", name)
		}
		x := asInt(a)
		switch name {
		case "$bitAnd":
			acc &= x
		case "$bitOr":
			acc |= x
		case "$bitXor":
			acc ^= x
		case "$bitNot":
			acc = ^x
		}
	}
	if long {
		return Int64(acc), nil
	}
	return Int32(int32(acc)), nil
}
