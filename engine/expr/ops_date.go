package expr

import (
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // Olson time zones without depending on the host's zoneinfo

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Date expressions work in UTC unless given a timezone: an Olson name
// ("Europe/Paris"), "UTC"/"GMT", or a fixed offset ("+03", "-0530",
// "+05:30").

// ParseTimezone resolves a timezone identifier.
func ParseTimezone(s string) (*time.Location, error) {
	if off, ok := parseOffset(s); ok {
		return time.FixedZone(s, off), nil
	}
	if s == "" || s == "Local" || strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return nil, langerr.New(ErrTimezone, "unrecognized time zone identifier: \"%s\"", s)
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, langerr.New(ErrTimezone, "unrecognized time zone identifier: \"%s\"", s)
	}
	return loc, nil
}

// parseOffset reads ±HH, ±HHMM or ±HH:MM as seconds east of UTC.
func parseOffset(s string) (int, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := strings.Replace(s[1:], ":", "", 1)
	if (len(digits) != 2 && len(digits) != 4) || (strings.Contains(s, ":") && len(s) != 6) {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	h, _ := strconv.Atoi(digits[:2])
	m := 0
	if len(digits) == 4 {
		m, _ = strconv.Atoi(digits[2:])
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// zoneArg is an optional timezone expression.
type zoneArg struct {
	e     Expression
	fixed *time.Location // the expression's value when it is a constant
}

func (c *compiler) compileZone(v bsoncore.Value, ok bool) (zoneArg, error) {
	if !ok {
		return zoneArg{fixed: time.UTC}, nil
	}
	e, err := c.compile(v)
	if err != nil {
		return zoneArg{}, err
	}
	z := zoneArg{e: e}
	if k, isConst := Constant(e); isConst && isString(k) {
		loc, err := ParseTimezone(stringOf(k))
		if err != nil {
			return zoneArg{}, err
		}
		z.fixed = loc
	}
	return z, nil
}

// eval returns the location, or nil when the timezone is null.
func (z zoneArg) eval(ctx *Context) (*time.Location, error) {
	if z.fixed != nil {
		return z.fixed, nil
	}
	v, err := z.e.Eval(ctx)
	if err != nil {
		return nil, err
	}
	if isNullish(v) {
		return nil, nil
	}
	if !isString(v) {
		return nil, langerr.New(ErrTimezoneType, "timezone must evaluate to a string, found %s", TypeName(v))
	}
	return ParseTimezone(stringOf(v))
}

// asTime reads a date, timestamp or ObjectId as a UTC time.
func asTime(name string, v bsoncore.Value) (time.Time, error) {
	switch v.Type {
	case bsoncore.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC(), nil
	case bsoncore.TypeTimestamp:
		t, _ := v.Timestamp()
		return time.Unix(int64(t), 0).UTC(), nil
	case bsoncore.TypeObjectID:
		d, _ := convertTo(v, "date")
		return time.UnixMilli(d.DateTime()).UTC(), nil
	}
	return time.Time{}, langerr.New(ErrToDateType, "can't convert from BSON type %s to Date", TypeName(v))
}

// dateExpr is $year, $month, ... $isoWeek: one part of a date.
type dateExpr struct {
	name string
	date Expression
	tz   zoneArg
}

func dateOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	src := arg
	e := &dateExpr{name: name, tz: zoneArg{fixed: time.UTC}}
	switch arg.Type {
	case bsoncore.TypeEmbeddedDocument:
		// An object whose first field is an operator is the date;
		// any other object names the date and timezone.
		fs := Fields(arg)
		if len(fs) > 0 && strings.HasPrefix(fs[0].Key, "$") {
			break
		}
		m := map[string]bsoncore.Value{}
		for _, f := range fs {
			if f.Key != "date" && f.Key != "timezone" {
				return nil, langerr.New(ErrDatePartOption, "unrecognized option to %s: \"%s\"", name, f.Key)
			}
			m[f.Key] = f.Val
		}
		date, ok := m["date"]
		if !ok {
			return nil, langerr.New(ErrDatePartNoDate, "missing 'date' argument to %s, provided: %s", name, value.RenderElement(name, arg))
		}
		tz, ok := m["timezone"]
		var err error
		if e.tz, err = c.compileZone(tz, ok); err != nil {
			return nil, err
		}
		src = date
	case bsoncore.TypeArray:
		ops := operands(arg)
		if len(ops) != 1 {
			return nil, langerr.New(ErrDatePartArray, "%s accepts exactly one argument if given an array, but was given %d", name, len(ops))
		}
		src = ops[0]
	}
	d, err := c.compile(src)
	if err != nil {
		return nil, err
	}
	e.date = d
	return e, nil
}

// zonedTime evaluates a date and a timezone; null when either is null.
func zonedTime(ctx *Context, name string, date Expression, tz zoneArg) (time.Time, bool, error) {
	v, err := date.Eval(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	loc, err := tz.eval(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	if isNullish(v) || loc == nil {
		return time.Time{}, true, nil
	}
	t, err := asTime(name, v)
	if err != nil {
		return time.Time{}, false, err
	}
	return t.In(loc), false, nil
}

func (e *dateExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	t, null, err := zonedTime(ctx, e.name, e.date, e.tz)
	if err != nil || null {
		return Null, err
	}
	var n int
	switch e.name {
	case "$year":
		n = t.Year()
	case "$month":
		n = int(t.Month())
	case "$dayOfMonth":
		n = t.Day()
	case "$hour":
		n = t.Hour()
	case "$minute":
		n = t.Minute()
	case "$second":
		n = t.Second()
	case "$millisecond":
		n = t.Nanosecond() / 1e6
	case "$dayOfWeek":
		n = int(t.Weekday()) + 1
	case "$dayOfYear":
		n = t.YearDay()
	case "$week":
		n = sundayWeek(t)
	case "$isoWeek":
		_, n = t.ISOWeek()
	case "$isoWeekYear":
		n, _ = t.ISOWeek()
		return Int64(int64(n)), nil
	case "$isoDayOfWeek":
		n = isoWeekday(t)
	}
	return Int32(int32(n)), nil
}

// sundayWeek is strftime's %U: weeks start on Sunday; days before the
// year's first Sunday are in week 0.
func sundayWeek(t time.Time) int {
	return (t.YearDay() - 1 + 7 - int(t.Weekday())) / 7
}

func isoWeekday(t time.Time) int {
	wd := int(t.Weekday())
	if wd == 0 {
		return 7
	}
	return wd
}

type dateToStringExpr struct {
	date, format, onNull Expression
	tz                   zoneArg
	hasTZ                bool
}

func dateToStringOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"date", "format", "timezone", "onNull"}, "date")
	if err != nil {
		return nil, err
	}
	e := &dateToStringExpr{}
	tz, ok := m["timezone"]
	if e.tz, err = c.compileZone(tz, ok); err != nil {
		return nil, err
	}
	e.hasTZ = ok
	if e.date, err = c.compile(m["date"]); err != nil {
		return nil, err
	}
	if f, ok := m["format"]; ok {
		if e.format, err = c.compile(f); err != nil {
			return nil, err
		}
		if k, isConst := Constant(e.format); isConst && isString(k) {
			if err := checkFormat(stringOf(k)); err != nil {
				return nil, err
			}
		}
	}
	if f, ok := m["onNull"]; ok {
		if e.onNull, err = c.compile(f); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func checkFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 == len(f) {
			return langerr.New(ErrFormatUnmatched, "Unmatched '%%' at end of format string")
		}
		i++
		if !strings.ContainsRune("dGHjLmMSuUVwYzZbB%", rune(f[i])) {
			return langerr.New(ErrFormatCharacter, "Invalid format character '%%%c' in format string", f[i])
		}
	}
	return nil
}

func (e *dateToStringExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := e.date.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	loc, err := e.tz.eval(ctx)
	if err != nil {
		return Missing, err
	}
	if loc == nil {
		return Null, nil
	}
	if isNullish(v) {
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	}
	t, err := asTime("$dateToString", v)
	if err != nil {
		return Missing, err
	}
	t = t.In(loc)
	format := "%Y-%m-%dT%H:%M:%S.%LZ"
	if e.hasTZ && loc != time.UTC && loc.String() != "UTC" {
		format = "%Y-%m-%dT%H:%M:%S.%L"
	}
	if e.format != nil {
		f, err := e.format.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(f) {
			return Null, nil
		}
		if !isString(f) {
			return Missing, langerr.New(ErrDateToStringFormat, "$dateToString requires that 'format' be a string, found: %s with value %s", TypeName(f), value.Render(f))
		}
		format = stringOf(f)
		if err := checkFormat(format); err != nil {
			return Missing, err
		}
	}
	s, err := FormatDate(t, format)
	if err != nil {
		return Missing, err
	}
	return String(s), nil
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// FormatDate renders t (in its location) with $dateToString's format
// specifiers.
func FormatDate(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			if t.Year() < 0 || t.Year() > 9999 {
				return "", langerr.New(ErrDateToStringRange, "Could not convert date to string: date component was outside the supported range of 0-9999: %d", t.Year())
			}
			b.WriteString(pad(t.Year(), 4))
		case 'G':
			y, _ := t.ISOWeek()
			b.WriteString(pad(y, 4))
		case 'm':
			b.WriteString(pad(int(t.Month()), 2))
		case 'd':
			b.WriteString(pad(t.Day(), 2))
		case 'H':
			b.WriteString(pad(t.Hour(), 2))
		case 'M':
			b.WriteString(pad(t.Minute(), 2))
		case 'S':
			b.WriteString(pad(t.Second(), 2))
		case 'L':
			b.WriteString(pad(t.Nanosecond()/1e6, 3))
		case 'j':
			b.WriteString(pad(t.YearDay(), 3))
		case 'u':
			b.WriteString(strconv.Itoa(isoWeekday(t)))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday()) + 1))
		case 'U':
			b.WriteString(pad(sundayWeek(t), 2))
		case 'V':
			_, w := t.ISOWeek()
			b.WriteString(pad(w, 2))
		case 'b':
			b.WriteString(monthNames[t.Month()-1][:3])
		case 'B':
			b.WriteString(monthNames[t.Month()-1])
		case 'z', 'Z':
			_, off := t.Zone()
			sign := "+"
			if off < 0 {
				sign, off = "-", -off
			}
			if format[i] == 'z' {
				b.WriteString(sign + pad(off/3600, 2) + pad(off%3600/60, 2))
			} else {
				b.WriteString(sign + pad(off/60, 3))
			}
		case '%':
			b.WriteByte('%')
		default:
			return "", langerr.New(ErrFormatCharacter, "Invalid format character '%%%c' in format string", format[i])
		}
	}
	return b.String(), nil
}

