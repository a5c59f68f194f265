package expr

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func concatFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var b strings.Builder
	for _, a := range args {
		if isNullish(a) {
			return Null, nil
		}
		if !isString(a) {
			return Missing, langerr.New(ErrConcatType, "$concat only supports strings, not %s", TypeName(a))
		}
		b.WriteString(stringOf(a))
	}
	return String(b.String()), nil
}

// coerceToString is how $toLower, $toUpper and $strcasecmp read their
// argument: null is "", numbers, dates and timestamps are formatted.
func coerceToString(name string, v bsoncore.Value) (string, error) {
	switch {
	case isNullish(v):
		return "", nil
	case isString(v):
		return stringOf(v), nil
	case isNumber(v), v.Type == bsoncore.TypeDateTime, v.Type == bsoncore.TypeTimestamp:
		s, err := convertTo(v, "string")
		if err != nil {
			return "", err
		}
		return stringOf(s), nil
	}
	return "", langerr.New(ErrToStringType, "can't convert from BSON type %s to String", TypeName(v))
}

func toLowerFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	s, err := coerceToString(name, a[0])
	return String(asciiMap(s, 'A', 'Z', 'a'-'A')), err
}

func toUpperFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	s, err := coerceToString(name, a[0])
	return String(asciiMap(s, 'a', 'z', 'A'-'a')), err
}

// asciiMap changes the case of ASCII letters only, as MongoDB does.
func asciiMap(s string, lo, hi byte, delta int) string {
	b := []byte(s)
	for i, c := range b {
		if c >= lo && c <= hi {
			b[i] = byte(int(c) + delta)
		}
	}
	return string(b)
}

func strLenCPFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if !isString(a[0]) {
		return Missing, langerr.New(ErrStrLenCPType, "$strLenCP requires a string argument, found: %s", TypeName(a[0]))
	}
	return Int32(int32(utf8.RuneCountInString(stringOf(a[0])))), nil
}

func strLenBytesFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if !isString(a[0]) {
		return Missing, langerr.New(ErrStrLenBytesType, "$strLenBytes requires a string argument, found: %s", TypeName(a[0]))
	}
	return Int32(int32(len(stringOf(a[0])))), nil
}

// substrBytesFn is $substrBytes and its older name $substr, which
// MongoDB's messages call $substrBytes too.
func substrBytesFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	const name = "$substrBytes"
	s, err := coerceToString(name, a[0])
	if err != nil {
		return Missing, err
	}
	if !isNumber(a[1]) {
		return Missing, langerr.New(ErrSubstrStartType, "%s:  starting index must be a numeric type (is BSON type %s)", name, TypeName(a[1]))
	}
	if !isNumber(a[2]) {
		return Missing, langerr.New(ErrSubstrLengthType, "%s:  length must be a numeric type (is BSON type %s)", name, TypeName(a[2]))
	}
	start, _ := exactInt(a[1])
	n, _ := exactInt(a[2])
	if start < 0 || start >= int64(len(s)) {
		return String(""), nil
	}
	end := int64(len(s))
	if n >= 0 && start+n < end {
		end = start + n
	}
	if !utf8.RuneStart(s[start]) {
		return Missing, langerr.New(ErrSubstrStartContinuation, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", name)
	}
	if end < int64(len(s)) && !utf8.RuneStart(s[end]) {
		return Missing, langerr.New(ErrSubstrEndMidChar, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.", name)
	}
	return String(s[start:end]), nil
}

func substrCPFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	s, err := coerceToString(name, a[0])
	if err != nil {
		return Missing, err
	}
	if !isNumber(a[1]) {
		return Missing, langerr.New(ErrSubstrCPStartType, "$substrCP: starting index must be a numeric type (is BSON type %s)", TypeName(a[1]))
	}
	start, ok := exactInt(a[1])
	if !ok || start != int64(int32(start)) {
		return Missing, langerr.New(ErrSubstrCPStartInt, "$substrCP: starting index cannot be represented as a 32-bit integral value: %s", value.Render(a[1]))
	}
	if !isNumber(a[2]) {
		return Missing, langerr.New(ErrSubstrCPLengthType, "$substrCP: length must be a numeric type (is BSON type %s)", TypeName(a[2]))
	}
	n, ok := exactInt(a[2])
	if !ok || n != int64(int32(n)) {
		return Missing, langerr.New(ErrSubstrCPLengthInt, "$substrCP: length cannot be represented as a 32-bit integral value: %s", value.Render(a[2]))
	}
	if n < 0 {
		return Missing, langerr.New(ErrSubstrCPLengthNegative, "$substrCP: length must be a nonnegative integer.")
	}
	if start < 0 {
		return Missing, langerr.New(ErrSubstrCPStartNegative, "$substrCP: the starting index must be nonnegative integer.")
	}
	r := []rune(s)
	if start >= int64(len(r)) {
		return String(""), nil
	}
	return String(string(r[start:min(start+n, int64(len(r)))])), nil
}

func splitFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	if !isString(a[0]) {
		return Missing, langerr.New(ErrSplitInput, "$split requires an expression that evaluates to a string as a first argument, found: %s", TypeName(a[0]))
	}
	if !isString(a[1]) {
		return Missing, langerr.New(ErrSplitSeparator, "$split requires an expression that evaluates to a string as a second argument, found: %s", TypeName(a[1]))
	}
	sep := stringOf(a[1])
	if sep == "" {
		return Missing, langerr.New(ErrSplitEmpty, "$split requires a non-empty separator")
	}
	var out []bsoncore.Value
	for _, p := range strings.Split(stringOf(a[0]), sep) {
		out = append(out, String(p))
	}
	return Array(out), nil
}

func strcasecmpFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	x, err := coerceToString(name, a[0])
	if err != nil {
		return Missing, err
	}
	y, err := coerceToString(name, a[1])
	if err != nil {
		return Missing, err
	}
	return Int32(int32(strings.Compare(asciiMap(x, 'a', 'z', 'A'-'a'), asciiMap(y, 'a', 'z', 'A'-'a')))), nil
}

func indexOfBytesFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return indexOfString(name, a, false)
}

func indexOfCPFn(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return indexOfString(name, a, true)
}

func indexOfString(name string, a []bsoncore.Value, cp bool) (bsoncore.Value, error) {
	if isNullish(a[0]) {
		return Null, nil
	}
	inputErr, tokenErr := ErrIndexOfBytesInput, ErrIndexOfBytesToken
	if cp {
		inputErr, tokenErr = ErrIndexOfCPInput, ErrIndexOfCPToken
	}
	if !isString(a[0]) {
		return Missing, langerr.New(inputErr, "%s requires a string as the first argument, found: %s", name, TypeName(a[0]))
	}
	if !isString(a[1]) {
		return Missing, langerr.New(tokenErr, "%s requires a string as the second argument, found: %s", name, TypeName(a[1]))
	}
	s, sub := stringOf(a[0]), stringOf(a[1])
	// offsets[i] is the byte offset of unit i (a byte or a code point).
	var offsets []int
	if cp {
		for i := range s {
			offsets = append(offsets, i)
		}
	}
	n := int64(len(s))
	if cp {
		n = int64(len(offsets))
	}
	at := func(i int64) int {
		if !cp || i >= n {
			return int(min(i, int64(len(s))))
		}
		return offsets[i]
	}
	start, end := int64(0), n
	if len(a) > 2 {
		v, err := indexArg(name, "starting", a[2])
		if err != nil {
			return Missing, err
		}
		start = v
	}
	if len(a) > 3 {
		v, err := indexArg(name, "ending", a[3])
		if err != nil {
			return Missing, err
		}
		end = min(v, end)
	}
	if start > end {
		return Int32(-1), nil
	}
	i := strings.Index(s[at(start):at(end)], sub)
	if i < 0 {
		return Int32(-1), nil
	}
	pos := int64(at(start) + i)
	if cp {
		pos = int64(utf8.RuneCountInString(s[:pos]))
	}
	return Int32(int32(pos)), nil
}

type trimExpr struct {
	name         string
	input, chars Expression
}

