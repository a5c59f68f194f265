package expr

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func typeFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return String(TypeName(a[0])), nil
}

func isNumberFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return Bool(isNumber(a[0])), nil
}

// toFn is $toInt, $toString, ...: $convert without onError and onNull.
func toFn(target string) evalFn {
	return func(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
		if isNullish(a[0]) {
			return Null, nil
		}
		return convertTo(a[0], target)
	}
}

type convertExpr struct {
	input, to, onError, onNull Expression
}

func convertOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"input", "to", "onError", "onNull"}, "input", "to")
	if err != nil {
		return nil, err
	}
	e := &convertExpr{}
	if e.input, err = c.compile(m["input"]); err != nil {
		return nil, err
	}
	if e.to, err = c.compile(m["to"]); err != nil {
		return nil, err
	}
	if v, ok := m["onError"]; ok {
		if e.onError, err = c.compile(v); err != nil {
			return nil, err
		}
	}
	if v, ok := m["onNull"]; ok {
		if e.onNull, err = c.compile(v); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *convertExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	to, err := e.to.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if isNullish(to) {
		return Null, nil
	}
	var target string
	switch {
	case isString(to):
		target = stringOf(to)
		if _, ok := value.TypeByAlias(target); !ok {
			return Missing, langerr.BadValue("Unknown type name: %s", target)
		}
	case isNumber(to):
		n, ok := exactInt(to)
		t, known := value.TypeByCode(n)
		if !ok || !known {
			return Missing, langerr.BadValue("In $convert, numeric 'to' argument is not an integer")
		}
		target = value.TypeAlias(t)
	default:
		return Missing, langerr.BadValue("$convert's 'to' argument must be a string or number, but is %s", TypeName(to))
	}
	if isNullish(in) {
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	}
	out, err := convertTo(in, target)
	if err != nil && e.onError != nil {
		return e.onError.Eval(ctx)
	}
	return out, err
}

func conversionError(v bsoncore.Value, target string) error {
	return langerr.New(ErrConversion, "Unsupported conversion from %s to %s in $convert with no onError value", TypeName(v), target)
}