// dateFromStringExpr is $dateFromString.
type dateFromStringExpr struct {
	str, format, onError, onNull Expression
	tz                           zoneArg
	hasTZ                        bool
}

func dateFromStringOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"dateString", "format", "timezone", "onError", "onNull"}, "dateString")
	if err != nil {
		return nil, err
	}
	e := &dateFromStringExpr{}
	tz, ok := m["timezone"]
	if e.tz, err = c.compileZone(tz, ok); err != nil {
		return nil, err
	}
	e.hasTZ = ok
	if e.str, err = c.compile(m["dateString"]); err != nil {
		return nil, err
	}
	for k, dst := range map[string]*Expression{"format": &e.format, "onError": &e.onError, "onNull": &e.onNull} {
		if v, ok := m[k]; ok {
			if *dst, err = c.compile(v); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *dateFromStringExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	s, err := e.str.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	loc, err := e.tz.eval(ctx)
	if err != nil {
		return Missing, err
	}
	var format string
	if e.format != nil {
		f, err := e.format.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(f) {
			return Null, nil
		}
		if !isString(f) {
			return Missing, langerr.New(ErrDateFromStringFormat, "$dateFromString requires that 'format' be a string, found: %s with value %s", TypeName(f), value.Render(f))
		}
		format = stringOf(f)
		if err := checkFormat(format); err != nil {
			return Missing, err
		}
	}
	if isNullish(s) {
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	}
	if loc == nil {
		return Null, nil
	}
	fail := func(err error) (bsoncore.Value, error) {
		if e.onError != nil {
			return e.onError.Eval(ctx)
		}
		return Missing, err
	}
	if !isString(s) {
		return fail(langerr.New(ErrConversion, "$dateFromString requires that 'dateString' be a string, found: %s with value %s", TypeName(s), value.Render(s)))
	}
	t, err := ParseDate(stringOf(s), format, loc, e.hasTZ)
	if err != nil {
		return fail(err)
	}
	return DateTime(t.UnixMilli()), nil
}

// ParseDate parses a date string as $dateFromString does: with format's
// specifiers, or, without one, ISO 8601 dates and times ("2017-02-08",
// "2017-02-08T12:10:40.787Z", "2017-02-08 12:10:40+05:30", ...). A
// string without an offset is in loc; one with an offset may not be
// combined with an explicit timezone.
func ParseDate(s, format string, loc *time.Location, explicitTZ bool) (time.Time, error) {
	p := &dateParser{s: s, year: math.MinInt, month: 1, day: 1}
	var err error
	if format == "" {
		err = p.iso()
	} else {
		err = p.formatted(format)
	}
	if err == nil && p.pos != len(s) {
		err = langerr.New(ErrConversion, "Error parsing date string '%s'; trailing data '%s'", s, s[p.pos:])
	}
	if err != nil {
		return time.Time{}, err
	}
	if p.year == math.MinInt && !p.iso8601 {
		return time.Time{}, langerr.New(ErrConversion, "Error parsing date string '%s'; an incomplete date/time string has been found, with elements missing: \"%s\"", s, s)
	}
	if p.hasOffset {
		if explicitTZ {
			return time.Time{}, langerr.New(ErrConversion, "you cannot pass in a date/time string with GMT offset together with a timezone argument")
		}
		loc = time.FixedZone("", p.offset)
	}
	if p.zone != nil {
		if explicitTZ {
			return time.Time{}, langerr.New(ErrConversion, "you cannot pass in a date/time string with time zone information ('%s') together with a timezone argument", s)
		}
		loc = p.zone
	}
	if p.iso8601 {
		return isoDate(p.isoYear, p.isoWeek, p.isoDay, p.hour, p.minute, p.second, p.milli, loc), nil
	}
	if p.month < 1 || p.month > 12 || p.day < 1 || p.day > daysIn(p.year, p.month) || p.hour > 23 || p.minute > 59 || p.second > 59 {
		return time.Time{}, langerr.New(ErrConversion, "Error parsing date string '%s'; The parsed date was invalid", s)
	}
	return time.Date(p.year, time.Month(p.month), p.day, p.hour, p.minute, p.second, p.milli*1e6, loc), nil
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// isoDate is the time of an ISO week date.
func isoDate(y, w, d, h, mi, s, ms int, loc *time.Location) time.Time {
	jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, 1-isoWeekday(jan4))
	day := monday.AddDate(0, 0, (w-1)*7+d-1)
	return time.Date(day.Year(), day.Month(), day.Day(), h, mi, s, ms*1e6, loc)
}

type dateParser struct {
	s                           string
	pos                         int
	year, month, day            int
	hour, minute, second, milli int
	hasOffset                   bool
	offset                      int
	zone                        *time.Location
	iso8601                     bool
	isoYear, isoWeek, isoDay    int
}

func (p *dateParser) fail() error {
	return langerr.New(ErrConversion, "Error parsing date string '%s'", p.s)
}

// digits reads between lo and hi digits.
func (p *dateParser) digits(lo, hi int) (int, error) {
	start := p.pos
	for p.pos < len(p.s) && p.pos-start < hi && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	if p.pos-start < lo {
		return 0, p.fail()
	}
	n, _ := strconv.Atoi(p.s[start:p.pos])
	return n, nil
}

func (p *dateParser) lit(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *dateParser) iso() error {
	var err error
	if p.year, err = p.digits(4, 4); err != nil {
		return err
	}
	sep := byte('-')
	if !p.lit('-') {
		if !p.lit('/') {
			return p.fail()
		}
		sep = '/'
	}
	if p.month, err = p.digits(1, 2); err != nil {
		return err
	}
	if !p.lit(sep) {
		return p.fail()
	}
	if p.day, err = p.digits(1, 2); err != nil {
		return err
	}
	if p.pos == len(p.s) {
		return nil
	}
	if !p.lit('T') && !p.lit(' ') {
		return p.fail()
	}
	if p.hour, err = p.digits(1, 2); err != nil {
		return err
	}
	if !p.lit(':') {
		return p.fail()
	}
	if p.minute, err = p.digits(2, 2); err != nil {
		return err
	}
	if p.lit(':') {
		if p.second, err = p.digits(2, 2); err != nil {
			return err
		}
		if p.lit('.') {
			start := p.pos
			f, err := p.digits(1, 9)
			if err != nil {
				return err
			}
			for n := p.pos - start; n < 3; n++ {
				f *= 10
			}
			for n := p.pos - start; n > 3; n-- {
				f /= 10
			}
			p.milli = f
		}
	}
	return p.zoneSuffix()
}

// zoneSuffix reads an optional Z, ±offset, " GMT" or Olson name.
func (p *dateParser) zoneSuffix() error {
	rest := strings.TrimLeft(p.s[p.pos:], " ")
	switch {
	case rest == "":
		p.pos = len(p.s)
		return nil
	case rest == "Z" || rest == "UTC" || rest == "GMT":
		p.hasOffset, p.offset, p.pos = true, 0, len(p.s)
		return nil
	case rest[0] == '+' || rest[0] == '-':
		off, ok := parseOffset(rest)
		if !ok {
			return p.fail()
		}
		p.hasOffset, p.offset, p.pos = true, off, len(p.s)
		return nil
	}
	loc, err := ParseTimezone(rest)
	if err != nil {
		return p.fail()
	}
	p.zone, p.pos = loc, len(p.s)
	return nil
}

func (p *dateParser) formatted(format string) error {
	var err error
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			if !p.lit(c) {
				return langerr.New(ErrConversion, "Error parsing date string '%s'; Format literal not found", p.s)
			}
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			p.year, err = p.digits(4, 4)
		case 'm':
			p.month, err = p.digits(1, 2)
		case 'd':
			p.day, err = p.digits(1, 2)
		case 'H':
			p.hour, err = p.digits(1, 2)
		case 'M':
			p.minute, err = p.digits(1, 2)
		case 'S':
			p.second, err = p.digits(1, 2)
		case 'L':
			start := p.pos
			p.milli, err = p.digits(1, 3)
			for n := p.pos - start; err == nil && n < 3; n++ {
				p.milli *= 10
			}
		case 'j':
			var yd int
			if yd, err = p.digits(1, 3); err == nil {
				p.month, p.day = 1, yd
				defer func() {
					t := time.Date(p.year, 1, yd, 0, 0, 0, 0, time.UTC)
					p.month, p.day = int(t.Month()), t.Day()
				}()
			}
		case 'G':
			p.iso8601 = true
			p.isoYear, err = p.digits(4, 4)
		case 'V':
			p.iso8601 = true
			p.isoWeek, err = p.digits(1, 2)
		case 'u':
			p.iso8601 = true
			p.isoDay, err = p.digits(1, 1)
		case 'b', 'B':
			err = p.monthName(format[i] == 'B')
		case 'z':
			start := p.pos
			if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
				p.pos++
				for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == ':') {
					p.pos++
				}
			}
			off, ok := parseOffset(p.s[start:p.pos])
			if !ok {
				return p.fail()
			}
			p.hasOffset, p.offset = true, off
		case 'Z':
			sign := 1
			if p.lit('-') {
				sign = -1
			} else if !p.lit('+') {
				return p.fail()
			}
			var mins int
			if mins, err = p.digits(1, 4); err == nil {
				p.hasOffset, p.offset = true, sign*mins*60
			}
		case '%':
			if !p.lit('%') {
				return p.fail()
			}
		default:
			return langerr.New(ErrFormatCharacter, "Invalid format character '%%%c' in format string", format[i])
		}
		if err != nil {
			return err
		}
	}
	if p.iso8601 {
		if p.isoWeek == 0 {
			p.isoWeek = 1
		}
		if p.isoDay == 0 {
			p.isoDay = 1
		}
	}
	return nil
}

