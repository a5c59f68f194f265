package expr

import (
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// opCompiler compiles the argument of one operator.
type opCompiler func(c *compiler, name string, arg bsoncore.Value) (Expression, error)

// operators maps every expression operator Parsec evaluates to its
// compiler. It is filled once by init and never changed afterwards.
var operators map[string]opCompiler

func init() {
	operators = map[string]opCompiler{
		// comparison
		"$eq": cmpOp, "$ne": cmpOp, "$gt": cmpOp, "$gte": cmpOp, "$lt": cmpOp, "$lte": cmpOp, "$cmp": cmpOp,
		// boolean
		"$and": andOp, "$or": orOp, "$not": fixed(1, notFn),
		// conditional
		"$cond": condOp, "$ifNull": ifNullOp, "$switch": switchOp,
		// variables
		"$let": letOp,
		// arithmetic
		"$add": variadic(addFn), "$multiply": variadic(multiplyFn), "$subtract": fixed(2, subtractFn),
		"$divide": fixed(2, divideFn), "$mod": fixed(2, modFn), "$abs": fixed(1, absFn),
		"$ceil": fixed(1, ceilFn), "$floor": fixed(1, floorFn), "$sqrt": fixed(1, sqrtFn),
		"$exp": fixed(1, expFn), "$ln": fixed(1, lnFn), "$log10": fixed(1, log10Fn), "$log": fixed(2, logFn),
		"$pow": fixed(2, powFn), "$round": ranged(1, 2, roundFn), "$trunc": ranged(1, 2, truncFn),
		"$sum": variadic(sumFn), "$avg": variadic(avgFn), "$min": variadic(minFn), "$max": variadic(maxFn),
		// arrays
		"$in": collated(func(coll *value.Collator) opCompiler { return fixed(2, inFn(coll)) }), "$size": fixed(1, sizeFn), "$arrayElemAt": fixed(2, arrayElemAtFn),
		"$first": fixed(1, firstFn), "$last": fixed(1, lastFn), "$isArray": fixed(1, isArrayFn),
		"$concatArrays": variadic(concatArraysFn), "$slice": ranged(2, 3, sliceFn),
		"$reverseArray": fixed(1, reverseArrayFn), "$range": ranged(2, 3, rangeFn),
		"$indexOfArray": collated(func(coll *value.Collator) opCompiler { return ranged(2, 4, indexOfArrayFn(coll)) }), "$arrayToObject": fixed(1, arrayToObjectFn),
		"$objectToArray": fixed(1, objectToArrayFn), "$filter": filterOp, "$map": mapOp, "$reduce": reduceOp,
		"$setUnion": variadic(setUnionFn), "$setIntersection": variadic(setIntersectionFn),
		"$setDifference": fixed(2, setDifferenceFn), "$setEquals": setEqualsOp,
		"$setIsSubset": fixed(2, setIsSubsetFn), "$anyElementTrue": fixed(1, anyElementTrueFn),
		"$allElementsTrue": fixed(1, allElementsTrueFn),
		// strings
		"$concat": variadic(concatFn), "$toLower": fixed(1, toLowerFn), "$toUpper": fixed(1, toUpperFn),
		"$strLenCP": fixed(1, strLenCPFn), "$strLenBytes": fixed(1, strLenBytesFn),
		"$substr": fixed(3, substrBytesFn), "$substrBytes": fixed(3, substrBytesFn), "$substrCP": fixed(3, substrCPFn),
		"$split": fixed(2, splitFn), "$strcasecmp": fixed(2, strcasecmpFn),
		"$indexOfBytes": ranged(2, 4, indexOfBytesFn), "$indexOfCP": ranged(2, 4, indexOfCPFn),
		"$trim": trimOp, "$ltrim": trimOp, "$rtrim": trimOp,
		"$regexMatch": regexOp, "$regexFind": regexOp, "$regexFindAll": regexOp,
		"$replaceOne": replaceOp, "$replaceAll": replaceOp,
		// types
		"$type": fixed(1, typeFn), "$isNumber": fixed(1, isNumberFn), "$convert": convertOp,
		"$toString": single(toFn("string")), "$toInt": single(toFn("int")), "$toLong": single(toFn("long")),
		"$toDouble": single(toFn("double")), "$toDecimal": single(toFn("decimal")), "$toBool": single(toFn("bool")),
		"$toDate": single(toFn("date")), "$toObjectId": single(toFn("objectId")),
		// objects
		"$mergeObjects": variadic(mergeObjectsFn), "$getField": getFieldOp,
		"$setField": setFieldOp, "$unsetField": setFieldOp, "$bsonSize": fixed(1, bsonSizeFn), "$binarySize": fixed(1, binarySizeFn),
		// arrays and accumulators as expressions
		"$sortArray": sortArrayOp, "$zip": zipOp, "$firstN": nArrayOp, "$lastN": nArrayOp, "$minN": nArrayOp, "$maxN": nArrayOp,
		"$stdDevPop": variadic(stdDevFn), "$stdDevSamp": variadic(stdDevFn), "$median": percentileOp, "$percentile": percentileOp,
		// misc
		"$rand": randOp, "$tsSecond": fixed(1, tsPartFn), "$tsIncrement": fixed(1, tsPartFn),
		"$sin": fixed(1, trigFn), "$cos": fixed(1, trigFn), "$tan": fixed(1, trigFn), "$asin": fixed(1, trigFn),
		"$acos": fixed(1, trigFn), "$atan": fixed(1, trigFn), "$sinh": fixed(1, trigFn), "$cosh": fixed(1, trigFn),
		"$tanh": fixed(1, trigFn), "$asinh": fixed(1, trigFn), "$acosh": fixed(1, trigFn), "$atanh": fixed(1, trigFn),
		"$atan2": fixed(2, atan2Fn), "$degreesToRadians": fixed(1, trigFn), "$radiansToDegrees": fixed(1, trigFn),
		"$bitAnd": variadic(bitFn), "$bitOr": variadic(bitFn), "$bitXor": variadic(bitFn), "$bitNot": variadic(bitFn),
		// dates
		"$year": dateOp, "$month": dateOp, "$dayOfMonth": dateOp, "$hour": dateOp, "$minute": dateOp,
		"$second": dateOp, "$millisecond": dateOp, "$dayOfWeek": dateOp, "$dayOfYear": dateOp,
		"$week": dateOp, "$isoWeek": dateOp, "$isoWeekYear": dateOp, "$isoDayOfWeek": dateOp,
		"$dateToString": dateToStringOp, "$dateFromString": dateFromStringOp, "$dateToParts": dateToPartsOp,
		"$dateFromParts": dateFromPartsOp, "$dateAdd": dateArithOp, "$dateSubtract": dateArithOp,
		"$dateDiff": dateArithOp, "$dateTrunc": dateArithOp,
	}
}

// evalFn computes an operator's result from its evaluated arguments.
type evalFn func(name string, args []bsoncore.Value, ctx *Context) (bsoncore.Value, error)

// callExpr evaluates its arguments, then fn.
type callExpr struct {
	name string
	args []Expression
	fn   evalFn
}

func (e *callExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(e.args))
	for i, a := range e.args {
		v, err := a.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		vals[i] = v
	}
	return e.fn(e.name, vals, ctx)
}