func (e *trimExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if isNullish(in) {
		return Null, nil
	}
	if !isString(in) {
		return Missing, langerr.New(ErrTrimInput, "%s requires its input to be a string, got %s (of type %s) instead.", e.name, value.Render(in), TypeName(in))
	}
	// MongoDB's whitespace: U+0000, U+0009-U+000D, U+0020, U+00A0,
	// U+1680 and U+2000-U+200A (not U+2028, U+3000, ...).
	cut := " \t\n\v\f\r\u0000\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
	if e.chars != nil {
		c, err := e.chars.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(c) {
			return Null, nil
		}
		if !isString(c) {
			return Missing, langerr.New(ErrTrimChars, "%s requires 'chars' to be a string, got %s (of type %s) instead.", e.name, value.Render(c), TypeName(c))
		}
		cut = stringOf(c)
		if err := checkTrimChars(e.name, cut); err != nil {
			return Missing, err
		}
	}
	s := stringOf(in)
	switch e.name {
	case "$ltrim":
		s = strings.TrimLeft(s, cut)
	case "$rtrim":
		s = strings.TrimRight(s, cut)
	default:
		s = strings.Trim(s, cut)
	}
	return String(s), nil
}

// checkTrimChars refuses chars that are not UTF-8 the way MongoDB splits
// them into code points: a continuation byte where a code point should
// start (50698), or a code point cut short by the end (50697).
func checkTrimChars(name, chars string) error {
	for i := 0; i < len(chars); {
		b := chars[i]
		n := 1
		switch {
		case b&0xC0 == 0x80:
			return langerr.New(ErrTrimCharsContinuation, "Failed to parse \"chars\" argument to %s: Detected invalid UTF-8. Got continuation byte when expecting the start of a new code point.", name)
		case b&0xF8 == 0xF0:
			n = 4
		case b&0xF0 == 0xE0:
			n = 3
		case b&0xE0 == 0xC0:
			n = 2
		}
		i += n
		if i > len(chars) {
			return langerr.New(ErrTrimCharsTruncated, "Failed to parse \"chars\" argument to %s: Detected invalid UTF-8. Missing expected continuation byte at end of string.", name)
		}
	}
	return nil
}

func trimOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "chars"}, "input")
	if err != nil {
		return nil, err
	}
	e := &trimExpr{name: name}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if ch, ok := m["chars"]; ok {
		if e.chars, err = c.compile(ch); err != nil {
			return nil, err
		}
	}
	return e, nil
}

type regexExpr struct {
	name                  string
	input, regex, options Expression
	fixed                 *Regex // when regex and options are constants
}

func regexOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "regex", "options"}, "input", "regex")
	if err != nil {
		return nil, err
	}
	e := &regexExpr{name: name}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if e.regex, err = c.compile(m["regex"]); err != nil {
		return nil, err
	}
	if o, ok := m["options"]; ok {
		if e.options, err = c.compile(o); err != nil {
			return nil, err
		}
	}
	// A constant pattern (the usual case) is compiled once, here.
	_, constRegex := Constant(e.regex)
	_, constOpts := Constant(e.options)
	if constRegex && (e.options == nil || constOpts) {
		re, null, err := e.compileRegex(&Context{})
		if err != nil {
			return nil, err
		}
		if !null {
			e.fixed = re
		}
	}
	return e, nil
}

func (e *regexExpr) compileRegex(ctx *Context) (*Regex, bool, error) {
	if e.fixed != nil {
		return e.fixed, false, nil
	}
	rv, err := e.regex.Eval(ctx)
	if err != nil {
		return nil, false, err
	}
	var pattern, opts string
	switch {
	case isNullish(rv):
		return nil, true, nil
	case rv.Type == bsoncore.TypeRegex:
		pattern, opts = rv.Regex()
	case isString(rv):
		pattern = stringOf(rv)
	default:
		return nil, false, langerr.New(ErrRegexPattern, "%s needs 'regex' to be of type string or regex", e.name)
	}
	if e.options != nil {
		ov, err := e.options.Eval(ctx)
		if err != nil {
			return nil, false, err
		}
		if !isNullish(ov) {
			if !isString(ov) {
				return nil, false, langerr.New(ErrRegexOptions, "%s needs 'options' to be of type string", e.name)
			}
			// MongoDB refuses options beside a regex with flags even
			// when they are "".
			if opts != "" {
				return nil, false, langerr.New(ErrRegexOptionsTwice, "%s: found regex option(s) specified in both 'regex' and 'option' fields", e.name)
			}
			opts = stringOf(ov)
		}
	}
	if strings.ContainsRune(pattern, 0) {
		return nil, false, langerr.New(ErrRegexNullPattern, "%s: regular expression cannot contain an embedded null byte", e.name)
	}
	if strings.ContainsRune(opts, 0) {
		return nil, false, langerr.New(ErrRegexNullOptions, "%s: regular expression options cannot contain an embedded null byte", e.name)
	}
	re, err := CompileRegex(pattern, opts)
	if errors.Is(err, ErrInvalidRegex) {
		return nil, false, langerr.New(ErrRegexCompile, "Invalid Regex in %s: %s", e.name, strings.TrimPrefix(langerr.Message(err, ErrInvalidRegex), "Regular expression is invalid: "))
	}
	return re, false, err
}

