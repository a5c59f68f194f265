package expr

import (
	"math"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func inFn(coll *value.Collator) evalFn {
	return func(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
		return inEval(a, coll)
	}
}

func inEval(a []bsoncore.Value, coll *value.Collator) (bsoncore.Value, error) {
	if a[1].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrInNotArray, "$in requires an array as a second argument, found: %s", TypeName(a[1]))
	}
	for _, x := range Elements(a[1]) {
		if CompareWith(a[0], x, coll) == 0 {
			return Bool(true), nil
		}
	}
	return Bool(false), nil
}

func sizeFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrSizeNotArray, "The argument to $size must be an array, but was of type: %s", TypeName(a[0]))
	}
	return Int32(int32(len(Elements(a[0])))), nil
}

// sliceArg reads $slice's second or third argument: an integral number
// that fits int32, refused in MongoDB's words.
func sliceArg(third bool, v bsoncore.Value) (int64, error) {
	if !isNumber(v) {
		if third {
			return 0, langerr.New(ErrSliceNType, "Third argument to $slice must be numeric, but is of type: %s", TypeName(v))
		}
		return 0, langerr.New(ErrSlicePosType, "Second argument to $slice must be a numeric value, but is of type: %s", TypeName(v))
	}
	i, ok := exactInt(v)
	if !ok || i != int64(int32(i)) {
		// mongod streams the argument as a double here.
		if third {
			return 0, langerr.New(ErrSliceNInt, "Third argument to $slice can't be represented as a 32-bit integer: %s", streamedDouble(value.Float(v)))
		}
		return 0, langerr.New(ErrSlicePosInt, "Second argument to $slice can't be represented as a 32-bit integer: %s", streamedDouble(value.Float(v)))
	}
	return i, nil
}

func arrayElemAtFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) || isNullish(a[1]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrElemAtNotArray, "$arrayElemAt's first argument must be an array, but is %s", TypeName(a[0]))
	}
	if !isNumber(a[1]) {
		return Missing, langerr.New(ErrElemAtIndexType, "$arrayElemAt's second argument must be a numeric value, but is %s", TypeName(a[1]))
	}
	i, ok := exactInt(a[1])
	if !ok || i != int64(int32(i)) {
		return Missing, langerr.New(ErrElemAtIndexInt, "$arrayElemAt's second argument must be representable as a 32-bit integer: %s", value.Render(a[1]))
	}
	return elemAt(Elements(a[0]), i), nil
}

// elemAt is arr[i], counting from the end for negative i; missing out of
// range.
func elemAt(arr []bsoncore.Value, i int64) bsoncore.Value {
	if i < 0 {
		i += int64(len(arr))
	}
	if i < 0 || i >= int64(len(arr)) {
		return Missing
	}
	return arr[i]
}

func firstFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return endOf(name, a[0], 0)
}

func lastFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return endOf(name, a[0], -1)
}

func endOf(name string, v bsoncore.Value, i int64) (bsoncore.Value, error) {
	if isNullish(v) {
		return Null, nil
	}
	if v.Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrElemAtNotArray, "%s's argument must be an array, but is %s", name, TypeName(v))
	}
	return elemAt(Elements(v), i), nil
}

func isArrayFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return Bool(a[0].Type == bsoncore.TypeArray), nil
}

func concatArraysFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var out []bsoncore.Value
	for _, a := range args {
		if isNullish(a) {
			return Null, nil
		}
		if a.Type != bsoncore.TypeArray {
			return Missing, langerr.New(ErrConcatArraysType, "$concatArrays only supports arrays, not %s", TypeName(a))
		}
		out = append(out, Elements(a)...)
	}
	return Array(out), nil
}

func sliceFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	for _, v := range a {
		if isNullish(v) {
			return Null, nil
		}
	}
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrSliceNotArray, "First argument to $slice must be an array, but is of type: %s", TypeName(a[0]))
	}
	arr := Elements(a[0])
	n := int64(len(arr))
	if len(a) == 2 {
		k, err := sliceArg(false, a[1])
		if err != nil {
			return Missing, err
		}
		if k >= 0 {
			return Array(arr[:min(k, n)]), nil
		}
		return Array(arr[max(n+k, 0):]), nil
	}
	pos, err := sliceArg(false, a[1])
	if err != nil {
		return Missing, err
	}
	k, err := sliceArg(true, a[2])
	if err != nil {
		return Missing, err
	}
	if k <= 0 {
		return Missing, langerr.New(ErrSliceNPositive, "Third argument to $slice must be positive: %d", k)
	}
	if pos < 0 {
		pos = max(n+pos, 0)
	}
	if pos >= n {
		return Array(nil), nil
	}
	return Array(arr[pos:min(pos+k, n)]), nil
}

func reverseArrayFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrReverseArrayType, "The argument to $reverseArray must be an array, but was of type: %s", TypeName(a[0]))
	}
	arr := Elements(a[0])
	for i, j := 0, len(arr)-1; i < j; i, j = i+1, j-1 {
		arr[i], arr[j] = arr[j], arr[i]
	}
	return Array(arr), nil
}

// maxRangeElements bounds $range so one expression cannot exhaust memory.
const maxRangeElements = 1 << 20

func rangeFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	// MongoDB's words for the start, end and step: the type, then the
	// 32-bit integer check of each.
	checks := []struct {
		typ, integral       error
		typeFmt, integerFmt string
	}{
		{ErrRangeStartType, ErrRangeStartInt, "$range requires a numeric starting value, found value of type: %s",
			"$range requires a starting value that can be represented as a 32-bit integer, found value: %s"},
		{ErrRangeEndType, ErrRangeEndInt, "$range requires a numeric ending value, found value of type: %s",
			"$range requires an ending value that can be represented as a 32-bit integer, found value: %s"},
		{ErrRangeStepType, ErrRangeStepInt, "$range requires a numeric step value, found value of type:%s",
			"$range requires a step value that can be represented as a 32-bit integer, found value: %s"},
	}
	vals := []int64{0, 0, 1}
	for i, v := range a {
		if !isNumber(v) {
			return Missing, langerr.New(checks[i].typ, checks[i].typeFmt, TypeName(v))
		}
		n, ok := exactInt(v)
		if !ok || n != int64(int32(n)) {
			return Missing, langerr.New(checks[i].integral, checks[i].integerFmt, value.Render(v))
		}
		vals[i] = n
	}
	if vals[2] == 0 {
		return Missing, langerr.New(ErrRangeStep, "$range requires a non-zero step value")
	}
	var out []bsoncore.Value
	for x := vals[0]; (vals[2] > 0 && x < vals[1]) || (vals[2] < 0 && x > vals[1]); x += vals[2] {
		if len(out) >= maxRangeElements {
			return Missing, langerr.BadValue("$range would produce more than %d elements", maxRangeElements)
		}
		out = append(out, Int32(int32(x)))
	}
	return Array(out), nil
}

func indexOfArrayFn(coll *value.Collator) evalFn {
	return func(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
		return indexOfArrayEval(a, coll)
	}
}

func indexOfArrayEval(a []bsoncore.Value, coll *value.Collator) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrIndexOfArrayInput, "$indexOfArray requires an array as a first argument, found: %s", TypeName(a[0]))
	}
	arr := Elements(a[0])
	start, end := int64(0), int64(len(arr))
	if len(a) > 2 {
		s, err := indexArg("$indexOfArray", "starting", a[2])
		if err != nil {
			return Missing, err
		}
		start = s
	}
	if len(a) > 3 {
		e, err := indexArg("$indexOfArray", "ending", a[3])
		if err != nil {
			return Missing, err
		}
		end = min(e, end)
	}
	for i := start; i < end; i++ {
		if CompareWith(arr[i], a[1], coll) == 0 {
			return Int32(int32(i)), nil
		}
	}
	return Int32(-1), nil
}

func arrayToObjectFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrArrayToObjectType, "$arrayToObject requires an array input, found: %s", TypeName(a[0]))
	}
	var fields []Field
	set := func(k string, v bsoncore.Value) {
		for i := range fields {
			if fields[i].Key == k {
				fields[i].Val = v
				return
			}
		}
		fields = append(fields, Field{k, v})
	}
	for _, x := range Elements(a[0]) {
		switch x.Type {
		case bsoncore.TypeArray:
			kv := Elements(x)
			if len(kv) != 2 {
				return Missing, langerr.BadValue("$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(kv))
			}
			if !isString(kv[0]) {
				return Missing, langerr.BadValue("$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", TypeName(kv[0]))
			}
			if strings.IndexByte(stringOf(kv[0]), 0) >= 0 {
				return Missing, langerr.New(ErrNullInPairKey, "Key field cannot contain an embedded null byte")
			}
			set(stringOf(kv[0]), kv[1])
		case bsoncore.TypeEmbeddedDocument:
			k, okK := lookup(x.Data, "k")
			v, okV := lookup(x.Data, "v")
			if !okK || !okV || len(Fields(x)) != 2 {
				return Missing, langerr.BadValue("$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", len(Fields(x)))
			}
			if !isString(k) {
				return Missing, langerr.BadValue("$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: %s", TypeName(k))
			}
			if strings.IndexByte(stringOf(k), 0) >= 0 {
				return Missing, langerr.New(ErrNullInKV, "Key field cannot contain an embedded null byte")
			}
			set(stringOf(k), v)
		default:
			return Missing, langerr.BadValue("Unrecognised input type format for $arrayToObject: %s", TypeName(x))
		}
	}
	return Document(fields), nil
}

func objectToArrayFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if a[0].Type != bsoncore.TypeEmbeddedDocument {
		return Missing, langerr.New(ErrObjectToArrayType, "$objectToArray requires a document input, found: %s", TypeName(a[0]))
	}
	var out []bsoncore.Value
	for _, f := range Fields(a[0]) {
		out = append(out, Document([]Field{{"k", String(f.Key)}, {"v", f.Val}}))
	}
	return Array(out), nil
}

// iterExpr is $filter, $map and $reduce: they bind variables per element.
type iterExpr struct {
	kind      string
	input     Expression
	slot      int // "as" (or $$this)
	accSlot   int // $$value for $reduce
	body      Expression
	init      Expression // $reduce initialValue
	limit     Expression // $filter limit
	hasAccum  bool
	inputName string
}

func (e *iterExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if isNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeArray {
		switch e.kind {
		case "$filter":
			return Missing, langerr.New(ErrFilterInput, "input to $filter must be an array not %s", TypeName(in))
		case "$map":
			return Missing, langerr.New(ErrMapInput, "input to $map must be an array not %s", TypeName(in))
		}
		return Missing, langerr.New(ErrReduceInput, "$reduce requires that 'input' be an array, found: %s", value.Render(in))
	}
	limit := int64(math.MaxInt64)
	if e.limit != nil {
		l, err := e.limit.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !isNullish(l) {
			n, ok := exactInt(l)
			if !ok || n != int64(int32(n)) {
				return Missing, langerr.New(ErrFilterLimitInt, "$filter: limit must be represented as a 32-bit integral value: %s", value.Render(l))
			}
			if n < 1 {
				return Missing, langerr.New(ErrFilterLimitPositive, "$filter: limit must be greater than 0: %d", n)
			}
			limit = n
		}
	}
	var acc bsoncore.Value
	if e.kind == "$reduce" {
		if acc, err = e.init.Eval(ctx); err != nil {
			return Missing, err
		}
	}
	var out []bsoncore.Value
	for _, x := range Elements(in) {
		ctx.set(e.slot, x)
		if e.kind == "$reduce" {
			ctx.set(e.accSlot, acc)
		}
		r, err := e.body.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		switch e.kind {
		case "$filter":
			if Truthy(r) {
				out = append(out, x)
				if int64(len(out)) >= limit {
					return Array(out), nil
				}
			}
		case "$map":
			out = append(out, r)
		default:
			acc = r
		}
	}
	if e.kind == "$reduce" {
		return acc, nil
	}
	return Array(out), nil
}

func iterArgs(c *compiler, name string, arg bsoncore.Value, allowed []string, required ...string) (map[string]bsoncore.Value, string, error) {
	m, err := namedArgs(name, arg, allowed, required...)
	if err != nil {
		return nil, "", err
	}
	as := "this"
	if v, ok := m["as"]; ok {
		// MongoDB reads an 'as' that is not a string as "", an empty
		// variable name.
		as = ""
		if isString(v) {
			as = stringOf(v)
		}
		if err := CheckVariableName(as); err != nil {
			return nil, "", err
		}
	}
	return m, as, nil
}

func filterOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, as, err := iterArgs(c, name, arg, []string{"input", "as", "cond", "limit"}, "input", "cond")
	if err != nil {
		return nil, err
	}
	e := &iterExpr{kind: name}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if l, ok := m["limit"]; ok {
		if e.limit, err = c.compile(l); err != nil {
			return nil, err
		}
	}
	err = c.scope.with([]string{as}, func(s []int) error {
		e.slot = s[0]
		var err error
		e.body, err = c.compile(m["cond"])
		return err
	})
	return e, err
}

func mapOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, as, err := iterArgs(c, name, arg, []string{"input", "as", "in"}, "input", "in")
	if err != nil {
		return nil, err
	}
	e := &iterExpr{kind: name}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	err = c.scope.with([]string{as}, func(s []int) error {
		e.slot = s[0]
		var err error
		e.body, err = c.compile(m["in"])
		return err
	})
	return e, err
}

func reduceOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "initialValue", "in"}, "input", "initialValue", "in")
	if err != nil {
		return nil, err
	}
	e := &iterExpr{kind: name}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if e.init, err = c.compile(m["initialValue"]); err != nil {
		return nil, err
	}
	err = c.scope.with([]string{"this", "value"}, func(s []int) error {
		e.slot, e.accSlot = s[0], s[1]
		var err error
		e.body, err = c.compile(m["in"])
		return err
	})
	return e, err
}

// Set operators treat arrays as sets of distinct values.

