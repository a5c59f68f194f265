package expr

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
)

// Regex is a compiled MongoDB regular expression.
type Regex struct {
	Pattern, Options string
	re               *regexp.Regexp
	// dollarNL: the pattern has '$' and is not multiline, so as in PCRE
	// '$' may also match before a final newline.
	dollarNL bool
}

// MatchString reports whether s matches, with PCRE's meaning of '$'.
func (r *Regex) MatchString(s string) bool {
	if r.re.MatchString(s) {
		return true
	}
	return r.dollarNL && strings.HasSuffix(s, "\n") && r.re.MatchString(s[:len(s)-1])
}

// Go returns the Go regular expression the pattern was translated to.
func (r *Regex) Go() *regexp.Regexp { return r.re }

// CompileRegex compiles a MongoDB regular expression (PCRE syntax as far
// as Go's RE2 engine allows) with options among i, m, s, x and u. Errors
// wrap ErrBadRegexOptions, ErrInvalidRegex or langerr.ErrNotImplemented (PCRE
// features RE2 lacks: backreferences, lookaround, possessive and atomic
// groups).
func CompileRegex(pattern, options string) (*Regex, error) {
	flags := ""
	extended := false
	for _, c := range options {
		switch c {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, c) {
				flags += string(c)
			}
		case 'x':
			extended = true
		case 'u':
		default:
			return nil, langerr.New(ErrBadRegexOptions, "invalid flag in regex options: %c", c)
		}
	}
	if strings.ContainsRune(pattern, 0) {
		return nil, langerr.New(langerr.ErrBadValue, "Regular expression cannot contain an embedded null byte")
	}
	src := pattern
	if extended {
		src = stripExtended(src)
	}
	if f := unsupportedPCRE(src); f != "" {
		return nil, langerr.New(langerr.ErrNotImplemented, "Regular expression feature %s is not supported by Parsec: /%s/", f, pattern)
	}
	src = translatePCRE(src)
	goSrc := src
	if flags != "" {
		goSrc = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(goSrc)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = se.Code.String()
		}
		return nil, langerr.New(ErrInvalidRegex, "Regular expression is invalid: %s", msg)
	}
	return &Regex{
		Pattern: pattern, Options: options, re: re,
		dollarNL: !strings.ContainsRune(flags, 'm') && strings.Contains(src, "$"),
	}, nil
}

// stripExtended removes what PCRE's x flag ignores: unescaped whitespace
// and # comments outside character classes.
func stripExtended(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
			continue
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			continue
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unsupportedPCRE names a PCRE construct RE2 cannot run, or returns "".
func unsupportedPCRE(p string) string {
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			n := p[i+1]
			if !inClass && n >= '1' && n <= '9' {
				return "backreference \\" + string(n)
			}
			if !inClass && (n == 'k' || n == 'g') {
				return "backreference \\" + string(n)
			}
			i++
			continue
		}
		if inClass {
			if c == ']' {
				inClass = false
			}
			continue
		}
		switch c {
		case '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == ']' { // ']' first is literal
				i++
			}
		case '(':
			rest := p[i+1:]
			for _, q := range []string{"?=", "?!", "?<=", "?<!"} {
				if strings.HasPrefix(rest, q) {
					return "lookaround (" + q
				}
			}
			if strings.HasPrefix(rest, "?>") {
				return "atomic group (?>"
			}
		case '+':
			if i > 0 && (p[i-1] == '+' || p[i-1] == '*' || p[i-1] == '?' || p[i-1] == '}') && (i < 2 || p[i-2] != '\\') {
				return "possessive quantifier"
			}
		}
	}
	return ""
}

// translatePCRE rewrites PCRE escapes whose RE2 spelling differs.
func translatePCRE(p string) string {
	if !strings.Contains(p, `\Z`) && !strings.Contains(p, `\h`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			switch p[i+1] {
			case 'Z':
				b.WriteString(`(?:\n?\z)`)
				i++
				continue
			case 'h':
				b.WriteString(`[\t ]`)
				i++
				continue
			}
			b.WriteByte(p[i])
			b.WriteByte(p[i+1])
			i++
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
