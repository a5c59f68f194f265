package value

import (
	"errors"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// CollationVersion is the version a collation reports. MongoDB shows its
// ICU version there, 57.1; Parsec shows the same so that specs copied from
// MongoDB (listIndexes output, with their version) are accepted, although
// its ordering data is CLDR's through golang.org/x/text, not ICU's.
const CollationVersion = "57.1"

// Collation is a collation spec with every option set, as MongoDB's
// listIndexes and listCollections show one. The zero Collation is not
// valid; DefaultCollation gives a locale's defaults.
type Collation struct {
	Locale          string // ICU locale id: "en_US", "de@collation=phonebook"
	CaseLevel       bool
	CaseFirst       string // "upper", "lower" or "off"
	Strength        int    // 1 (base letters) to 5 (identical)
	NumericOrdering bool
	Alternate       string // "non-ignorable" or "shifted"
	MaxVariable     string // "punct" or "space"
	Normalization   bool
	Backwards       bool
}

// ErrUnknownLocale: the locale is not one Parsec has collation data for,
// or not written in its canonical form.
var ErrUnknownLocale = errors.New("unknown collation locale")

// LocaleError is ErrUnknownLocale with the locale id ICU's canonical form
// would give ("en_US" for "en_us"), empty if none.
type LocaleError struct{ Suggest string }

func (e *LocaleError) Error() string { return ErrUnknownLocale.Error() }
func (e *LocaleError) Unwrap() error { return ErrUnknownLocale }

// supportedBases are the languages with collation data (plus "root").
var supportedBases = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{"root": true}
	for _, t := range collate.Supported() {
		b, _ := t.Base()
		m[b.String()] = true
	}
	return m
})

// DefaultCollation is locale's collation with MongoDB's defaults for the
// other options (French Canadian orders accents backwards), or a
// *LocaleError when the locale is unknown or not in its canonical form.
func DefaultCollation(locale string) (Collation, error) {
	if _, err := localeTag(locale); err != nil {
		return Collation{}, err
	}
	return Collation{
		Locale: locale, CaseFirst: "off", Strength: 3, Alternate: "non-ignorable",
		MaxVariable: "punct", Backwards: locale == "fr_CA",
	}, nil
}

// localeTag turns an ICU locale id (language[_Script][_REGION][@collation=type])
// into a BCP 47 tag, refusing ids that are not canonical or not supported.
func localeTag(locale string) (language.Tag, error) {
	id, kw, hasKW := strings.Cut(locale, "@")
	parts := strings.Split(id, "_")
	if id == "" || len(parts) > 3 {
		return language.Tag{}, &LocaleError{}
	}
	bcp := strings.Join(parts, "-")
	if hasKW {
		k, v, ok := strings.Cut(kw, "=")
		if !ok || k != "collation" || v == "" {
			return language.Tag{}, &LocaleError{}
		}
		bcp += "-u-co-" + bcpCollationType(v)
	}
	t, err := language.Parse(bcp)
	if err != nil {
		return language.Tag{}, &LocaleError{}
	}
	base, _ := t.Base()
	canon := canonicalID(parts)
	if !supportedBases()[base.String()] || id == "root" && len(parts) > 1 {
		return language.Tag{}, &LocaleError{}
	}
	if canon != id {
		return language.Tag{}, &LocaleError{Suggest: canon}
	}
	return t, nil
}

// canonicalID writes an id's parts as ICU does: language lower case, script
// title case, region upper case.
func canonicalID(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		switch {
		case i == 0:
			out[i] = strings.ToLower(p)
		case len(p) == 4:
			out[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		default:
			out[i] = strings.ToUpper(p)
		}
	}
	return strings.Join(out, "_")
}

// bcpCollationType maps ICU's collation keyword values to BCP 47's.
func bcpCollationType(v string) string {
	switch v {
	case "phonebook":
		return "phonebk"
	case "dictionary":
		return "dict"
	case "traditional":
		return "trad"
	case "gb2312han":
		return "gb2312"
	}
	return v
}

// Collator compares and encodes strings by a collation. A nil *Collator is
// the simple collation: strings compare by their UTF-8 bytes. A Collator
// is safe for concurrent use.
type Collator struct {
	spec Collation
	tag  language.Tag
	pool sync.Pool // *collatorState
}

type collatorState struct {
	c   *collate.Collator
	buf collate.Buffer
	tmp [2][]byte
}