func (p *dateParser) monthName(full bool) error {
	for i, n := range monthNames {
		if !full {
			n = n[:3]
		}
		if len(p.s)-p.pos >= len(n) && strings.EqualFold(p.s[p.pos:p.pos+len(n)], n) {
			p.month = i + 1
			p.pos += len(n)
			return nil
		}
	}
	return p.fail()
}

// dateToPartsExpr is $dateToParts.
type dateToPartsExpr struct {
	date, iso Expression
	tz        zoneArg
}

func dateToPartsOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"date", "timezone", "iso8601"}, "date")
	if err != nil {
		return nil, err
	}
	e := &dateToPartsExpr{}
	tz, ok := m["timezone"]
	if e.tz, err = c.compileZone(tz, ok); err != nil {
		return nil, err
	}
	if e.date, err = c.compile(m["date"]); err != nil {
		return nil, err
	}
	if v, ok := m["iso8601"]; ok {
		if e.iso, err = c.compile(v); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *dateToPartsExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	iso := false
	if e.iso != nil {
		v, err := e.iso.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(v) {
			return Null, nil
		}
		if v.Type != bsoncore.TypeBoolean {
			return Missing, langerr.New(ErrISO8601Type, "iso8601 must evaluate to a bool, found %s", TypeName(v))
		}
		iso = v.Boolean()
	}
	t, null, err := zonedTime(ctx, "$dateToParts", e.date, e.tz)
	if err != nil || null {
		return Null, err
	}
	i32 := func(n int) bsoncore.Value { return Int32(int32(n)) }
	tail := []Field{{"hour", i32(t.Hour())}, {"minute", i32(t.Minute())}, {"second", i32(t.Second())}, {"millisecond", i32(t.Nanosecond() / 1e6)}}
	if iso {
		y, w := t.ISOWeek()
		return Document(append([]Field{{"isoWeekYear", i32(y)}, {"isoWeek", i32(w)}, {"isoDayOfWeek", i32(isoWeekday(t))}}, tail...)), nil
	}
	return Document(append([]Field{{"year", i32(t.Year())}, {"month", i32(int(t.Month()))}, {"day", i32(t.Day())}}, tail...)), nil
}

