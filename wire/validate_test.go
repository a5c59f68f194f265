package wire

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// everyType is a document with one element of each BSON type.
func everyType(tb testing.TB) []byte {
	oid, _ := bson.ObjectIDFromHex("65a1b2c3d4e5f60718293a4b")
	dec, _ := bson.ParseDecimal128("1234.5678")
	return mustDoc(tb, bson.D{
		{Key: "double", Value: 1.5},
		{Key: "string", Value: "héllo"},
		{Key: "emptyString", Value: ""},
		{Key: "document", Value: bson.D{{Key: "a", Value: int32(1)}}},
		{Key: "emptyDocument", Value: bson.D{}},
		{Key: "array", Value: bson.A{int32(1), "two", bson.A{}}},
		{Key: "binary", Value: bson.Binary{Subtype: 0x80, Data: []byte{1, 2, 3}}},
		{Key: "emptyBinary", Value: bson.Binary{}},
		{Key: "undefined", Value: bson.Undefined{}},
		{Key: "objectId", Value: oid},
		{Key: "true", Value: true},
		{Key: "false", Value: false},
		{Key: "datetime", Value: bson.DateTime(1700000000000)},
		{Key: "null", Value: bson.Null{}},
		{Key: "regex", Value: bson.Regex{Pattern: "^a.*", Options: "i"}},
		{Key: "dbPointer", Value: bson.DBPointer{DB: "db.coll", Pointer: oid}},
		{Key: "javascript", Value: bson.JavaScript("function() {}")},
		{Key: "symbol", Value: bson.Symbol("sym")},
		{Key: "codeWithScope", Value: bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "x", Value: int32(1)}}}},
		{Key: "int32", Value: int32(-7)},
		{Key: "timestamp", Value: bson.Timestamp{T: 1, I: 2}},
		{Key: "int64", Value: int64(1) << 40},
		{Key: "decimal", Value: dec},
		{Key: "minKey", Value: bson.MinKey{}},
		{Key: "maxKey", Value: bson.MaxKey{}},
		{Key: "", Value: "empty key"},
	})
}

func TestValidateDocumentValid(t *testing.T) {
	doc := everyType(t)
	if err := bson.Raw(doc).Validate(); err != nil {
		t.Fatalf("the reference validator rejects the test document: %v", err)
	}
	if err := ValidateDocument(doc); err != nil {
		t.Errorf("ValidateDocument(every type) = %v", err)
	}
	for _, d := range [][]byte{
		{5, 0, 0, 0, 0},
		nestedDoc(MaxDocumentDepth, 0x03),
		nestedDoc(MaxDocumentDepth, 0x04),
		mustDoc(t, bson.D{{Key: "x", Value: bson.D{{Key: "y", Value: everyType(t)}}}}),
	} {
		if err := ValidateDocument(d); err != nil {
			t.Errorf("ValidateDocument(%.60x...) = %v", d, err)
		}
	}
}

// elem builds a document from raw element bytes (type, name, value),
// computing the length and adding the terminator.
func elem(parts ...[]byte) []byte {
	body := cat(parts...)
	return cat(le32(int32(4+len(body)+1)), body, []byte{0})
}