// convertTo converts a non-null value to the type named target.
func convertTo(v bsoncore.Value, target string) (bsoncore.Value, error) {
	if TypeName(v) == target && target != "string" {
		return v, nil
	}
	switch target {
	case "double":
		switch {
		case isNumber(v):
			return Double(value.Float(v)), nil
		case v.Type == bsoncore.TypeBoolean:
			return Double(b2f(v.Boolean())), nil
		case v.Type == bsoncore.TypeDateTime:
			return Double(float64(v.DateTime())), nil
		case isString(v):
			f, err := strconv.ParseFloat(strings.TrimSpace(stringOf(v)), 64)
			if err != nil && !isRangeErr(err) {
				return Missing, langerr.New(ErrConversion, "Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", stringOf(v))
			}
			return Double(f), nil
		}
	case "int", "long":
		limit := float64(math.MaxInt32)
		if target == "long" {
			limit = 9.223372036854775807e18
		}
		var n int64
		switch {
		case v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64:
			n = asInt(v)
		case isNumber(v):
			f := math.Trunc(value.Float(v))
			if math.IsNaN(f) {
				return Missing, langerr.New(ErrConversion, "Attempt to convert NaN value to integer type in $convert with no onError value")
			}
			if f > limit || f < -limit-1 {
				return Missing, langerr.New(ErrConversion, "Conversion would overflow target type in $convert with no onError value: %s", value.Render(v))
			}
			n = int64(f)
		case v.Type == bsoncore.TypeBoolean:
			n = int64(b2f(v.Boolean()))
		case v.Type == bsoncore.TypeDateTime && target == "long":
			n = v.DateTime()
		case isString(v):
			i, err := strconv.ParseInt(stringOf(v), 10, 64)
			if err != nil {
				return Missing, langerr.New(ErrConversion, "Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", stringOf(v))
			}
			n = i
		default:
			return Missing, conversionError(v, target)
		}
		if target == "int" {
			if n != int64(int32(n)) {
				return Missing, langerr.New(ErrConversion, "Conversion would overflow target type in $convert with no onError value: %s", value.Render(v))
			}
			return Int32(int32(n)), nil
		}
		return Int64(n), nil
	case "decimal":
		switch {
		case isNumber(v):
			return toDecimal(v), nil
		case v.Type == bsoncore.TypeBoolean:
			return toDecimal(Int32(int32(b2f(v.Boolean())))), nil
		case v.Type == bsoncore.TypeDateTime:
			return toDecimal(Int64(v.DateTime())), nil
		case isString(v):
			d, err := bson.ParseDecimal128(stringOf(v))
			if err != nil {
				return Missing, langerr.New(ErrConversion, "Failed to parse number '%s' in $convert with no onError value: Failed to parse string to decimal", stringOf(v))
			}
			return Decimal(d), nil
		}
	case "bool":
		switch v.Type {
		case bsoncore.TypeBoolean:
			return v, nil
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
			return Bool(Truthy(v)), nil
		default:
			return Bool(true), nil
		}
	case "string":
		switch {
		case isString(v):
			return String(stringOf(v)), nil
		case v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64:
			return String(strconv.FormatInt(asInt(v), 10)), nil
		case v.Type == bsoncore.TypeDouble:
			return String(formatDouble(v.Double())), nil
		case v.Type == bsoncore.TypeDecimal128:
			return String(bson.NewDecimal128(v.Decimal128()).String()), nil
		case v.Type == bsoncore.TypeBoolean:
			return String(strconv.FormatBool(v.Boolean())), nil
		case v.Type == bsoncore.TypeObjectID:
			oid := v.ObjectID()
			return String(hex.EncodeToString(oid[:])), nil
		case v.Type == bsoncore.TypeDateTime:
			return String(time.UnixMilli(v.DateTime()).UTC().Format("2006-01-02T15:04:05.000Z")), nil
		}
	case "date":
		switch {
		case v.Type == bsoncore.TypeInt64 || v.Type == bsoncore.TypeDouble || v.Type == bsoncore.TypeDecimal128:
			return DateTime(truncInt64(value.Float(v))), nil
		case v.Type == bsoncore.TypeObjectID:
			oid := v.ObjectID()
			secs := int64(oid[0])<<24 | int64(oid[1])<<16 | int64(oid[2])<<8 | int64(oid[3])
			return DateTime(secs * 1000), nil
		case v.Type == bsoncore.TypeTimestamp:
			t, _ := v.Timestamp()
			return DateTime(int64(t) * 1000), nil
		case isString(v):
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
				if t, err := time.Parse(layout, stringOf(v)); err == nil {
					return DateTime(t.UnixMilli()), nil
				}
			}
			return Missing, langerr.New(ErrConversion, "Error parsing date string '%s'", stringOf(v))
		}
	case "objectId":
		if isString(v) {
			b, err := hex.DecodeString(stringOf(v))
			if err != nil || len(b) != 12 {
				return Missing, langerr.New(ErrConversion, "Failed to parse objectId '%s' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found %d", stringOf(v), len(stringOf(v)))
			}
			var oid [12]byte
			copy(oid[:], b)
			return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}, nil
		}
	}
	return Missing, conversionError(v, target)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func mergeObjectsFn(_ string, args []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	var fields []Field
	for _, a := range args {
		if isNullish(a) {
			continue
		}
		if a.Type != bsoncore.TypeEmbeddedDocument {
			return Missing, langerr.BadValue("$mergeObjects requires object inputs, but input %s is of type %s", value.Render(a), TypeName(a))
		}
	next:
		for _, f := range Fields(a) {
			for i := range fields {
				if fields[i].Key == f.Key {
					fields[i].Val = f.Val
					continue next
				}
			}
			fields = append(fields, f)
		}
	}
	return Document(fields), nil
}

type getFieldExpr struct {
	field string
	input Expression // nil: $$CURRENT
}

func (e *getFieldExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ctx.Root}
	if ctx.Current != nil {
		in.Data = ctx.Current
	}
	if e.input != nil {
		v, err := e.input.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		in = v
	}
	if isNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, nil
	}
	v, _ := lookup(in.Data, e.field)
	return v, nil
}

func getFieldOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	// Any argument but an object of named arguments (an expression
	// object included) is the field, of $$CURRENT.
	m := map[string]bsoncore.Value{"field": arg}
	if fs := Fields(arg); arg.Type == bsoncore.TypeEmbeddedDocument && (len(fs) == 0 || !strings.HasPrefix(fs[0].Key, "$")) {
		var err error
		if m, err = namedArgs(name, arg, []string{"field", "input"}, "field"); err != nil {
			return nil, err
		}
	}
	var err error
	f, constant := constantArg(m["field"])
	if !constant {
		return nil, langerr.New(ErrGetFieldNonConstant, "$getField requires 'field' to evaluate to a constant, but got a non-constant argument")
	}
	if !isString(f) {
		return nil, langerr.New(ErrGetFieldFieldType, "$getField requires 'field' to evaluate to type String, but got %s", TypeName(f))
	}
	e := &getFieldExpr{field: stringOf(f)}
	if in, ok := m["input"]; ok {
		if e.input, err = c.compile(in); err != nil {
			return nil, err
		}
	}
	return e, nil
}