// setArgs reads the operands of $setUnion, $setIntersection and
// $setDifference: arrays, or a null that makes the result null.
func setArgs(name string, args []bsoncore.Value) ([][]bsoncore.Value, bool, error) {
	var out [][]bsoncore.Value
	for i, a := range args {
		if isNullish(a) {
			return nil, true, nil
		}
		if a.Type != bsoncore.TypeArray {
			switch name {
			case "$setDifference":
				return nil, false, setPairError(name, i, a, ErrSetDifferenceFirst, ErrSetDifferenceSecond)
			case "$setIntersection":
				return nil, false, langerr.New(ErrSetIntersectionType, "All operands of %s must be arrays. One argument is of type: %s", name, TypeName(a))
			}
			return nil, false, langerr.New(ErrSetUnionType, "All operands of %s must be arrays. One argument is of type: %s", name, TypeName(a))
		}
		out = append(out, Elements(a))
	}
	return out, false, nil
}

func contains(set []bsoncore.Value, v bsoncore.Value) bool {
	for _, x := range set {
		if Compare(x, v) == 0 {
			return true
		}
	}
	return false
}

func distinct(vals []bsoncore.Value) []bsoncore.Value {
	var out []bsoncore.Value
	for _, v := range vals {
		if !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func setUnionFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	sets, null, err := setArgs(name, args)
	if err != nil || null {
		return Null, err
	}
	var all []bsoncore.Value
	for _, s := range sets {
		all = append(all, s...)
	}
	return Array(distinct(all)), nil
}

func setIntersectionFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	sets, null, err := setArgs(name, args)
	if err != nil || null {
		return Null, err
	}
	if len(sets) == 0 {
		return Array(nil), nil
	}
	var out []bsoncore.Value
	for _, v := range distinct(sets[0]) {
		in := true
		for _, s := range sets[1:] {
			in = in && contains(s, v)
		}
		if in {
			out = append(out, v)
		}
	}
	return Array(out), nil
}

func setDifferenceFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	sets, null, err := setArgs(name, args)
	if err != nil || null {
		return Null, err
	}
	var out []bsoncore.Value
	for _, v := range distinct(sets[0]) {
		if !contains(sets[1], v) {
			out = append(out, v)
		}
	}
	return Array(out), nil
}

// setPairError is the error of $setDifference's or $setIsSubset's
// operand i (0 or 1), a non-array: MongoDB gives each position its code.
func setPairError(name string, i int, a bsoncore.Value, first, second error) error {
	if i == 0 {
		return langerr.New(first, "both operands of %s must be arrays. First argument is of type: %s", name, TypeName(a))
	}
	return langerr.New(second, "both operands of %s must be arrays. Second argument is of type: %s", name, TypeName(a))
}

func setEqualsOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	ops := operands(arg)
	if len(ops) < 2 {
		return nil, langerr.New(ErrSetEqualsArity, "$setEquals needs at least two arguments had: %d", len(ops))
	}
	args, err := c.compileAll(ops)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: args, fn: setEqualsFn}, nil
}

// setEqualsFn refuses a null operand, unlike the other set operators.
func setEqualsFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var sets [][]bsoncore.Value
	for i, a := range args {
		if a.Type != bsoncore.TypeArray {
			return Missing, langerr.New(ErrSetEqualsType, "All operands of $setEquals must be arrays. %d-th argument is of type: %s", i+1, TypeName(a))
		}
		sets = append(sets, Elements(a))
	}
	for _, s := range sets[1:] {
		for _, v := range s {
			if !contains(sets[0], v) {
				return Bool(false), nil
			}
		}
		for _, v := range sets[0] {
			if !contains(s, v) {
				return Bool(false), nil
			}
		}
	}
	return Bool(true), nil
}

func setIsSubsetFn(name string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	for i, a := range args {
		if a.Type != bsoncore.TypeArray {
			return Missing, setPairError(name, i, a, ErrSetIsSubsetFirst, ErrSetIsSubsetSecond)
		}
	}
	sub, super := Elements(args[0]), Elements(args[1])
	for _, v := range sub {
		if !contains(super, v) {
			return Bool(false), nil
		}
	}
	return Bool(true), nil
}

func anyElementTrueFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrAnyElementTrueType, "%s's argument must be an array, but is %s", name, TypeName(a[0]))
	}
	for _, v := range Elements(a[0]) {
		if Truthy(v) {
			return Bool(true), nil
		}
	}
	return Bool(false), nil
}

func allElementsTrueFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if a[0].Type != bsoncore.TypeArray {
		return Missing, langerr.New(ErrAllElementsTrueType, "%s's argument must be an array, but is %s", name, TypeName(a[0]))
	}
	for _, v := range Elements(a[0]) {
		if !Truthy(v) {
			return Bool(false), nil
		}
	}
	return Bool(true), nil
}