// dateFromPartsExpr is $dateFromParts.
type dateFromPartsExpr struct {
	names []string
	parts []Expression
	iso   bool
	tz    zoneArg
}

var (
	naturalParts = []string{"year", "month", "day", "hour", "minute", "second", "millisecond"}
	isoParts     = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second", "millisecond"}
)

func dateFromPartsOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"year", "month", "day", "hour", "minute", "second", "millisecond",
		"isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"})
	if err != nil {
		return nil, err
	}
	e := &dateFromPartsExpr{}
	_, hasYear := m["year"]
	_, hasISO := m["isoWeekYear"]
	natural := hasYear
	for _, k := range []string{"month", "day"} {
		_, ok := m[k]
		natural = natural || ok
	}
	isoAny := hasISO
	for _, k := range []string{"isoWeek", "isoDayOfWeek"} {
		_, ok := m[k]
		isoAny = isoAny || ok
	}
	// MongoDB's order: a year first, then a year with ISO parts, then an
	// ISO week year with natural parts.
	switch {
	case !hasYear && !hasISO:
		return nil, langerr.New(ErrDatePartsNoYear, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case hasYear && isoAny:
		return nil, langerr.New(ErrDatePartsMixed, "$dateFromParts does not allow mixing natural dates with ISO dates")
	case hasISO && natural:
		return nil, langerr.New(ErrDatePartsMixedISO, "$dateFromParts does not allow mixing ISO dates with natural dates")
	}
	e.iso = hasISO
	e.names = naturalParts
	if e.iso {
		e.names = isoParts
	}
	for _, n := range e.names {
		v, ok := m[n]
		if !ok {
			e.parts = append(e.parts, nil)
			continue
		}
		x, err := c.compile(v)
		if err != nil {
			return nil, err
		}
		e.parts = append(e.parts, x)
	}
	tz, ok := m["timezone"]
	if e.tz, err = c.compileZone(tz, ok); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *dateFromPartsExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := []int{0, 1, 1, 0, 0, 0, 0}
	null := false
	for i, x := range e.parts {
		if x == nil {
			continue
		}
		v, err := x.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if isNullish(v) {
			null = true
			continue
		}
		n, ok := exactInt(v)
		if !isNumber(v) || !ok {
			return Missing, langerr.New(ErrDatePartType, "'%s' must evaluate to an integer, found %s with value %s", e.names[i], TypeName(v), value.Render(v))
		}
		if i == 0 {
			if n < 1 || n > 9999 {
				cat := ErrDatePartYear
				if e.names[i] == "isoWeekYear" {
					cat = ErrDatePartISOYear
				}
				return Missing, langerr.New(cat, "'%s' must evaluate to an integer in the range 1 to 9999, found %d", e.names[i], n)
			}
		} else if n < -32768 || n > 32767 {
			return Missing, langerr.New(ErrDatePartRange, "'%s' must evaluate to a value in the range [-32768, 32767]; value %d is not in range", e.names[i], n)
		}
		vals[i] = int(n)
	}
	loc, err := e.tz.eval(ctx)
	if err != nil {
		return Missing, err
	}
	if null || loc == nil {
		return Null, nil
	}
	var t time.Time
	if e.iso {
		jan4 := time.Date(vals[0], 1, 4, 0, 0, 0, 0, time.UTC)
		monday := jan4.AddDate(0, 0, 1-isoWeekday(jan4))
		day := monday.AddDate(0, 0, (vals[1]-1)*7+vals[2]-1)
		t = time.Date(day.Year(), day.Month(), day.Day(), vals[3], vals[4], vals[5], 0, loc)
	} else {
		t = time.Date(vals[0], time.Month(vals[1]), vals[2], vals[3], vals[4], vals[5], 0, loc)
	}
	return DateTime(t.UnixMilli() + int64(vals[6])), nil
}

