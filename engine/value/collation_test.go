package value

import (
	"bytes"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func collator(t *testing.T, locale string, edit func(*Collation)) *Collator {
	t.Helper()
	spec, err := DefaultCollation(locale)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&spec)
	}
	c, err := NewCollator(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollatorStrengthAndKeys(t *testing.T) {
	s2 := collator(t, "en_US", func(c *Collation) { c.Strength = 2 })
	s1 := collator(t, "en", func(c *Collation) { c.Strength = 1 })
	s3 := collator(t, "en", nil)
	num := collator(t, "en", func(c *Collation) { c.NumericOrdering = true })
	upper := collator(t, "en", func(c *Collation) { c.CaseFirst = "upper" })
	cases := []struct {
		c    *Collator
		a, b string
		want int
	}{
		{nil, "PING", "ping", -1},
		{s2, "PING", "ping", 0},
		{s2, "café", "cafe", 1},
		{s1, "café", "CAFE", 0},
		{s3, "a", "A", -1},
		{upper, "a", "A", 1},
		{s3, "B", "a", 1}, // bytes would put "B" first
		{s3, "10", "9", -1},
		{num, "10", "9", 1},
	}
	for _, tc := range cases {
		a, b := str(tc.a), str(tc.b)
		if got := CompareWith(a, b, tc.c); sign(got) != tc.want {
			t.Errorf("CompareWith(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		ka, kb := EncodeKeyWith(nil, a, tc.c), EncodeKeyWith(nil, b, tc.c)
		if got := bytes.Compare(ka, kb); got != tc.want {
			t.Errorf("keys of %q, %q compare %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	// Nested strings compare by the collation; other types do not.
	da := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendString("x", "ABC").Build()}
	db := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendString("x", "abc").Build()}
	if CompareWith(da, db, s2) != 0 || CompareWith(da, db, nil) == 0 {
		t.Error("nested strings ignore the collation")
	}
	if !bytes.Equal(EncodeKeyWith(nil, da, s2), EncodeKeyWith(nil, db, s2)) {
		t.Error("nested strings encode apart under strength 2")
	}
}

func TestCollationLocales(t *testing.T) {
	for _, ok := range []string{"en", "en_US", "fr_CA", "de@collation=phonebook", "zh_Hant", "root"} {
		if _, err := DefaultCollation(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "xx", "en_us", "en-US", "de@foo=bar", "a_b_c_d"} {
		_, err := DefaultCollation(bad)
		if !errors.Is(err, ErrUnknownLocale) {
			t.Errorf("%q accepted", bad)
		}
	}
	var le *LocaleError
	if _, err := DefaultCollation("en_us"); !errors.As(err, &le) || le.Suggest != "en_US" {
		t.Errorf("en_us: want a suggestion of en_US, got %v", err)
	}
	if c, _ := DefaultCollation("fr_CA"); !c.Backwards {
		t.Error("fr_CA orders accents backwards by default")
	}
}
