package query

import (
	"github.com/parsecdb/parsec/engine/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// regexMatcher matches strings and symbols against a pattern with
// MongoDB's (PCRE's) options; a regex value in a document matches when its
// pattern and options are the same.
type regexMatcher struct{ re *expr.Regex }

func (m *regexMatcher) matchValue(v bsoncore.Value, _ *state) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return m.re.MatchString(stringOf(v))
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		return p == m.re.Pattern && o == m.re.Options
	}
	return false
}

// stringOf returns a string or symbol value's text.
func stringOf(v bsoncore.Value) string {
	if v.Type == bsoncore.TypeSymbol {
		s, _ := v.SymbolOK()
		return s
	}
	s, _ := v.StringValueOK()
	return s
}

// compileRegex compiles a pattern with engine/expr's regex translation;
// its errors wrap expr's categories (ErrInvalidRegex, ErrBadRegexOptions,
// langerr.ErrNotImplemented), which the command layer maps too.
func compileRegex(pattern, options string) (*regexMatcher, error) {
	re, err := expr.CompileRegex(pattern, options)
	if err != nil {
		return nil, err
	}
	return &regexMatcher{re: re}, nil
}