// operands are an operator's arguments: the elements of an array, or the
// one value given.
func operands(arg bsoncore.Value) []bsoncore.Value {
	if arg.Type == bsoncore.TypeArray {
		return Elements(arg)
	}
	return []bsoncore.Value{arg}
}

func (c *compiler) compileAll(vals []bsoncore.Value) ([]Expression, error) {
	out := make([]Expression, len(vals))
	for i, v := range vals {
		e, err := c.compile(v)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// fixed is an operator taking exactly n arguments.
// collated compiles an operator whose evaluation compares values under
// the scope's collation.
func collated(mk func(coll *value.Collator) opCompiler) opCompiler {
	return func(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
		return mk(c.scope.Collation())(c, name, arg)
	}
}

func fixed(n int, fn evalFn) opCompiler {
	return func(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
		ops := operands(arg)
		if len(ops) != n {
			return nil, langerr.New(ErrArity, "Expression %s takes exactly %d arguments. %d were passed in.", name, n, len(ops))
		}
		args, err := c.compileAll(ops)
		if err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: args, fn: fn}, nil
	}
}

// ranged is an operator taking lo to hi arguments.
func ranged(lo, hi int, fn evalFn) opCompiler {
	return func(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
		ops := operands(arg)
		if len(ops) < lo || len(ops) > hi {
			return nil, langerr.New(ErrRangedArity, "Expression %s takes at least %d arguments, and at most %d, but %d were passed in.", name, lo, hi, len(ops))
		}
		args, err := c.compileAll(ops)
		if err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: args, fn: fn}, nil
	}
}

// single is a conversion shorthand ($toInt, ...): one argument, given
// alone or as a one-element array.
func single(fn evalFn) opCompiler {
	return func(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
		ops := operands(arg)
		if len(ops) != 1 {
			return nil, langerr.New(ErrSingleArgument, "%s requires a single argument, got %d", name, len(ops))
		}
		args, err := c.compileAll(ops)
		if err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: args, fn: fn}, nil
	}
}

// variadic is an operator taking any number of arguments.
func variadic(fn evalFn) opCompiler {
	return func(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
		args, err := c.compileAll(operands(arg))
		if err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: args, fn: fn}, nil
	}
}

// namedArgs reads an operator's object argument ({input: ..., as: ...}),
// refusing unknown fields and requiring the required ones, each in
// MongoDB's words for that operator (objectArgs).
func namedArgs(name string, arg bsoncore.Value, allowed []string, required ...string) (map[string]bsoncore.Value, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, notObjectError(name, arg)
	}
	out := map[string]bsoncore.Value{}
	for _, f := range Fields(arg) {
		ok := false
		for _, a := range allowed {
			ok = ok || a == f.Key
		}
		if !ok {
			return nil, unknownArgError(name, f.Key)
		}
		out[f.Key] = f.Val
	}
	for _, r := range required {
		if _, ok := out[r]; !ok {
			return nil, missingArgError(name, r)
		}
	}
	return out, nil
}
