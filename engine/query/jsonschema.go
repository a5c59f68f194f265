package query

import (
	"math"
	"unicode/utf8"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// schema is a compiled $jsonSchema node. Like MongoDB, keywords that
// constrain one type (minimum for numbers, minLength for strings, ...)
// ignore values of other types; only type/bsonType, enum and the
// combinators apply to every value.
type schema struct {
	types  *typeMatcher
	enum   []bsoncore.Value
	allOf  []*schema
	anyOf  []*schema
	oneOf  []*schema
	not    *schema
	checks []func(bsoncore.Value) bool // type-specific keywords

	// object keywords
	required     []string
	properties   []namedSchema
	patternProps []patternSchema
	additional   *schema // nil: anything allowed
	noAdditional bool

	// array keywords
	items           *schema
	itemList        []*schema
	additionalItems *schema
	noMoreItems     bool
}

type namedSchema struct {
	name string
	s    *schema
}

type patternSchema struct {
	re *expr.Regex
	s  *schema
}

type jsonSchemaPred struct{ root *schema }

func (p *jsonSchemaPred) match(doc bsoncore.Document, _ *state) bool {
	return p.root.valid(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

func compileJSONSchema(d bsoncore.Document) (predicate, error) {
	s, err := compileSchema(d, true)
	if err != nil {
		return nil, err
	}
	return &jsonSchemaPred{root: s}, nil
}

// jsonTypes maps JSON Schema's type names to BSON types.
var jsonTypes = map[string][]bsoncore.Type{
	"object":  {bsoncore.TypeEmbeddedDocument},
	"array":   {bsoncore.TypeArray},
	"boolean": {bsoncore.TypeBoolean},
	"string":  {bsoncore.TypeString},
	"null":    {bsoncore.TypeNull},
}

func schemaError(format string, args ...any) error {
	return langerr.New(langerr.ErrFailedToParse, format, args...)
}

func compileSchema(d bsoncore.Document, top bool) (*schema, error) {
	s := &schema{}
	var hasType, hasBSONType bool
	for e := range value.All(d) {
		k, v := e.Key(), e.Value()
		var err error
		switch k {
		case "type", "bsonType":
			if k == "type" {
				hasType = true
			} else {
				hasBSONType = true
			}
			if hasType && hasBSONType {
				return nil, schemaError("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
			}
			s.types, err = schemaTypes(k, v)
			if err == nil && top && s.types != nil && !s.types.matchValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument}, nil) {
				// MongoDB accepts it and matches nothing.
				s.types = &typeMatcher{}
			}
		case "required":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'required' must be an array, but found an element of type %s", value.TypeAlias(v.Type))
			}
			vals := arrayValues(arr)
			if len(vals) == 0 {
				return nil, schemaError("$jsonSchema keyword 'required' cannot be an empty array")
			}
			for _, x := range vals {
				if x.Type != bsoncore.TypeString {
					return nil, langerr.TypeMismatch("$jsonSchema keyword 'required' must be an array of strings, but found an element of type: %s", value.TypeAlias(x.Type))
				}
				s.required = append(s.required, stringOf(x))
			}
		case "properties":
			pd, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'properties' must be an object")
			}
			for pe := range value.All(pd) {
				sd, ok := pe.Value().DocumentOK()
				if !ok {
					return nil, langerr.TypeMismatch("Nested schema for $jsonSchema property '%s' must be an object", pe.Key())
				}
				sub, err := compileSchema(sd, false)
				if err != nil {
					return nil, err
				}
				s.properties = append(s.properties, namedSchema{pe.Key(), sub})
			}
		case "patternProperties":
			pd, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'patternProperties' must be an object")
			}
			for pe := range value.All(pd) {
				re, err := expr.CompileRegex(pe.Key(), "")
				if err != nil {
					return nil, err
				}
				sd, ok := pe.Value().DocumentOK()
				if !ok {
					return nil, langerr.TypeMismatch("Nested schema for $jsonSchema patternProperties '%s' must be an object", pe.Key())
				}
				sub, err := compileSchema(sd, false)
				if err != nil {
					return nil, err
				}
				s.patternProps = append(s.patternProps, patternSchema{re, sub})
			}
		case "additionalProperties", "additionalItems":
			switch v.Type {
			case bsoncore.TypeBoolean:
				if k == "additionalProperties" {
					s.noAdditional = !v.Boolean()
				} else {
					s.noMoreItems = !v.Boolean()
				}
			case bsoncore.TypeEmbeddedDocument:
				sub, err := compileSchema(v.Data, false)
				if err != nil {
					return nil, err
				}
				if k == "additionalProperties" {
					s.additional = sub
				} else {
					s.additionalItems = sub
				}
			default:
				return nil, langerr.TypeMismatch("$jsonSchema keyword '%s' must be either an object or a boolean, but got a %s", k, value.TypeAlias(v.Type))
			}
		case "enum":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'enum' must be an array, but found an element of type %s", value.TypeAlias(v.Type))
			}
			s.enum = arrayValues(arr)
			if len(s.enum) == 0 {
				return nil, schemaError("$jsonSchema keyword 'enum' cannot be an empty array")
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			err = s.compileNumeric(k, v, d)
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
			err = s.compileLength(k, v)
		case "pattern":
			if v.Type != bsoncore.TypeString {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'pattern' must be a string")
			}
			re, err := expr.CompileRegex(stringOf(v), "")
			if err != nil {
				return nil, err
			}
			s.checks = append(s.checks, func(x bsoncore.Value) bool {
				return !isStringType(x) || re.MatchString(stringOf(x))
			})
		case "items":
			switch v.Type {
			case bsoncore.TypeEmbeddedDocument:
				s.items, err = compileSchema(v.Data, false)
			case bsoncore.TypeArray:
				for _, x := range arrayValues(v.Data) {
					xd, ok := x.DocumentOK()
					if !ok {
						return nil, langerr.TypeMismatch("$jsonSchema keyword 'items' requires that each element of the array is an object, but found a %s", value.TypeAlias(x.Type))
					}
					sub, err := compileSchema(xd, false)
					if err != nil {
						return nil, err
					}
					s.itemList = append(s.itemList, sub)
				}
			default:
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'items' must be an array or an object, not %s", value.TypeAlias(v.Type))
			}
		case "uniqueItems":
			if v.Type != bsoncore.TypeBoolean {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'uniqueItems' must be a boolean")
			}
			if v.Boolean() {
				s.checks = append(s.checks, uniqueItems)
			}
		case "allOf", "anyOf", "oneOf":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword '%s' must be an array", k)
			}
			vals := arrayValues(arr)
			if len(vals) == 0 {
				return nil, schemaError("$jsonSchema keyword '%s' must be a non-empty array", k)
			}
			var subs []*schema
			for _, x := range vals {
				xd, ok := x.DocumentOK()
				if !ok {
					return nil, langerr.TypeMismatch("$jsonSchema keyword '%s' must be an array of objects, but found an element of type %s", k, value.TypeAlias(x.Type))
				}
				sub, err := compileSchema(xd, false)
				if err != nil {
					return nil, err
				}
				subs = append(subs, sub)
			}
			switch k {
			case "allOf":
				s.allOf = subs
			case "anyOf":
				s.anyOf = subs
			default:
				s.oneOf = subs
			}
		case "not":
			nd, ok := v.DocumentOK()
			if !ok {
				return nil, langerr.TypeMismatch("$jsonSchema keyword 'not' must be an object, but found an element of type %s", value.TypeAlias(v.Type))
			}
			s.not, err = compileSchema(nd, false)
		case "title", "description":
			if v.Type != bsoncore.TypeString {
				return nil, langerr.TypeMismatch("$jsonSchema keyword '%s' must be of type string", k)
			}
		case "dependencies", "encrypt", "encryptMetadata":
			return nil, langerr.New(langerr.ErrNotImplemented, "$jsonSchema keyword '%s' is not supported by Parsec yet", k)
		case "$ref", "$schema", "default", "definitions", "format", "id":
			return nil, schemaError("$jsonSchema keyword '%s' is not currently supported", k)
		default:
			return nil, schemaError("Unknown $jsonSchema keyword: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func schemaTypes(k string, v bsoncore.Value) (*typeMatcher, error) {
	m := &typeMatcher{}
	add := func(x bsoncore.Value) error {
		if x.Type != bsoncore.TypeString {
			return langerr.TypeMismatch("$jsonSchema keyword '%s' must be either a string or an array of strings", k)
		}
		name := stringOf(x)
		if name == "number" {
			m.number = true
			return nil
		}
		if k == "type" {
			if name == "integer" {
				return langerr.BadValue("$jsonSchema type 'integer' is not currently supported.")
			}
			ts, ok := jsonTypes[name]
			if !ok {
				return langerr.BadValue("Unknown type name alias: %s", name)
			}
			m.types = append(m.types, ts...)
			return nil
		}
		t, ok := value.TypeByAlias(name)
		if !ok {
			return langerr.BadValue("Unknown type name alias: %s", name)
		}
		m.types = append(m.types, t)
		return nil
	}
	if v.Type == bsoncore.TypeArray {
		for _, x := range arrayValues(v.Data) {
			if err := add(x); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return m, add(v)
}

func isStringType(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeString || v.Type == bsoncore.TypeSymbol
}

func (s *schema) compileNumeric(k string, v bsoncore.Value, d bsoncore.Document) error {
	if !isNumberType(v.Type) && !(v.Type == bsoncore.TypeBoolean && (k == "exclusiveMinimum" || k == "exclusiveMaximum")) {
		return langerr.TypeMismatch("$jsonSchema keyword '%s' must be a number", k)
	}
	switch k {
	case "exclusiveMinimum", "exclusiveMaximum":
		if v.Type != bsoncore.TypeBoolean {
			return langerr.TypeMismatch("$jsonSchema keyword '%s' must be a boolean", k)
		}
		bound := "minimum"
		if k == "exclusiveMaximum" {
			bound = "maximum"
		}
		if _, err := d.LookupErr(bound); err != nil {
			return schemaError("$jsonSchema keyword '%s' must be a present if %s is present", bound, k)
		}
		return nil
	case "multipleOf":
		if value.Float(v) <= 0 {
			return schemaError("$jsonSchema keyword 'multipleOf' must have a positive value")
		}
		s.checks = append(s.checks, func(x bsoncore.Value) bool {
			if !isNumberType(x.Type) {
				return true
			}
			r := math.Mod(value.Float(x), value.Float(v))
			return r == 0
		})
		return nil
	}
	exclusive := false
	if k == "minimum" {
		if e, err := d.LookupErr("exclusiveMinimum"); err == nil && e.Type == bsoncore.TypeBoolean {
			exclusive = e.Boolean()
		}
	} else if e, err := d.LookupErr("exclusiveMaximum"); err == nil && e.Type == bsoncore.TypeBoolean {
		exclusive = e.Boolean()
	}
	bound := bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
	s.checks = append(s.checks, func(x bsoncore.Value) bool {
		if !isNumberType(x.Type) {
			return true
		}
		if isNaN(x) {
			return false
		}
		c := value.Compare(x, bound)
		if k == "minimum" {
			return c > 0 || (c == 0 && !exclusive)
		}
		return c < 0 || (c == 0 && !exclusive)
	})
	return nil
}

func (s *schema) compileLength(k string, v bsoncore.Value) error {
	if !isNumberType(v.Type) {
		return langerr.TypeMismatch("$jsonSchema keyword '%s' must be a number", k)
	}
	n, err := wholeNumber(k, v)
	if err != nil || n < 0 {
		return schemaError("$jsonSchema keyword '%s' must be a non-negative integral value", k)
	}
	switch k {
	case "minLength", "maxLength":
		s.checks = append(s.checks, func(x bsoncore.Value) bool {
			if !isStringType(x) {
				return true
			}
			l := int64(utf8.RuneCountInString(stringOf(x)))
			return (k == "minLength" && l >= n) || (k == "maxLength" && l <= n)
		})
	case "minItems", "maxItems":
		s.checks = append(s.checks, func(x bsoncore.Value) bool {
			if x.Type != bsoncore.TypeArray {
				return true
			}
			l := int64(countElements(x.Data))
			return (k == "minItems" && l >= n) || (k == "maxItems" && l <= n)
		})
	default:
		s.checks = append(s.checks, func(x bsoncore.Value) bool {
			if x.Type != bsoncore.TypeEmbeddedDocument {
				return true
			}
			l := int64(countElements(x.Data))
			return (k == "minProperties" && l >= n) || (k == "maxProperties" && l <= n)
		})
	}
	return nil
}

func uniqueItems(x bsoncore.Value) bool {
	if x.Type != bsoncore.TypeArray {
		return true
	}
	vals := arrayValues(x.Data)
	for i := range vals {
		for j := i + 1; j < len(vals); j++ {
			if value.TypeRank(vals[i].Type) == value.TypeRank(vals[j].Type) && value.Compare(vals[i], vals[j]) == 0 {
				return false
			}
		}
	}
	return true
}

// valid reports whether v satisfies the schema.
func (s *schema) valid(v bsoncore.Value) bool {
	if s.types != nil && !s.types.matchValue(v, nil) {
		return false
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			if equalForMatch(v, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, c := range s.checks {
		if !c(v) {
			return false
		}
	}
	for _, sub := range s.allOf {
		if !sub.valid(v) {
			return false
		}
	}
	if s.anyOf != nil {
		ok := false
		for _, sub := range s.anyOf {
			if sub.valid(v) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if s.oneOf != nil {
		n := 0
		for _, sub := range s.oneOf {
			if sub.valid(v) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	if s.not != nil && s.not.valid(v) {
		return false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return s.validObject(v.Data)
	case bsoncore.TypeArray:
		return s.validArray(v.Data)
	}
	return true
}

func (s *schema) validObject(doc bsoncore.Document) bool {
	for _, r := range s.required {
		if _, ok := lookupField(doc, r); !ok {
			return false
		}
	}
	for _, p := range s.properties {
		if x, ok := lookupField(doc, p.name); ok && !p.s.valid(x) {
			return false
		}
	}
	if len(s.patternProps) == 0 && s.additional == nil && !s.noAdditional {
		return true
	}
	for e := range value.All(doc) {
		k := e.Key()
		known := false
		for _, p := range s.properties {
			known = known || p.name == k
		}
		for _, pp := range s.patternProps {
			if pp.re.MatchString(k) {
				known = true
				if !pp.s.valid(e.Value()) {
					return false
				}
			}
		}
		if known {
			continue
		}
		if s.noAdditional {
			return false
		}
		if s.additional != nil && !s.additional.valid(e.Value()) {
			return false
		}
	}
	return true
}

func (s *schema) validArray(arr []byte) bool {
	vals := arrayValues(arr)
	if s.items != nil {
		for _, x := range vals {
			if !s.items.valid(x) {
				return false
			}
		}
	}
	if s.itemList != nil {
		for i, x := range vals {
			switch {
			case i < len(s.itemList):
				if !s.itemList[i].valid(x) {
					return false
				}
			case s.noMoreItems:
				return false
			case s.additionalItems != nil && !s.additionalItems.valid(x):
				return false
			}
		}
	}
	return true
}