func (e *regexExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	re, null, err := e.compileRegex(ctx)
	if err != nil {
		return Missing, err
	}
	if !isNullish(in) && !isString(in) {
		return Missing, langerr.New(ErrRegexInput, "%s needs 'input' to be of type string", e.name)
	}
	if null || isNullish(in) {
		switch e.name {
		case "$regexMatch":
			return Bool(false), nil
		case "$regexFindAll":
			return Array(nil), nil
		}
		return Null, nil
	}
	s := stringOf(in)
	switch e.name {
	case "$regexMatch":
		return Bool(re.MatchString(s)), nil
	case "$regexFind":
		m := re.Go().FindStringSubmatchIndex(s)
		if m == nil {
			return Null, nil
		}
		return regexResult(s, m), nil
	}
	var out []bsoncore.Value
	for _, m := range re.Go().FindAllStringSubmatchIndex(s, -1) {
		out = append(out, regexResult(s, m))
	}
	return Array(out), nil
}

// regexResult is {match, idx, captures} with idx in code points.
func regexResult(s string, m []int) bsoncore.Value {
	var caps []bsoncore.Value
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] < 0 {
			caps = append(caps, Null)
			continue
		}
		caps = append(caps, String(s[m[i]:m[i+1]]))
	}
	return Document([]Field{
		{"match", String(s[m[0]:m[1]])},
		{"idx", Int32(int32(utf8.RuneCountInString(s[:m[0]])))},
		{"captures", Array(caps)},
	})
}

type replaceExpr struct {
	name                     string
	input, find, replacement Expression
}

func replaceOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "find", "replacement"}, "input", "find", "replacement")
	if err != nil {
		return nil, err
	}
	e := &replaceExpr{name: name}
	for _, p := range []struct {
		dst *Expression
		key string
	}{{&e.input, "input"}, {&e.find, "find"}, {&e.replacement, "replacement"}} {
		if *p.dst, err = c.compile(m[p.key]); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *replaceExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	var vals [3]bsoncore.Value
	for i, x := range []Expression{e.input, e.find, e.replacement} {
		v, err := x.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !isNullish(v) && !isString(v) {
			what := []string{"input", "find", "replacement"}[i]
			cat := []error{ErrReplaceInput, ErrReplaceFind, ErrReplaceReplacement}[i]
			return Missing, langerr.New(cat, "%s requires that '%s' be a string, found: %s", e.name, what, value.Render(v))
		}
		vals[i] = v
	}
	for _, v := range vals {
		if isNullish(v) {
			return Null, nil
		}
	}
	n := -1
	if e.name == "$replaceOne" {
		n = 1
	}
	return String(strings.Replace(stringOf(vals[0]), stringOf(vals[1]), stringOf(vals[2]), n)), nil
}

// indexArg reads the starting or ending index (which) of $indexOfBytes,
// $indexOfCP or $indexOfArray: a non-negative integer.
func indexArg(name, which string, v bsoncore.Value) (int64, error) {
	i, ok := exactInt(v)
	if !ok {
		// No space after the operator's name: MongoDB's words.
		return 0, langerr.New(ErrIndexOfIntegral, "%srequires an integral %s index, found a value of type: %s, with value: %s", name, which, TypeName(v), value.Render(v))
	}
	if i < 0 {
		return 0, langerr.New(ErrIndexOfNegative, "%s requires a nonnegative %s index, found: %d", name, which, i)
	}
	return i, nil
}