// Time units of $dateAdd, $dateDiff and $dateTrunc.
var unitMillis = map[string]int64{
	"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 7 * 86_400_000,
}

// checkUnit reads the unit of $dateAdd, $dateSubtract, $dateDiff or
// $dateTrunc; MongoDB checks it for the first two apart, with other
// codes and words.
func checkUnit(name string, v bsoncore.Value) (string, error) {
	arith := name == "$dateAdd" || name == "$dateSubtract"
	if !isString(v) {
		if arith {
			return "", langerr.New(ErrDateArithUnitType, "%s requires 'unit' to be a string, but got %s", name, TypeName(v))
		}
		return "", langerr.New(ErrDateUnitType, "%s requires 'unit' to be a string, but got %s", name, TypeName(v))
	}
	u := stringOf(v)
	switch u {
	case "year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond":
		return u, nil
	}
	if arith {
		return "", langerr.FailedToParse("%s parameter 'unit' value parsing failed :: caused by :: unknown time unit value: %s", name, u)
	}
	return "", langerr.New(ErrDateUnitValue, "%s parameter 'unit' value cannot be recognized as a time unit: %s", name, u)
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "sunday": time.Sunday, "mon": time.Monday, "monday": time.Monday, "tue": time.Tuesday, "tuesday": time.Tuesday,
	"wed": time.Wednesday, "wednesday": time.Wednesday, "thu": time.Thursday, "thursday": time.Thursday,
	"fri": time.Friday, "friday": time.Friday, "sat": time.Saturday, "saturday": time.Saturday,
}

