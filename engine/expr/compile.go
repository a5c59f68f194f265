package expr

import (
	"errors"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Expression is a compiled aggregation expression.
type Expression interface {
	Eval(ctx *Context) (bsoncore.Value, error)
}

// Context is one evaluation: the document ($$ROOT and $$CURRENT), the
// values of variables by slot (see Scope) and the clock. A Context is
// used by one goroutine at a time; operators that bind variables ($let,
// $map, ...) write their slots while they run.
type Context struct {
	Root bsoncore.Document
	Vars []bsoncore.Value
	Now  time.Time
	// Current is $$CURRENT, what field paths start from; nil means Root
	// ($redact rebinds it to each embedded document it descends into).
	Current bsoncore.Document
}

// set writes a variable slot, growing Vars if the context was made
// before the expression was compiled.
func (ctx *Context) set(slot int, v bsoncore.Value) {
	for len(ctx.Vars) <= slot {
		ctx.Vars = append(ctx.Vars, Missing)
	}
	ctx.Vars[slot] = v
}

// NewContext makes a context for scope's variables, all missing.
func NewContext(scope *Scope, root bsoncore.Document, now time.Time) *Context {
	return &Context{Root: root, Vars: make([]bsoncore.Value, scope.Slots()), Now: now}
}

// Scope names the variables an expression may use and gives each a slot
// in Context.Vars. Variables declared before Compile (a command's let)
// stay visible; those an operator binds are visible only inside it.
type Scope struct {
	visible []binding
	slots   int
	coll    *value.Collator
}

// SetCollation makes the expressions compiled in s compare strings by coll
// ($eq, $cmp, $lt, ..., $in, $indexOfArray); nil is the simple collation.
func (s *Scope) SetCollation(coll *value.Collator) { s.coll = coll }

// Collation is the collation expressions compiled in s compare by.
func (s *Scope) Collation() *value.Collator {
	if s == nil {
		return nil
	}
	return s.coll
}

type binding struct {
	name string
	slot int
}

// NewScope makes a scope with no user variables.
func NewScope() *Scope { return &Scope{} }

// Declare makes name visible and returns its slot.
func (s *Scope) Declare(name string) int {
	slot := s.slots
	s.slots++
	s.visible = append(s.visible, binding{name, slot})
	return slot
}

// Slots is how many variable slots a Context for this scope needs.
func (s *Scope) Slots() int { return s.slots }

func (s *Scope) lookup(name string) (int, bool) {
	for i := len(s.visible) - 1; i >= 0; i-- {
		if s.visible[i].name == name {
			return s.visible[i].slot, true
		}
	}
	return 0, false
}

// with compiles inside a block where names are bound to new slots.
func (s *Scope) with(names []string, fn func(slots []int) error) error {
	n := len(s.visible)
	slots := make([]int, len(names))
	for i, name := range names {
		slots[i] = s.Declare(name)
	}
	err := fn(slots)
	s.visible = s.visible[:n]
	return err
}

// CheckVariableName applies MongoDB's rules to a user variable name that
// is defined: it starts with a lowercase letter or a non-ASCII character
// and contains only letters, digits, '_' and non-ASCII characters, or it
// is CURRENT, the one system variable users may set. MongoDB refuses a
// bad name with FailedToParse.
func CheckVariableName(name string) error {
	if name == "CURRENT" {
		return nil
	}
	return checkName(name, false)
}

// systemConstants are the system variables a command's let may set only
// when MongoDB's own nodes send it.
var systemConstants = map[string]bool{
	"NOW": true, "CLUSTER_TIME": true, "JS_SCOPE": true, "IS_MR": true, "USER_ROLES": true,
}

// CheckLetParameterName is CheckVariableName for a name of a command's
// let, whose refusal MongoDB prefixes with the parameter's context; a
// system variable's name is refused as an internal constant instead.
func CheckLetParameterName(name string) error {
	if err := CheckVariableName(name); err != nil {
		if systemConstants[name] {
			return langerr.New(ErrInternalConstant, "Attempt to set internal constant: %s", name)
		}
		var le *langerr.Error
		if errors.As(err, &le) {
			return langerr.FailedToParse("Invalid 'let' parameter :: caused by :: %s", le.Message)
		}
		return err
	}
	return nil
}

// checkName is MongoDB's check of a variable name; a name that is read
// ("$$Name") may also start with an uppercase letter, the builtin
// variables' initial.
func checkName(name string, read bool) error {
	// A name being bound has MongoDB's own codes (16866-16868); a name
	// being read keeps FailedToParse.
	empty, start, char := langerr.ErrFailedToParse, langerr.ErrFailedToParse, langerr.ErrFailedToParse
	if !read {
		empty, start, char = ErrVarNameEmpty, ErrVarNameStart, ErrVarNameChar
	}
	if name == "" {
		return langerr.New(empty, "empty variable names are not allowed")
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 0x80:
		case c >= 'A' && c <= 'Z' && (i > 0 || read):
		case i > 0 && (c >= '0' && c <= '9' || c == '_'):
		default:
			if i == 0 {
				return langerr.New(start, "'%s' starts with an invalid character for a user variable name", name)
			}
			return langerr.New(char, "'%s' contains an invalid character for a variable name: '%c'", name, c)
		}
	}
	return nil
}

