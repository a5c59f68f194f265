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