func checkStartOfWeek(name string, v bsoncore.Value) (time.Weekday, error) {
	if !isString(v) {
		return 0, langerr.New(ErrStartOfWeekType, "%s requires 'startOfWeek' to be a string, but got %s", name, TypeName(v))
	}
	d, ok := weekdays[strings.ToLower(stringOf(v))]
	if !ok {
		return 0, langerr.New(ErrStartOfWeekValue, "%s parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", name, stringOf(v))
	}
	return d, nil
}

// dateArithExpr is $dateAdd, $dateSubtract, $dateDiff and $dateTrunc.
type dateArithExpr struct {
	name                                   string
	date, date2, unit, amount, startOfWeek Expression
	tz                                     zoneArg
}

func dateArithOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	var allowed, required []string
	switch name {
	case "$dateAdd", "$dateSubtract":
		allowed, required = []string{"startDate", "unit", "amount", "timezone"}, []string{"startDate", "unit", "amount"}
	case "$dateDiff":
		allowed, required = []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, []string{"startDate", "endDate", "unit"}
	case "$dateTrunc":
		allowed, required = []string{"date", "unit", "binSize", "timezone", "startOfWeek"}, []string{"date", "unit"}
	}
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, notObjectError(name, arg)
	}
	m := map[string]bsoncore.Value{}
	for _, f := range Fields(arg) {
		ok := false
		for _, a := range allowed {
			ok = ok || a == f.Key
		}
		if !ok {
			return nil, unknownArgError(name, f.Key)
		}
		m[f.Key] = f.Val
	}
	for _, r := range required {
		if _, ok := m[r]; !ok {
			return nil, missingArgError(name, r)
		}
	}
	e := &dateArithExpr{name: name}
	var err error
	for k, dst := range map[string]*Expression{"startDate": &e.date, "date": &e.date, "endDate": &e.date2, "unit": &e.unit,
		"amount": &e.amount, "binSize": &e.amount, "startOfWeek": &e.startOfWeek} {
		if v, ok := m[k]; ok {
			if *dst, err = c.compile(v); err != nil {
				return nil, err
			}
		}
	}
	tz, ok := m["timezone"]
	if e.tz, err = c.compileZone(tz, ok); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *dateArithExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := map[string]bsoncore.Value{}
	for k, x := range map[string]Expression{"date": e.date, "date2": e.date2, "unit": e.unit, "amount": e.amount, "startOfWeek": e.startOfWeek} {
		if x == nil {
			continue
		}
		v, err := x.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		vals[k] = v
	}
	loc, err := e.tz.eval(ctx)
	if err != nil {
		return Missing, err
	}
	for k, v := range vals {
		if isNullish(v) && !(k == "startOfWeek" && e.name != "$dateDiff" && e.name != "$dateTrunc") {
			return Null, nil
		}
	}
	if loc == nil {
		return Null, nil
	}
	dateName := "startDate"
	if e.name == "$dateTrunc" {
		dateName = "date"
	}
	t, err := asTime(e.name, vals["date"])
	if err != nil {
		switch e.name {
		case "$dateAdd", "$dateSubtract":
			return Missing, langerr.New(ErrDateArithStart, "%s requires startDate to be convertible to a date", e.name)
		case "$dateDiff":
			return Missing, langerr.New(ErrDateDiffDate, "%s requires '%s' to be a date, but got %s", e.name, dateName, TypeName(vals["date"]))
		}
		return Missing, langerr.BadValue("%s requires '%s' to be a date, but got %s", e.name, dateName, TypeName(vals["date"]))
	}
	unit, err := checkUnit(e.name, vals["unit"])
	if err != nil {
		return Missing, err
	}
	sow := time.Sunday
	if v, ok := vals["startOfWeek"]; ok && unit == "week" {
		if sow, err = checkStartOfWeek(e.name, v); err != nil {
			return Missing, err
		}
	}
	t = t.In(loc)
	switch e.name {
	case "$dateAdd", "$dateSubtract":
		n, ok := exactInt(vals["amount"])
		if !isNumber(vals["amount"]) || !ok {
			return Missing, langerr.New(ErrDateArithAmount, "%s expects integer amount of time units", e.name)
		}
		if e.name == "$dateSubtract" {
			n = -n
		}
		return DateTime(DateAdd(t, unit, n).UnixMilli()), nil
	case "$dateDiff":
		t2, err := asTime(e.name, vals["date2"])
		if err != nil {
			return Missing, langerr.New(ErrDateDiffDate, "$dateDiff requires 'endDate' to be a date, but got %s", TypeName(vals["date2"]))
		}
		return Int64(DateDiff(t, t2.In(loc), unit, sow)), nil
	}
	bin := int64(1)
	if v, ok := vals["amount"]; ok {
		n, isInt := exactInt(v)
		if !isNumber(v) || !isInt {
			return Missing, langerr.New(ErrBinSizeType, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%s' of type %s", value.Render(v), TypeName(v))
		}
		if n <= 0 {
			return Missing, langerr.New(ErrBinSizePositive, "$dateTrunc requires 'binSize' to be greater than 0, but got value %d", n)
		}
		bin = n
	}
	return DateTime(DateTrunc(t, unit, bin, sow).UnixMilli()), nil
}