// Compile parses an expression. Strings starting with "$" are field
// paths ("$$" variables), documents whose one field is an operator are
// operator expressions, other documents and arrays are evaluated field by
// field, and everything else is a literal.
func Compile(v bsoncore.Value, scope *Scope) (Expression, error) {
	c := &compiler{scope: scope}
	return c.compile(v)
}

type compiler struct{ scope *Scope }

func (c *compiler) compile(v bsoncore.Value) (Expression, error) {
	switch v.Type {
	case bsoncore.TypeString:
		s := stringOf(v)
		if strings.HasPrefix(s, "$") {
			return c.compilePath(s)
		}
	case bsoncore.TypeEmbeddedDocument:
		return c.compileObject(v.Data)
	case bsoncore.TypeArray:
		var items []Expression
		for _, x := range Elements(v) {
			e, err := c.compile(x)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		return arrayExpr(items), nil
	}
	return constant{cloneValue(v)}, nil
}

func cloneValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// constant is a literal.
type constant struct{ v bsoncore.Value }

func (k constant) Eval(*Context) (bsoncore.Value, error) { return k.v, nil }

// Constant reports the value of an expression that is a literal.
func Constant(e Expression) (bsoncore.Value, bool) {
	k, ok := e.(constant)
	return k.v, ok
}

type arrayExpr []Expression

func (a arrayExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(a))
	for i, e := range a {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		vals[i] = v
	}
	return Array(vals), nil
}

// objectExpr evaluates each field; missing results are left out.
type objectExpr struct {
	keys  []string
	exprs []Expression
}

func (o *objectExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	fields := make([]Field, len(o.keys))
	for i, e := range o.exprs {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		fields[i] = Field{o.keys[i], v}
	}
	return Document(fields), nil
}

func (c *compiler) compileObject(doc bsoncore.Document) (Expression, error) {
	it := value.ElementsOf(doc)
	first, ok := it.Next()
	if !ok {
		return constant{Document(nil)}, nil
	}
	if strings.HasPrefix(first.Key(), "$") {
		if n := len(Fields(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})); n != 1 {
			return nil, langerr.New(ErrExpressionSpec, "an expression specification must contain exactly one field, the name of the expression. Found %d fields in %s, while parsing object %s", n, value.RenderDocument(doc), value.RenderDocument(doc))
		}
		return c.compileOperator(first.Key(), first.Value())
	}
	o := &objectExpr{}
	seen := map[string]bool{}
	for e, ok := first, true; ok; e, ok = it.Next() {
		k := e.Key()
		if strings.HasPrefix(k, "$") {
			return nil, langerr.New(ErrFieldPath, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		if strings.Contains(k, ".") {
			return nil, langerr.New(ErrFieldPath, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")
		}
		if k == "" {
			return nil, langerr.New(ErrFieldPath, "FieldPath field names may not be empty strings.")
		}
		if seen[k] {
			return nil, langerr.New(ErrFieldPath, "specification contains two conflicting paths. Cannot specify both '%s' and '%s'", k, k)
		}
		seen[k] = true
		x, err := c.compile(e.Value())
		if err != nil {
			return nil, err
		}
		o.keys = append(o.keys, k)
		o.exprs = append(o.exprs, x)
	}
	return o, nil
}

func (c *compiler) compileOperator(name string, arg bsoncore.Value) (Expression, error) {
	if name == "$literal" {
		return constant{cloneValue(arg)}, nil
	}
	op, ok := operators[name]
	if !ok {
		if notYet[name] {
			return nil, langerr.New(langerr.ErrNotImplemented, "expression %s is not supported by Parsec yet", name)
		}
		return nil, langerr.New(ErrUnknownOperator, "Unrecognized expression '%s'", name)
	}
	return op(c, name, arg)
}

// notYet lists MongoDB expressions Parsec does not evaluate yet, so they
// are reported as such rather than as unknown.
var notYet = map[string]bool{
	"$function": true, "$accumulator": true, "$meta": true, "$toUUID": true,
}