func TestValidateDocumentInvalid(t *testing.T) {
	empty := []byte{5, 0, 0, 0, 0}
	oid := make([]byte, 12)
	tests := []struct {
		name string
		doc  []byte
		want string
	}{
		// lengths
		{"nil", nil, "at least 5 bytes"},
		{"4 bytes", []byte{4, 0, 0, 0}, "at least 5 bytes"},
		{"length 4", []byte{4, 0, 0, 0, 0}, "length 4 out of range"},
		{"length 0", []byte{0, 0, 0, 0, 0}, "length 0 out of range"},
		{"length negative", []byte{0xff, 0xff, 0xff, 0xff, 0}, "length -1 out of range"},
		{"length past the end", []byte{6, 0, 0, 0, 0}, "length 6 out of range"},
		{"length huge", []byte{0xff, 0xff, 0xff, 0x7f, 0}, "out of range"},
		{"trailing bytes", []byte{5, 0, 0, 0, 0, 0}, "1 trailing bytes"},
		{"no terminator", []byte{5, 0, 0, 0, 1}, "does not end with a zero byte"},
		{"element overruns", cat(le32(8), []byte{0x10, 'a', 0, 0}), "needs 4 bytes"},
		{"element overruns into terminator", cat(le32(11), []byte{0x10, 'a', 0, 1, 2, 3, 0}), "needs 4 bytes"},

		// element names and types
		{"unterminated name", cat(le32(8), []byte{0x0A, 'a', 'b', 0}), "unterminated element name"},
		{"name runs to the end", cat(le32(7), []byte{0x0A, 'a', 0}), "unterminated element name"},
		{"type 0x00 inside", elem([]byte{0x00, 'a', 0}), "unknown BSON type 0x0"},
		{"type 0x14", elem([]byte{0x14, 'a', 0}), "unknown BSON type 0x14"},
		{"type 0x80", elem([]byte{0x80, 'a', 0}), "unknown BSON type 0x80"},
		{"type 0xFE", elem([]byte{0xFE, 'a', 0}), "unknown BSON type 0xfe"},

		// fixed-size values
		{"double short", elem([]byte{0x01, 'a', 0}, make([]byte, 7)), "needs 8 bytes"},
		{"int64 short", elem([]byte{0x12, 'a', 0}, make([]byte, 4)), "needs 8 bytes"},
		{"decimal short", elem([]byte{0x13, 'a', 0}, make([]byte, 15)), "needs 16 bytes"},
		{"objectId short", elem([]byte{0x07, 'a', 0}, make([]byte, 11)), "needs 12 bytes"},
		{"bool 2", elem([]byte{0x08, 'a', 0, 2}), "boolean byte 2"},
		{"bool missing", elem([]byte{0x08, 'a', 0}), "needs 1 bytes"},

		// strings
		{"string length 0", elem([]byte{0x02, 'a', 0}, le32(0), []byte{0}), "string length 0"},
		{"string length negative", elem([]byte{0x02, 'a', 0}, le32(-2), []byte{0}), "string length -2"},
		{"string length too long", elem([]byte{0x02, 'a', 0}, le32(3), []byte{'x', 0}), "string length 3"},
		{"string unterminated", elem([]byte{0x02, 'a', 0}, le32(2), []byte{'x', 'y'}), "not zero-terminated"},
		{"string short", elem([]byte{0x02, 'a', 0}, []byte{1, 0}), "string needs"},
		{"javascript unterminated", elem([]byte{0x0D, 'a', 0}, le32(2), []byte{'x', 'y'}), "not zero-terminated"},
		{"symbol length too long", elem([]byte{0x0E, 'a', 0}, le32(100), []byte{'x', 0}), "string length 100"},

		// binary
		{"binary length negative", elem([]byte{0x05, 'a', 0}, le32(-1), []byte{0}), "binary length -1"},
		{"binary length too long", elem([]byte{0x05, 'a', 0}, le32(4), []byte{0, 1, 2, 3}), "binary length 4"},
		{"binary no subtype", elem([]byte{0x05, 'a', 0}, le32(0)), "needs 5 bytes"},

		// regex and DBPointer
		{"regex no options", elem([]byte{0x0B, 'a', 0}, cstr("abc")), "unterminated regular expression"},
		{"regex unterminated", elem([]byte{0x0B, 'a', 0}, []byte("abc")), "unterminated regular expression"},
		{"dbpointer short", elem([]byte{0x0C, 'a', 0}, le32(2), cstr("c"), make([]byte, 11)), "DBPointer too short"},
		{"dbpointer bad string", elem([]byte{0x0C, 'a', 0}, le32(0), cstr("c"), oid), "string length 0"},

		// code with scope
		{"cws length short", elem([]byte{0x0F, 'a', 0}, le32(13), le32(1), []byte{0}, empty[:4]), "code with scope length 13"},
		{"cws length past end", elem([]byte{0x0F, 'a', 0}, le32(100), le32(1), []byte{0}, empty), "code with scope length 100"},
		{"cws length mismatch", elem([]byte{0x0F, 'a', 0}, le32(15), le32(1), []byte{0}, empty, []byte{0}), "code with scope length mismatch"},
		{"cws bad scope", elem([]byte{0x0F, 'a', 0}, le32(14), le32(1), []byte{0}, []byte{5, 0, 0, 0, 1}), "does not end with a zero byte"},
		{"cws bad code", elem([]byte{0x0F, 'a', 0}, le32(14), le32(7), []byte{0}, empty), "string length 7"},

		// nested errors are reported from inside
		{"nested invalid", elem([]byte{0x03, 'a', 0}, elem([]byte{0x08, 'b', 0, 9})), "boolean byte 9"},
		{"nested length past the parent", elem([]byte{0x03, 'a', 0}, le32(50), []byte{0}), "length 50 out of range"},
		{"array invalid", elem([]byte{0x04, 'a', 0}, elem([]byte{0x99, '0', 0})), "unknown BSON type 0x99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateDocument(tc.doc)
			if err == nil {
				t.Fatalf("ValidateDocument(%x) succeeded", tc.doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestValidateDocumentDepth(t *testing.T) {
	for _, typ := range []byte{0x03, 0x04} {
		if err := ValidateDocument(nestedDoc(MaxDocumentDepth, typ)); err != nil {
			t.Errorf("type %#x, depth %d: %v", typ, MaxDocumentDepth, err)
		}
		for _, depth := range []int{MaxDocumentDepth + 1, MaxDocumentDepth + 2, 100_000} {
			err := ValidateDocument(nestedDoc(depth, typ))
			if err == nil || !strings.Contains(err.Error(), "nested deeper than 200 levels") {
				t.Errorf("type %#x, depth %d: error = %.200v", typ, depth, err)
			}
		}
	}
	// The message names the outermost and innermost fields of a deep path
	// and counts the rest, instead of quoting every level.
	err := ValidateDocument(nestedDoc(100_000, 0x03))
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, fmt.Sprintf("(%d more fields)", MaxDocumentDepth-maxErrorPath)) {
		t.Errorf("deep path message (%d bytes): %.300s", len(msg), msg)
	}
	// Code with scope counts as a level too: a scope at the maximum depth
	// cannot nest further.
	inner := nestedDoc(MaxDocumentDepth, 0x03)
	cws := cat(le32(int32(4+6+len(inner))), le32(2), cstr("x"), inner)
	if err := ValidateDocument(elem([]byte{0x0F, 'c', 0}, cws)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("code with scope holding %d levels: %v", MaxDocumentDepth, err)
	}
	inner = nestedDoc(MaxDocumentDepth-1, 0x03)
	cws = cat(le32(int32(4+6+len(inner))), le32(2), cstr("x"), inner)
	if err := ValidateDocument(elem([]byte{0x0F, 'c', 0}, cws)); err != nil {
		t.Errorf("code with scope holding %d levels: %v", MaxDocumentDepth-1, err)
	}
}
