package integration

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExpressionErrorWords checks, through the driver, that expression
// operators' argument errors reach clients with MongoDB's code, codeName
// and words, from aggregate, from find's $expr and from a pipeline
// update. Each operator family's cases live in engine/expr's testdata;
// these are a few of each family end to end.
func TestExpressionErrorWords(t *testing.T) {
	t.Parallel()
	s := startTestServer(t)
	client := newTestClient(t, s)
	db := client.Database("expr_errors")
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }
	runOK(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "hello"}, {Key: "n", Value: 3}, {Key: "arr", Value: bson.A{1, 2}}},
	}}})
	project := func(e any) bson.D {
		return bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{d("$project", d("x", e))}}, {Key: "cursor", Value: bson.D{}}}
	}
	for _, tc := range []struct {
		name string
		expr any
		code int32
		msg  string
	}{
		{"concat", d("$concat", bson.A{"$s", "$n"}), 16702, "$concat only supports strings, not int"},
		{"strLenBytes", d("$strLenBytes", "$n"), 34473, "$strLenBytes requires a string argument, found: int"},
		{"substr", d("$substr", bson.A{"$s", "$s", 1}), 16034, "$substrBytes:  starting index must be a numeric type (is BSON type string)"},
		{"substrCP", d("$substrCP", bson.A{"$s", -1, 1}), 34455, "$substrCP: the starting index must be nonnegative integer."},
		{"indexOfBytes", d("$indexOfBytes", bson.A{"$s", "l", -1}), 40097, "$indexOfBytes requires a nonnegative starting index, found: -1"},
		{"indexOfCP arity", d("$indexOfCP", bson.A{"$s"}), 28667, "Expression $indexOfCP takes at least 2 arguments, and at most 4, but 1 were passed in."},
		{"trim", d("$trim", d("input", "$n")), 50699, "$trim requires its input to be a string, got 3 (of type int) instead."},
		{"regexMatch", d("$regexMatch", bson.D{{Key: "input", Value: "$n"}, {Key: "regex", Value: "a"}}), 51104, "$regexMatch needs 'input' to be of type string"},
		{"replaceAll", d("$replaceAll", bson.D{{Key: "input", Value: "$s"}, {Key: "find", Value: "$n"}, {Key: "replacement", Value: "b"}}), 51745, "$replaceAll requires that 'find' be a string, found: 3"},
		{"setIsSubset", d("$setIsSubset", bson.A{"$arr", "$s"}), 17042, "both operands of $setIsSubset must be arrays. Second argument is of type: string"},
		{"setEquals", d("$setEquals", bson.A{"$arr", nil}), 17044, "All operands of $setEquals must be arrays. 2-th argument is of type: null"},
		{"anyElementTrue", d("$anyElementTrue", bson.A{"$s"}), 17041, "$anyElementTrue's argument must be an array, but is string"},
		{"toInt arity", d("$toInt", bson.A{}), 50723, "$toInt requires a single argument, got 0"},
		{"year", d("$year", "$s"), 16006, "can't convert from BSON type string to Date"},
		{"dateToString", d("$dateToString", bson.D{{Key: "date", Value: "$$NOW"}, {Key: "format", Value: "$n"}}), 18533, "$dateToString requires that 'format' be a string, found: int with value 3"},
		{"dateAdd", d("$dateAdd", bson.D{{Key: "startDate", Value: "$s"}, {Key: "unit", Value: "day"}, {Key: "amount", Value: 1}}), 5166403, "$dateAdd requires startDate to be convertible to a date"},
		{"dateDiff", d("$dateDiff", bson.D{{Key: "startDate", Value: "$$NOW"}, {Key: "endDate", Value: "$$NOW"}, {Key: "unit", Value: "century"}}), 5439014, "$dateDiff parameter 'unit' value cannot be recognized as a time unit: century"},
		// The operators' object arguments and the remaining type checks.
		{"trim not object", d("$trim", "$s"), 50696, "$trim only supports an object as an argument, found string"},
		{"ltrim unknown", d("$ltrim", bson.D{{Key: "input", Value: "$s"}, {Key: "char", Value: "h"}}), 50694, "$ltrim found an unknown argument: char"},
		{"regexFind no regex", d("$regexFind", d("input", "$s")), 31023, "$regexFind requires 'regex' parameter"},
		{"regexMatch bad pattern", d("$regexMatch", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "("}}), 51111, "Invalid Regex in $regexMatch: missing closing )"},
		{"map unknown", d("$map", bson.D{{Key: "input", Value: "$arr"}, {Key: "in", Value: 1}, {Key: "each", Value: 1}}), 16879, "Unrecognized parameter to $map: each"},
		{"filter no cond", d("$filter", d("input", "$arr")), 28650, "Missing 'cond' parameter to $filter"},
		{"let vars", d("$let", bson.D{{Key: "vars", Value: 1}, {Key: "in", Value: 1}}), 10065, "invalid parameter: expected an object (vars)"},
		{"let name", d("$let", bson.D{{Key: "vars", Value: d("Bad", 1)}, {Key: "in", Value: 1}}), 16867, "'Bad' starts with an invalid character for a user variable name"},
		{"reduce no initialValue", d("$reduce", bson.D{{Key: "input", Value: "$arr"}, {Key: "in", Value: 1}}), 40078, "$reduce requires 'initialValue' to be specified"},
		{"switch branches", d("$switch", d("branches", 1)), 40061, "$switch expected an array for 'branches', found: int"},
		{"cond no then", d("$cond", bson.D{{Key: "if", Value: true}, {Key: "else", Value: 1}}), 17081, "Missing 'then' parameter to $cond"},
		{"zip no inputs", d("$zip", d("inputs", bson.A{})), 34465, "$zip requires at least one input array"},
		{"dateToString unknown", d("$dateToString", bson.D{{Key: "date", Value: "$$NOW"}, {Key: "fmt", Value: "%Y"}}), 18534, "Unrecognized argument to $dateToString: fmt"},
		{"dateFromString no dateString", d("$dateFromString", d("format", "%Y")), 40542, "Missing 'dateString' parameter to $dateFromString"},
		{"dateSubtract missing", d("$dateSubtract", bson.D{{Key: "startDate", Value: "$$NOW"}, {Key: "unit", Value: "day"}}), 5166402, "$dateSubtract requires startDate, unit, and amount to be present"},
		{"dateTrunc no unit", d("$dateTrunc", d("date", "$$NOW")), 5439010, "Missing 'unit' parameter to $dateTrunc"},
		{"getField not constant", d("$getField", bson.D{{Key: "field", Value: "$s"}, {Key: "input", Value: bson.D{}}}), 5654601, "$getField requires 'field' to evaluate to a constant, but got a non-constant argument"},
		{"setField input", d("$setField", bson.D{{Key: "field", Value: "a"}, {Key: "input", Value: "$n"}, {Key: "value", Value: 1}}), 4161105, "$setField requires 'input' to evaluate to type Object"},
		{"sortArray no sortBy", d("$sortArray", d("input", "$arr")), 2942503, "$sortArray requires 'sortBy' to be specified"},
		{"rand arguments", d("$rand", d("seed", 1)), 3040501, "$rand does not currently accept arguments"},
		{"add two dates", d("$add", bson.A{"$$NOW", "$$NOW"}), 16612, "only one date allowed in an $add expression"},
		{"log base", d("$log", bson.A{"$n", "$s"}), 28757, "$log's base must be numeric, not string"},
		{"pow base", d("$pow", bson.A{"$s", 2}), 28762, "$pow's base must be numeric, not string"},
		{"round place", d("$round", bson.A{"$n", 101}), 51083, "cannot apply $round with precision value 101 value must be in [-20, 100]"},
		{"range end", d("$range", bson.A{0, "$s"}), 34445, "$range requires a numeric ending value, found value of type: string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := runFail(t, db, project(tc.expr), tc.code, fmt.Sprintf("Location%d", tc.code))
			if !strings.HasSuffix(ce.Message, tc.msg) {
				t.Errorf("errmsg %q, want it to end with %q", ce.Message, tc.msg)
			}
		})
	}

	t.Run("find $expr", func(t *testing.T) {
		ce := runFail(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: d("$expr", d("$strLenCP", "$n"))}}, 34471, "Location34471")
		if !strings.HasSuffix(ce.Message, "$strLenCP requires a string argument, found: int") {
			t.Errorf("errmsg %q", ce.Message)
		}
	})
	t.Run("pipeline update", func(t *testing.T) {
		r := runWrite(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: d("_id", 1)}, {Key: "u", Value: bson.A{d("$set", d("y", d("$setUnion", bson.A{"$arr", "$s"})))}}},
		}}})
		if _, codes := r.errorIndexes(); len(codes) != 1 || codes[0] != 17043 {
			t.Errorf("write error codes %v, want [17043]", codes)
		}
	})
}