// DateAdd adds n units to t in t's location: calendar units keep the
// wall-clock time and clamp the day to the month's last.
func DateAdd(t time.Time, unit string, n int64) time.Time {
	months := int64(0)
	switch unit {
	case "year":
		months = 12 * n
	case "quarter":
		months = 3 * n
	case "month":
		months = n
	case "week":
		return t.AddDate(0, 0, int(7*n))
	case "day":
		return t.AddDate(0, 0, int(n))
	default:
		return t.Add(time.Duration(n*unitMillis[unit]) * time.Millisecond)
	}
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + months
	ny, nm := int(floorDiv(total, 12)), int(total-floorDiv(total, 12)*12)+1
	d = min(d, daysIn(ny, nm))
	return time.Date(ny, time.Month(nm), d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// localMillis is t's wall-clock time as milliseconds since the epoch.
func localMillis(t time.Time) int64 {
	_, off := t.Zone()
	return t.UnixMilli() + int64(off)*1000
}

// DateDiff counts the unit boundaries between a and b (both in the same
// location), as $dateDiff does.
func DateDiff(a, b time.Time, unit string, startOfWeek time.Weekday) int64 {
	switch unit {
	case "year":
		return int64(b.Year() - a.Year())
	case "quarter":
		return int64(b.Year()*4+(int(b.Month())-1)/3) - int64(a.Year()*4+(int(a.Month())-1)/3)
	case "month":
		return int64(b.Year()*12+int(b.Month())) - int64(a.Year()*12+int(a.Month()))
	case "week":
		da, db := dayNumber(a), dayNumber(b)
		// Align to the start of each one's week.
		da -= int64((int(a.Weekday()) - int(startOfWeek) + 7) % 7)
		db -= int64((int(b.Weekday()) - int(startOfWeek) + 7) % 7)
		return (db - da) / 7
	case "day":
		return dayNumber(b) - dayNumber(a)
	case "millisecond":
		return b.UnixMilli() - a.UnixMilli()
	}
	u := unitMillis[unit]
	return floorDiv(localMillis(b), u) - floorDiv(localMillis(a), u)
}

// dayNumber is the number of t's calendar day (in its location).
func dayNumber(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// DateTrunc truncates t (in its location) to a bin of bin units counted
// from 2000-01-01T00:00:00 local time (for weeks, the first startOfWeek
// on or after it).
func DateTrunc(t time.Time, unit string, bin int64, startOfWeek time.Weekday) time.Time {
	loc := t.Location()
	switch unit {
	case "year", "quarter", "month":
		per := map[string]int64{"year": 12, "quarter": 3, "month": 1}[unit] * bin
		m := int64(t.Year()-2000)*12 + int64(t.Month()-1)
		m = floorDiv(m, per) * per
		return time.Date(2000+int(floorDiv(m, 12)), time.Month(m-floorDiv(m, 12)*12+1), 1, 0, 0, 0, 0, loc)
	case "week", "day":
		ref := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
		days := int64(1)
		if unit == "week" {
			ref += int64((int(startOfWeek) - int(time.Saturday) + 7) % 7)
			days = 7
		}
		n := dayNumber(t) - ref
		n = floorDiv(n, days*bin) * days * bin
		d := time.Unix((ref+n)*86400, 0).UTC()
		return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	}
	u := unitMillis[unit] * bin
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	_, off := t.Zone()
	tl := ref + floorDiv(localMillis(t)-ref, u)*u
	return time.UnixMilli(tl - int64(off)*1000).In(loc)
}