// NewCollator builds the collator of spec; the error is a *LocaleError
// when the locale is unknown.
func NewCollator(spec Collation) (*Collator, error) {
	t, err := localeTag(spec.Locale)
	if err != nil {
		return nil, err
	}
	// Options go through the tag's Unicode extension, the way
	// golang.org/x/text reads them.
	ext := []string{}
	switch spec.Strength {
	case 1:
		ext = append(ext, "ks", "level1")
	case 2:
		ext = append(ext, "ks", "level2")
	case 4:
		ext = append(ext, "ks", "level4")
	case 5:
		ext = append(ext, "ks", "identic")
	}
	if spec.CaseLevel {
		ext = append(ext, "kc", "true")
	}
	if spec.Backwards {
		ext = append(ext, "kb", "true")
	}
	if spec.NumericOrdering {
		ext = append(ext, "kn", "true")
	}
	if spec.Alternate == "shifted" {
		ext = append(ext, "ka", "shifted")
	}
	if co := t.TypeForKey("co"); co != "" {
		ext = append(ext, "co", co)
	}
	if len(ext) > 0 {
		s := t.String()
		if i := strings.Index(s, "-u-"); i >= 0 {
			s = s[:i]
		}
		if t, err = language.Parse(s + "-u-" + strings.Join(ext, "-")); err != nil {
			return nil, &LocaleError{}
		}
	}
	c := &Collator{spec: spec, tag: t}
	c.pool.New = func() any { return &collatorState{c: collate.New(c.tag, collate.OptionsFromTag(c.tag))} }
	return c, nil
}

// Spec is the collation c implements.
func (c *Collator) Spec() Collation { return c.spec }

// Equal reports whether c and o are the same collation (nil is simple).
func (c *Collator) Equal(o *Collator) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c == o || c.spec == o.spec
}

// upperFirst: caseFirst "upper" puts upper case before lower case, the
// reverse of the tertiary order of the collation data; swapping the case
// of every letter before weighing gives exactly that order.
func (c *Collator) upperFirst() bool { return c.spec.CaseFirst == "upper" && c.spec.Strength >= 3 }

// CompareStrings orders the UTF-8 strings a and b by the collation.
func (c *Collator) CompareStrings(a, b []byte) int {
	st := c.pool.Get().(*collatorState)
	if c.upperFirst() {
		st.tmp[0] = swapCase(st.tmp[0][:0], a)
		st.tmp[1] = swapCase(st.tmp[1][:0], b)
		a, b = st.tmp[0], st.tmp[1]
	}
	r := st.c.Compare(a, b)
	c.pool.Put(st)
	return r
}

// AppendKey appends the sort key of the string s: keys compare with
// bytes.Compare as their strings do with CompareStrings.
func (c *Collator) AppendKey(dst, s []byte) []byte {
	st := c.pool.Get().(*collatorState)
	if c.upperFirst() {
		st.tmp[0] = swapCase(st.tmp[0][:0], s)
		s = st.tmp[0]
	}
	st.buf.Reset()
	dst = append(dst, st.c.Key(&st.buf, s)...)
	c.pool.Put(st)
	return dst
}

func swapCase(dst, s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			dst = append(dst, s[:n]...)
		case unicode.IsUpper(r):
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		case unicode.IsLower(r):
			dst = utf8.AppendRune(dst, unicode.ToUpper(r))
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// AppendDocument appends the collation as MongoDB shows it, every option
// set, as the document named name (listIndexes, listCollections, explain).
func (c Collation) AppendDocument(dst []byte, name string) []byte {
	b := bsoncore.NewDocumentBuilder().
		AppendString("locale", c.Locale).
		AppendBoolean("caseLevel", c.CaseLevel).
		AppendString("caseFirst", c.CaseFirst).
		AppendInt32("strength", int32(c.Strength)).
		AppendBoolean("numericOrdering", c.NumericOrdering).
		AppendString("alternate", c.Alternate).
		AppendString("maxVariable", c.MaxVariable).
		AppendBoolean("normalization", c.Normalization).
		AppendBoolean("backwards", c.Backwards).
		AppendString("version", CollationVersion)
	return bsoncore.AppendDocumentElement(dst, name, b.Build())
}

// Document is the collation as MongoDB shows it, every option set.
func (c Collation) Document() bsoncore.Document {
	el := c.AppendDocument(nil, "x")
	v := bsoncore.Element(el).Value()
	return bsoncore.Document(v.Data)
}

// Collatable reports whether the order or equality of v can depend on a
// collation: v is a string or symbol, or a document or array holding one.
func Collatable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return true
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		for e := range All(v.Data) {
			if Collatable(e.Value()) {
				return true
			}
		}
	}
	return false
}

// CollationOfDocument reads a collation document that was validated
// before (as Document writes one, or a subset: missing options take the
// locale's defaults). It reports false for the simple collation or a
// document it cannot read.
func CollationOfDocument(d []byte) (Collation, bool) {
	loc, err := bsoncore.Document(d).LookupErr("locale")
	if err != nil {
		return Collation{}, false
	}
	s, _ := loc.StringValueOK()
	c, err := DefaultCollation(s)
	if err != nil {
		return Collation{}, false
	}
	for e := range All(d) {
		v := e.Value()
		switch e.Key() {
		case "caseLevel":
			c.CaseLevel, _ = v.BooleanOK()
		case "caseFirst":
			c.CaseFirst, _ = v.StringValueOK()
		case "strength":
			c.Strength = int(Float(v))
		case "numericOrdering":
			c.NumericOrdering, _ = v.BooleanOK()
		case "alternate":
			c.Alternate, _ = v.StringValueOK()
		case "maxVariable":
			c.MaxVariable, _ = v.StringValueOK()
		case "normalization":
			c.Normalization, _ = v.BooleanOK()
		case "backwards":
			c.Backwards, _ = v.BooleanOK()
		}
	}
	return c, true
}
