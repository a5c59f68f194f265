package query

import (
	"testing"

	"github.com/cockroachdb/datadriven"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// runExplain is the explain directive of TestDataDriven: the document
// must fail the filter, and the output is Explain's details.
func runExplain(t *testing.T, d *datadriven.TestData, lines []string) string {
	if len(lines) != 2 {
		d.Fatalf(t, "explain wants a filter and a document")
	}
	filter, doc := parse(t, d.Pos, lines[0]), parse(t, d.Pos, lines[1])
	f, err := Compile(filter)
	if err != nil {
		d.Fatalf(t, "compile %s: %v", lines[0], err)
	}
	if ok, err := f.MatchErr(doc); ok && err == nil {
		d.Fatalf(t, "%s matches %s: nothing to explain", lines[1], lines[0])
	}
	out, err := bson.MarshalExtJSON(bson.Raw(Explain(filter, doc, ExplainOptions{})), false, false)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return string(out) + "\n"
}
