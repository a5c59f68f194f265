package engine

import (
	"testing"
	"time"

	"github.com/parsecdb/parsec/engine/expr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestExpressionErrorCodes checks the codes MongoDB gives the expression
// operators' argument errors (the datadriven tests of engine/expr check
// their categories and words).
func TestExpressionErrorCodes(t *testing.T) {
	for _, c := range []struct {
		expr string
		code Code
	}{
		{`{"$trim": 5}`, 50696},
		{`{"$ltrim": {"input": "a", "x": 1}}`, 50694},
		{`{"$rtrim": {"chars": "a"}}`, 50695},
		{`{"$regexMatch": 5}`, 51103},
		{`{"$regexFind": {"input": "a", "regex": "a", "x": 1}}`, 31024},
		{`{"$regexFindAll": {"regex": "a"}}`, 31022},
		{`{"$regexMatch": {"input": "a"}}`, 31023},
		{`{"$regexMatch": {"input": "a", "regex": "a\u0000"}}`, 51109},
		{`{"$regexFind": {"input": "a", "regex": "a", "options": "i\u0000"}}`, 51110},
		{`{"$regexFindAll": {"input": "a", "regex": "("}}`, 51111},
		{`{"$regexMatch": {"input": "a", "regex": "a", "options": "z"}}`, 51108},
		{`{"$regexMatch": {"input": "a", "regex": {"$regularExpression": {"pattern": "a", "options": "i"}}, "options": ""}}`, 51107},
		{`{"$add": [{"$date": "2020-01-01T00:00:00Z"}, 1, {"$date": "2020-01-01T00:00:00Z"}]}`, 16612},
		{`{"$add": [1, "a"]}`, ErrTypeMismatch},
		{`{"$log": ["a", 2]}`, 28756},
		{`{"$log": [2, "a"]}`, 28757},
		{`{"$pow": ["a", 2]}`, 28762},
		{`{"$pow": [2, "a"]}`, 28763},
		{`{"$round": ["a", 1]}`, 51081},
		{`{"$trunc": [1.5, 1.5]}`, 51082},
		{`{"$round": [1.5, 101]}`, 51083},
		{`{"$range": ["a", 2]}`, 34443},
		{`{"$range": [0.5, 2]}`, 34444},
		{`{"$range": [0, "a"]}`, 34445},
		{`{"$range": [0, 2.5]}`, 34446},
		{`{"$range": [0, 2, "a"]}`, 34447},
		{`{"$range": [0, 2, 0.5]}`, 34448},
		{`{"$range": [0, 2, 0]}`, 34449},
		{`{"$replaceOne": "a"}`, 51751},
		{`{"$replaceAll": {"input": "a", "find": "a", "replacement": "b", "x": 1}}`, 51750},
		{`{"$replaceAll": {"find": "a", "replacement": "b"}}`, 51749},
		{`{"$replaceOne": {"input": "a", "replacement": "b"}}`, 51748},
		{`{"$replaceOne": {"input": "a", "find": "a"}}`, 51747},
		{`{"$map": 5}`, 16878},
		{`{"$map": {"input": [], "in": 1, "x": 1}}`, 16879},
		{`{"$map": {"in": 1}}`, 16880},
		{`{"$map": {"input": []}}`, 16882},
		{`{"$filter": 5}`, 28646},
		{`{"$filter": {"input": [], "cond": 1, "x": 1}}`, 28647},
		{`{"$filter": {"cond": 1}}`, 28648},
		{`{"$filter": {"input": []}}`, 28650},
		{`{"$let": 5}`, 16874},
		{`{"$let": {"vars": {}, "in": 1, "x": 1}}`, 16875},
		{`{"$let": {"in": 1}}`, 16876},
		{`{"$let": {"vars": {}}}`, 16877},
		{`{"$let": {"vars": 1, "in": 1}}`, 10065},
		{`{"$let": {"vars": {"": 1}, "in": 1}}`, 16866},
		{`{"$let": {"vars": {"Bad": 1}, "in": 1}}`, 16867},
		{`{"$map": {"input": [], "as": "a-b", "in": 1}}`, 16868},
		{`{"$filter": {"input": [], "as": "_x", "cond": 1}}`, 16867},
		{`{"$map": {"input": [], "as": 5, "in": 1}}`, 16866},
		{`{"$reduce": 5}`, 40075},
		{`{"$reduce": {"input": [], "initialValue": 0, "in": 1, "x": 1}}`, 40076},
		{`{"$reduce": {"initialValue": 0, "in": 1}}`, 40077},
		{`{"$reduce": {"input": [], "in": 1}}`, 40078},
		{`{"$reduce": {"input": [], "initialValue": 0}}`, 40079},
		{`{"$switch": 5}`, 40060},
		{`{"$switch": {"branches": 5}}`, 40061},
		{`{"$switch": {"branches": [5]}}`, 40062},
		{`{"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}}`, 40063},
		{`{"$switch": {"branches": [{"then": 1}]}}`, 40064},
		{`{"$switch": {"branches": [{"case": 1}]}}`, 40065},
		{`{"$switch": {"branches": [{"case": false, "then": 1}]}}`, 40066},
		{`{"$switch": {"branches": [], "x": 1}}`, 40067},
		{`{"$switch": {"branches": []}}`, 40068},
		{`{"$cond": {"then": 1, "else": 1}}`, 17080},
		{`{"$cond": {"if": 1, "else": 1}}`, 17081},
		{`{"$cond": {"if": 1, "then": 1}}`, 17082},
		{`{"$cond": {"if": 1, "then": 1, "else": 1, "x": 1}}`, 17083},
		{`{"$cond": [1, 2]}`, 16020},
		{`{"$zip": 5}`, 34460},
		{`{"$zip": {"inputs": 5}}`, 34461},
		{`{"$zip": {"inputs": [[1]], "defaults": 5}}`, 34462},
		{`{"$zip": {"inputs": [[1]], "useLongestLength": 5}}`, 34463},
		{`{"$zip": {"inputs": [[1]], "x": 5}}`, 34464},
		{`{"$zip": {"inputs": []}}`, 34465},
		{`{"$zip": {"inputs": [[1]], "defaults": [1]}}`, 34466},
		{`{"$zip": {"inputs": [[1]], "defaults": [1, 2], "useLongestLength": true}}`, 34467},
		{`{"$zip": {"inputs": [5]}}`, 34468},
		{`{"$dateToString": 5}`, 18629},
		{`{"$dateToString": {"date": 1, "x": 1}}`, 18534},
		{`{"$dateToString": {}}`, 18628},
		{`{"$dateFromString": 5}`, 40540},
		{`{"$dateFromString": {"dateString": "x", "x": 1}}`, 40541},
		{`{"$dateFromString": {}}`, 40542},
		{`{"$dateToParts": 5}`, 40524},
		{`{"$dateToParts": {"date": 1, "x": 1}}`, 40520},
		{`{"$dateToParts": {}}`, 40522},
		{`{"$dateFromParts": 5}`, 40519},
		{`{"$dateFromParts": {"year": 1, "x": 1}}`, 40518},
		{`{"$dateFromParts": {"month": 1, "isoWeek": 1}}`, 40516},
		{`{"$dateFromParts": {"year": 2020, "isoWeek": 1}}`, 40489},
		{`{"$dateFromParts": {"isoWeekYear": 2020, "day": 1}}`, 40525},
		{`{"$year": {"date": 1, "tz": "UTC"}}`, 40535},
		{`{"$month": [1, 2]}`, 40536},
		{`{"$hour": {"timezone": "UTC"}}`, 40539},
		{`{"$dateAdd": 5}`, 5166400},
		{`{"$dateSubtract": 5}`, 5166400},
		{`{"$dateDiff": 5}`, 5166301},
		{`{"$dateTrunc": 5}`, 5439007},
		{`{"$setField": 5}`, 4161100},
		{`{"$dateAdd": {"startDate": 1, "unit": "day", "amount": 1, "x": 1}}`, 5166401},
		{`{"$dateSubtract": {"startDate": 1, "unit": "day"}}`, 5166402},
		{`{"$dateDiff": {"startDate": 1, "endDate": 1, "unit": "day", "x": 1}}`, 5166302},
		{`{"$dateDiff": {"endDate": 1, "unit": "day"}}`, 5166303},
		{`{"$dateDiff": {"startDate": 1, "unit": "day"}}`, 5166304},
		{`{"$dateDiff": {"startDate": 1, "endDate": 1}}`, 5166305},
		{`{"$dateTrunc": {"date": 1, "unit": "day", "x": 1}}`, 5439008},
		{`{"$dateTrunc": {"unit": "day"}}`, 5439009},
		{`{"$dateTrunc": {"date": 1}}`, 5439010},
		{`{"$getField": {"field": "a", "x": 1}}`, 3041701},
		{`{"$getField": {"input": {}}}`, 3041702},
		{`{"$getField": {"field": {"a": 1}, "input": {}}}`, 5654601},
		{`{"$getField": {"$add": [2, 3]}}`, 5654601},
		{`{"$getField": {"field": true, "input": {}}}`, 5654602},
		{`{"$getField": {"$const": null}}`, 5654602},
		{`{"$setField": {"field": {"a": 1}, "input": {}, "value": 1}}`, 4161106},
		{`{"$unsetField": {"field": 33, "input": {}}}`, 4161107},
		{`{"$setField": {"field": "a", "input": {}, "value": 1, "x": 1}}`, 4161101},
		{`{"$unsetField": {"input": {}}}`, 4161102},
		{`{"$setField": {"field": "a", "input": {}}}`, 4161103},
		{`{"$unsetField": {"field": "a"}}`, 4161109},
		{`{"$setField": {"field": "a", "input": 5, "value": 1}}`, 4161105},
		{`{"$sortArray": {"input": [], "sortBy": 1, "x": 1}}`, 2942501},
		{`{"$sortArray": {"sortBy": 1}}`, 2942502},
		{`{"$sortArray": {"input": []}}`, 2942503},
		{`{"$rand": 5}`, 3040501},
		{`{"$rand": {"a": 1}}`, 3040501},
		{`{"$sortArray": 5}`, 2942500},
	} {
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(`{"v": `+c.expr+`}`), false, &raw); err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		scope := expr.NewScope()
		e, err := expr.Compile(bsoncore.Document(raw).Lookup("v"), scope)
		if err == nil {
			_, err = e.Eval(expr.NewContext(scope, bsoncore.Document(raw), time.Unix(0, 0)))
		}
		ce, ok := languageError(err).(*CommandError)
		if !ok {
			t.Errorf("%s: %v, want code %d", c.expr, err, c.code)
			continue
		}
		if ce.Code != c.code {
			t.Errorf("%s: code %d (%s), want %d", c.expr, ce.Code, ce.Msg, c.code)
		}
	}
}
