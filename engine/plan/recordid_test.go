package plan

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A blocking sort's documents carry their record id in a trailing
// $recordId until shaped: the tag comes off exactly as it went on, and
// only a tag of that form is taken for one.
func TestRecordIDTagRoundTrip(t *testing.T) {
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "x"}})
	tagged := appendInt64Field(doc, recordIDTag, -42)
	if err := bsoncore.Document(tagged).Validate(); err != nil {
		t.Fatalf("tagged document invalid: %v", err)
	}
	if v := bsoncore.Document(tagged).Lookup(recordIDTag); v.Type != bsoncore.TypeInt64 || v.Int64() != -42 {
		t.Fatalf("tag %v", v)
	}
	rest, rid, ok := untagRecordID(tagged)
	if !ok || rid != -42 || !bytes.Equal(rest, doc) {
		t.Fatalf("untag: %v %d %v, want the document back", bson.Raw(rest), rid, ok)
	}
	if _, _, ok := untagRecordID(doc); ok {
		t.Fatal("an untagged document gave a record id")
	}
	other := appendInt64Field(doc, "$recordIx", 7) // same length, other name
	if _, _, ok := untagRecordID(other); ok {
		t.Fatal("a field of another name was taken for the tag")
	}
	asInt32, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "$recordId", Value: int32(5)}, {Key: "pad", Value: int32(0)}})
	if _, _, ok := untagRecordID(asInt32); ok {
		t.Fatal("a document not ending with an int64 $recordId was untagged")
	}
}
