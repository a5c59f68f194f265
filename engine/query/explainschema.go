package query

import (
	"slices"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Why a document breaks a $jsonSchema, rule by rule, in the order MongoDB
// checks a schema's keywords: string and number keywords, array keywords,
// object keywords (properties, patternProperties and additionalProperties,
// required, minProperties, maxProperties), the combinators and enum, then
// the type. A keyword that constrains one type (minimum for numbers, ...)
// only speaks for a value of that type; a missing value only breaks
// required.

// explainSchemaTop is the {operatorName: "$jsonSchema", ...} detail of a
// document that breaks schema.
func (x *explainer) explainSchemaTop(schema bsoncore.Document, doc bsoncore.Document) bsoncore.Document {
	var o obj
	o.str("operatorName", "$jsonSchema")
	if ts := statedTypes(schema); ts != nil && !ts.matchValue(docValue(nil), nil) {
		// A top-level schema for something other than an object matches
		// no document.
		o.doc("specifiedAs", docOf("$jsonSchema", docValue(schema)))
		o.str("reason", "expression always evaluates to false")
		return o.build()
	}
	appendAnnotations(&o, schema)
	o.arr("schemaRulesNotSatisfied", x.schemaRules(schema, docValue(doc), true, true).build())
	return o.build()
}

// statedTypes is the schema's type or bsonType keyword, nil when it has
// none (or a bad one: the schema compiled, so it has not).
func statedTypes(schema bsoncore.Document) *typeMatcher {
	for _, k := range []string{"type", "bsonType"} {
		if v, ok := lookupField(schema, k); ok {
			ts, err := schemaTypes(k, v)
			if err != nil {
				return nil
			}
			return ts
		}
	}
	return nil
}

// singleType is the one type ts names ("number" stands for int), if one.
func singleType(ts *typeMatcher) (bsoncore.Type, bool) {
	switch {
	case ts.number && len(ts.types) == 0:
		return bsoncore.TypeInt32, true
	case !ts.number && len(ts.types) == 1:
		return ts.types[0], true
	}
	return 0, false
}

func isObjectType(t bsoncore.Type) bool { return t == bsoncore.TypeEmbeddedDocument }
func isArrayType(t bsoncore.Type) bool  { return t == bsoncore.TypeArray }
func isNumeric(t bsoncore.Type) bool    { return isNumberType(t) }
func isString(t bsoncore.Type) bool     { return t == bsoncore.TypeString || t == bsoncore.TypeSymbol }

// subset is the document of schema's keywords named in keys, in schema's
// order: a keyword's specifiedAs, or a schema of it alone.
func subset(schema bsoncore.Document, keys ...string) bsoncore.Document {
	var o obj
	for e := range value.All(schema) {
		if slices.Contains(keys, e.Key()) {
			o.raw(e)
		}
	}
	return o.build()
}

// schemaValid reports whether v satisfies schema (which compiled once
// already, as part of the validator).
func schemaValid(schema bsoncore.Document, v bsoncore.Value, top bool) bool {
	s, err := compileSchema(schema, top)
	return err == nil && s.valid(v)
}

// appendAnnotations copies a schema's title and description.
func appendAnnotations(o *obj, schema bsoncore.Document) {
	for e := range value.All(schema) {
		if (e.Key() == "title" || e.Key() == "description") && e.Value().Type == bsoncore.TypeString {
			o.raw(e)
		}
	}
}

// schemaRules lists the rules of schema that v (present or not; the
// document itself when top) breaks.
func (x *explainer) schemaRules(schema bsoncore.Document, v bsoncore.Value, present, top bool) *arr {
	rules := &arr{}
	ts := statedTypes(schema)
	// applies: a keyword for values of the types r accepts speaks for v.
	applies := func(r func(bsoncore.Type) bool) bool {
		if !present || !r(v.Type) {
			return false
		}
		if ts != nil {
			if st, ok := singleType(ts); ok && !r(st) {
				return false // the schema's type rules the keyword out
			}
		}
		return true
	}
	has := func(k string) bool { _, ok := lookupField(schema, k); return ok }
	fails := func(keys ...string) bool { return !schemaValid(subset(schema, keys...), v, false) }
	leaf := func(k string, spec bsoncore.Document, reason string, more func(*obj)) {
		var o obj
		o.str("operatorName", k)
		o.doc("specifiedAs", spec)
		o.str("reason", reason)
		if more != nil {
			more(&o)
		}
		rules.doc(o.build())
	}
	withValue := func(o *obj) { o.val("consideredValue", v) }

	if !top {
		for _, k := range []string{"pattern", "maxLength", "minLength"} {
			if has(k) && applies(isString) && fails(k) {
				reason := "specified string length was not satisfied"
				if k == "pattern" {
					reason = "regular expression did not match"
				}
				leaf(k, subset(schema, k), reason, withValue)
			}
		}
		if has("multipleOf") && applies(isNumeric) && fails("multipleOf") {
			leaf("multipleOf", subset(schema, "multipleOf"), "considered value is not a multiple of the specified value", withValue)
		}
		for _, k := range []string{"maximum", "minimum"} {
			excl := "exclusiveMaximum"
			if k == "minimum" {
				excl = "exclusiveMinimum"
			}
			if has(k) && applies(isNumeric) && fails(k, excl) {
				spec := subset(schema, k)
				if e, ok := lookupField(schema, excl); ok && e.Type == bsoncore.TypeBoolean && e.Boolean() {
					bound, _ := lookupField(schema, k)
					var o obj
					o.val(k, bound)
					o.val(excl, boolValue(true))
					spec = o.build()
				}
				leaf(k, spec, "comparison failed", withValue)
			}
		}
		if applies(isArrayType) {
			x.arrayRules(schema, v, rules, fails, leaf)
		}
	}
	if top || applies(isObjectType) {
		x.objectRules(schema, v.Data, rules, fails, leaf)
	}
	if present {
		x.logicalRules(schema, v, top, rules)
		if e, ok := lookupField(schema, "enum"); ok && !enumHas(e, v) {
			leaf("enum", subset(schema, "enum"), "value was not found in enum", withValue)
		}
	}
	if !top && present && ts != nil && !ts.matchValue(v, nil) {
		k := "bsonType"
		if has("type") {
			k = "type"
		}
		leaf(k, subset(schema, k), "type did not match", func(o *obj) {
			o.val("consideredValue", v)
			o.str("consideredType", value.TypeAlias(v.Type))
		})
	}
	return rules
}

func enumHas(e bsoncore.Value, v bsoncore.Value) bool {
	for _, x := range arrayValues(e.Data) {
		if equalForMatch(v, x) {
			return true
		}
	}
	return false
}

// arrayRules are minItems, maxItems, uniqueItems, items and
// additionalItems, for an array v.
func (x *explainer) arrayRules(schema bsoncore.Document, v bsoncore.Value, rules *arr, fails func(...string) bool, leaf func(string, bsoncore.Document, string, func(*obj))) {
	elems := arrayValues(v.Data)
	for _, k := range []string{"minItems", "maxItems"} {
		if _, ok := lookupField(schema, k); ok && fails(k) {
			leaf(k, subset(schema, k), "array did not match specified length", func(o *obj) {
				o.val("consideredValue", v)
				o.int("numberOfItems", len(elems))
			})
		}
	}
	if u, ok := lookupField(schema, "uniqueItems"); ok && u.Type == bsoncore.TypeBoolean && u.Boolean() && fails("uniqueItems") {
		leaf("uniqueItems", subset(schema, "uniqueItems"), "found a duplicate item", func(o *obj) {
			o.val("consideredValue", v)
			if d, ok := firstDuplicate(elems); ok {
				o.val("duplicatedValue", d)
			}
		})
	}
	items, hasItems := lookupField(schema, "items")
	listed := -1 // how many items the items array describes
	switch {
	case hasItems && items.Type == bsoncore.TypeEmbeddedDocument:
		if d, ok := x.firstFailingItem(items.Data, elems, 0, "items", "At least one item did not match the sub-schema"); ok {
			rules.doc(d)
		}
	case hasItems && items.Type == bsoncore.TypeArray:
		subs := arrayValues(items.Data)
		listed = len(subs)
		var failing arr
		for i, sub := range subs {
			if i >= len(elems) || schemaValid(sub.Data, elems[i], false) {
				continue
			}
			var o obj
			o.int("itemIndex", i)
			o.arr("details", x.schemaRules(sub.Data, elems[i], true, false).build())
			failing.doc(o.build())
		}
		if failing.len() > 0 {
			var o obj
			o.str("operatorName", "items")
			o.arr("details", failing.build())
			rules.doc(o.build())
		}
	}
	more, ok := lookupField(schema, "additionalItems")
	if !ok || listed < 0 || len(elems) <= listed {
		return
	}
	switch more.Type {
	case bsoncore.TypeBoolean:
		if !more.Boolean() {
			leaf("additionalItems", subset(schema, "additionalItems"), "found additional items", func(o *obj) {
				o.arr("additionalItems", valueArray(elems[listed:]))
			})
		}
	case bsoncore.TypeEmbeddedDocument:
		if d, ok := x.firstFailingItem(more.Data, elems, listed, "additionalItems", "At least one additional item did not match the sub-schema"); ok {
			rules.doc(d)
		}
	}
}

// firstFailingItem explains the first element from index from on that
// breaks sub, for the keyword k.
func (x *explainer) firstFailingItem(sub bsoncore.Document, elems []bsoncore.Value, from int, k, reason string) (bsoncore.Document, bool) {
	for i := from; i < len(elems); i++ {
		if schemaValid(sub, elems[i], false) {
			continue
		}
		var o obj
		o.str("operatorName", k)
		appendAnnotations(&o, sub)
		o.str("reason", reason)
		o.int("itemIndex", i)
		o.arr("details", x.schemaRules(sub, elems[i], true, false).build())
		return o.build(), true
	}
	return nil, false
}

func firstDuplicate(elems []bsoncore.Value) (bsoncore.Value, bool) {
	for j := 1; j < len(elems); j++ {
		for i := 0; i < j; i++ {
			if value.TypeRank(elems[i].Type) == value.TypeRank(elems[j].Type) && value.Compare(elems[i], elems[j]) == 0 {
				return elems[j], true
			}
		}
	}
	return bsoncore.Value{}, false
}

// objectRules are properties, patternProperties and
// additionalProperties, required, minProperties and maxProperties, for
// an object doc.
func (x *explainer) objectRules(schema, doc bsoncore.Document, rules *arr, fails func(...string) bool, leaf func(string, bsoncore.Document, string, func(*obj))) {
	props, hasProps := lookupField(schema, "properties")
	if hasProps {
		var failing arr
		for p := range value.All(props.Data) {
			sub := p.Value().Data
			pv, ok := lookupField(doc, p.Key())
			if !ok || schemaValid(sub, pv, false) {
				continue
			}
			details := x.schemaRules(sub, pv, true, false)
			if details.len() == 0 {
				continue
			}
			var o obj
			o.str("propertyName", p.Key())
			appendAnnotations(&o, sub)
			o.arr("details", details.build())
			failing.doc(o.build())
		}
		if failing.len() > 0 {
			var o obj
			o.str("operatorName", "properties")
			o.arr("propertiesNotSatisfied", failing.build())
			rules.doc(o.build())
		}
	}
	x.allowedPropertiesRules(schema, doc, props, hasProps, rules)
	if req, ok := lookupField(schema, "required"); ok {
		var missingNames []string
		for _, n := range arrayValues(req.Data) {
			name := stringOf(n)
			if _, ok := lookupField(doc, name); !ok && !slices.Contains(missingNames, name) {
				missingNames = append(missingNames, name)
			}
		}
		if len(missingNames) > 0 {
			slices.Sort(missingNames)
			var o obj
			o.str("operatorName", "required")
			o.doc("specifiedAs", subset(schema, "required"))
			o.arr("missingProperties", stringArray(missingNames))
			rules.doc(o.build())
		}
	}
	for _, k := range []string{"minProperties", "maxProperties"} {
		if _, ok := lookupField(schema, k); ok && !schemaValid(subset(schema, k), docValue(doc), false) {
			leaf(k, subset(schema, k), "specified number of properties was not satisfied", func(o *obj) {
				o.int("numberOfProperties", countElements(doc))
			})
		}
	}
}

// allowedPropertiesRules are additionalProperties and patternProperties.
func (x *explainer) allowedPropertiesRules(schema, doc bsoncore.Document, props bsoncore.Value, hasProps bool, rules *arr) {
	pats, hasPats := lookupField(schema, "patternProperties")
	more, hasMore := lookupField(schema, "additionalProperties")
	if !hasPats && !hasMore {
		return
	}
	type pattern struct {
		src string
		re  *expr.Regex
		sub bsoncore.Document
	}
	var patterns []pattern
	if hasPats {
		for e := range value.All(pats.Data) {
			re, err := expr.CompileRegex(e.Key(), "")
			if err != nil {
				return
			}
			patterns = append(patterns, pattern{e.Key(), re, e.Value().Data})
		}
	}
	var additional []bsoncore.Element
	for e := range value.All(doc) {
		if hasProps {
			if _, ok := lookupField(props.Data, e.Key()); ok {
				continue
			}
		}
		matched := false
		for _, p := range patterns {
			matched = matched || p.re.MatchString(e.Key())
		}
		if !matched {
			additional = append(additional, e)
		}
	}
	if hasMore {
		switch more.Type {
		case bsoncore.TypeBoolean:
			if !more.Boolean() && len(additional) > 0 {
				names := make([]string, len(additional))
				for i, e := range additional {
					names[i] = e.Key()
				}
				var o obj
				o.str("operatorName", "additionalProperties")
				o.doc("specifiedAs", subset(schema, "additionalProperties"))
				o.arr("additionalProperties", stringArray(names))
				rules.doc(o.build())
			}
		case bsoncore.TypeEmbeddedDocument:
			for _, e := range additional {
				if schemaValid(more.Data, e.Value(), false) {
					continue
				}
				var o obj
				o.str("operatorName", "additionalProperties")
				appendAnnotations(&o, more.Data)
				o.str("reason", "at least one additional property did not match the subschema")
				o.str("failingProperty", e.Key())
				o.arr("details", x.schemaRules(more.Data, e.Value(), true, false).build())
				rules.doc(o.build())
				break
			}
		}
	}
	var failing arr
	for _, p := range patterns {
		for e := range value.All(doc) {
			if !p.re.MatchString(e.Key()) || schemaValid(p.sub, e.Value(), false) {
				continue
			}
			var o obj
			o.str("propertyName", e.Key())
			appendAnnotations(&o, p.sub)
			o.str("regexMatched", p.src)
			o.arr("details", x.schemaRules(p.sub, e.Value(), true, false).build())
			failing.doc(o.build())
			break
		}
	}
	if failing.len() > 0 {
		var o obj
		o.str("operatorName", "patternProperties")
		o.arr("details", failing.build())
		rules.doc(o.build())
	}
}

// logicalRules are allOf, anyOf, oneOf and not.
func (x *explainer) logicalRules(schema bsoncore.Document, v bsoncore.Value, top bool, rules *arr) {
	subs := func(k string) []bsoncore.Document {
		a, ok := lookupField(schema, k)
		if !ok {
			return nil
		}
		var out []bsoncore.Document
		for _, s := range arrayValues(a.Data) {
			out = append(out, s.Data)
		}
		return out
	}
	entry := func(i int, sub bsoncore.Document) bsoncore.Document {
		var o obj
		o.int("index", i)
		appendAnnotations(&o, sub)
		o.arr("details", x.schemaRules(sub, v, true, top).build())
		return o.build()
	}
	list := func(k string, entries *arr) {
		var o obj
		o.str("operatorName", k)
		o.arr("schemasNotSatisfied", entries.build())
		rules.doc(o.build())
	}
	if all := subs("allOf"); all != nil {
		var failing arr
		for i, sub := range all {
			if !schemaValid(sub, v, top) {
				failing.doc(entry(i, sub))
			}
		}
		if failing.len() > 0 {
			list("allOf", &failing)
		}
	}
	if anyOf := subs("anyOf"); anyOf != nil {
		var failing arr
		for i, sub := range anyOf {
			if schemaValid(sub, v, top) {
				failing = arr{}
				break
			}
			failing.doc(entry(i, sub))
		}
		if failing.len() > 0 {
			list("anyOf", &failing)
		}
	}
	if oneOf := subs("oneOf"); oneOf != nil {
		var failing arr
		var matching []bsoncore.Value
		for i, sub := range oneOf {
			if schemaValid(sub, v, top) {
				matching = append(matching, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
			} else {
				failing.doc(entry(i, sub))
			}
		}
		switch {
		case len(matching) > 1:
			var o obj
			o.str("operatorName", "oneOf")
			o.str("reason", "more than one subschema matched")
			o.arr("matchingSchemaIndexes", valueArray(matching))
			rules.doc(o.build())
		case len(matching) == 0:
			list("oneOf", &failing)
		}
	}
	if n, ok := lookupField(schema, "not"); ok && schemaValid(n.Data, v, top) {
		var o obj
		o.str("operatorName", "not")
		o.str("reason", "child expression matched")
		rules.doc(o.build())
	}
}
