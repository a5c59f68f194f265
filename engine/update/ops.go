package update

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/parsecdb/parsec/engine/value"
)

// op is the operation at a leaf of an update's path trie.
type op interface {
	// apply computes a field's new value from its current one (nil when
	// the field is missing). next nil and remove false leave the field as
	// it is; remove deletes it (in an array: sets the element to null).
	apply(c *applyCtx, cur *node, f target) (next *node, remove bool, err error)
}

// target names the field an op applies to, for messages.
type target struct {
	name string // last path component
	path string // full path in the document
}

// parseFunc compiles one {path: arg} entry of an operator.
type parseFunc func(arg bsoncore.Value, e bsoncore.Element) (op, error)

// operators are the update operators by name. The table is never changed.
var operators = map[string]parseFunc{
	"$set":         func(v bsoncore.Value, _ bsoncore.Element) (op, error) { return setOp{v}, nil },
	"$setOnInsert": func(v bsoncore.Value, _ bsoncore.Element) (op, error) { return setOnInsertOp{v}, nil },
	"$unset":       func(bsoncore.Value, bsoncore.Element) (op, error) { return unsetOp{}, nil },
	"$inc":         parseArith("$inc", "increment"),
	"$mul":         parseArith("$mul", "multiply"),
	"$min":         func(v bsoncore.Value, _ bsoncore.Element) (op, error) { return minMaxOp{v, -1}, nil },
	"$max":         func(v bsoncore.Value, _ bsoncore.Element) (op, error) { return minMaxOp{v, 1}, nil },
	"$currentDate": parseCurrentDate,
	"$bit":         parseBit,
	"$rename":      parseRename,
	"$push":        parsePush,
	"$addToSet":    parseAddToSet,
	"$pop":         parsePop,
	"$pull":        parsePull,
	"$pullAll":     parsePullAll,
}

type setOp struct{ v bsoncore.Value }

func (o setOp) apply(_ *applyCtx, cur *node, _ target) (*node, bool, error) {
	if cur != nil && cur.obj == nil && cur.arr == nil && cur.raw.Type == o.v.Type && string(cur.raw.Data) == string(o.v.Data) {
		return nil, false, nil
	}
	return rawNode(o.v), false, nil
}

type setOnInsertOp struct{ v bsoncore.Value }

func (o setOnInsertOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	if !c.env.Insert {
		return nil, false, nil
	}
	return setOp(o).apply(c, cur, f)
}

type unsetOp struct{}

func (unsetOp) apply(_ *applyCtx, cur *node, _ target) (*node, bool, error) {
	return nil, cur != nil, nil
}

// minMaxOp is $min (sign -1) or $max (sign 1): the field takes the value
// when it is missing or the value compares below (above) it.
type minMaxOp struct {
	v    bsoncore.Value
	sign int
}

func (o minMaxOp) apply(c *applyCtx, cur *node, _ target) (*node, bool, error) {
	if cur == nil || value.CompareWith(o.v, cur.value(), c.u.coll)*o.sign > 0 {
		return rawNode(o.v), false, nil
	}
	return nil, false, nil
}

// arithOp is $inc or $mul.
type arithOp struct {
	name string
	v    bsoncore.Value
}

func parseArith(name, verb string) parseFunc {
	return func(v bsoncore.Value, e bsoncore.Element) (op, error) {
		if !isNumber(v) {
			return nil, errorf(ErrTypeMismatch, "Cannot %s with non-numeric argument: {%s}", verb, value.RenderElement(e.Key(), v))
		}
		return arithOp{name: name, v: v}, nil
	}
}

func (o arithOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	if cur == nil {
		if o.name == "$mul" {
			return rawNode(zeroLike(o.v)), false, nil
		}
		return rawNode(o.v), false, nil
	}
	cv := cur.value()
	if !isNumber(cv) {
		return nil, false, errorf(ErrTypeMismatch, "Cannot apply %s to a value of non-numeric type. %s has the field '%s' of non-numeric type %s", o.name, c.idString(), f.name, typeName(cv.Type))
	}
	var out bsoncore.Value
	var ok bool
	if o.name == "$mul" {
		out, ok = mul(cv, o.v)
	} else {
		out, ok = add(cv, o.v)
	}
	if !ok {
		return nil, false, errorf(ErrBadValue, "Failed to apply %s operations to current value (%s) for document %s", o.name, debugNumber(cv), c.idString())
	}
	return rawNode(out), false, nil
}

// currentDateOp sets a date or a timestamp from Env.
type currentDateOp struct{ timestamp bool }

func parseCurrentDate(v bsoncore.Value, e bsoncore.Element) (op, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return currentDateOp{}, nil
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := v.Document().Elements()
		var o currentDateOp
		found := false
		for _, el := range elems {
			if el.Key() != "$type" {
				return nil, errorf(ErrBadValue, "Unrecognized $currentDate option: %s", el.Key())
			}
			s, ok := el.Value().StringValueOK()
			if !ok || (s != "date" && s != "timestamp") {
				return nil, errorf(ErrBadValue, "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
			}
			o.timestamp, found = s == "timestamp", true
		}
		if !found {
			return nil, errorf(ErrBadValue, "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
		}
		return o, nil
	}
	return nil, errorf(ErrBadValue, "%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", typeName(v.Type))
}

func (o currentDateOp) apply(c *applyCtx, _ *node, _ target) (*node, bool, error) {
	if o.timestamp {
		ts := c.env.Timestamp
		return rawNode(bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, ts.T, ts.I)}), false, nil
	}
	return rawNode(bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, c.env.Now.UnixMilli())}), false, nil
}

// bitOp is $bit: and, or and xor, applied in the order given.
type bitOp struct {
	ops  []string
	args []bsoncore.Value
}

func parseBit(v bsoncore.Value, e bsoncore.Element) (op, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, errorf(ErrBadValue, "The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", typeName(v.Type))
	}
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return nil, errorf(ErrBadValue, "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
	}
	var o bitOp
	for _, el := range elems {
		k, x := el.Key(), el.Value()
		if k != "and" && k != "or" && k != "xor" {
			return nil, errorf(ErrBadValue, "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: {%s}", k, value.RenderElement(k, x))
		}
		if x.Type != bsoncore.TypeInt32 && x.Type != bsoncore.TypeInt64 {
			return nil, errorf(ErrBadValue, "The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: {%s}", typeName(x.Type), value.RenderElement(k, x))
		}
		o.ops = append(o.ops, k)
		o.args = append(o.args, x)
	}
	return o, nil
}

func (o bitOp) apply(c *applyCtx, cur *node, f target) (*node, bool, error) {
	acc := int32Value(0)
	if cur != nil {
		acc = cur.value()
		if acc.Type != bsoncore.TypeInt32 && acc.Type != bsoncore.TypeInt64 {
			return nil, false, errorf(ErrBadValue, "Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s", c.idString(), f.name, typeName(acc.Type))
		}
	}
	for i, name := range o.ops {
		x := o.args[i]
		a, b := asInt64(acc), asInt64(x)
		var r int64
		switch name {
		case "and":
			r = a & b
		case "or":
			r = a | b
		default:
			r = a ^ b
		}
		if acc.Type == bsoncore.TypeInt32 && x.Type == bsoncore.TypeInt32 {
			acc = int32Value(int32(r))
		} else {
			acc = int64Value(r)
		}
	}
	return rawNode(acc), false, nil
}
