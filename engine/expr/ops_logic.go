package expr

import (
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cmpOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	coll := c.scope.Collation()
	return fixed(2, func(name string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
		r := CompareWith(a[0], a[1], coll)
		switch name {
		case "$eq":
			return Bool(r == 0), nil
		case "$ne":
			return Bool(r != 0), nil
		case "$gt":
			return Bool(r > 0), nil
		case "$gte":
			return Bool(r >= 0), nil
		case "$lt":
			return Bool(r < 0), nil
		case "$lte":
			return Bool(r <= 0), nil
		}
		return Int32(int32(r)), nil
	})(c, name, arg)
}

func notFn(_ string, a []bsoncore.Value, _ *Context) (bsoncore.Value, error) {
	return Bool(!Truthy(a[0])), nil
}

// shortCircuit is $and and $or: arguments are evaluated until the answer
// is known.
type shortCircuit struct {
	args []Expression
	or   bool
}

func (s *shortCircuit) Eval(ctx *Context) (bsoncore.Value, error) {
	for _, a := range s.args {
		v, err := a.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if Truthy(v) == s.or {
			return Bool(s.or), nil
		}
	}
	return Bool(!s.or), nil
}

func andOp(c *compiler, _ string, arg bsoncore.Value) (Expression, error) {
	args, err := c.compileAll(operands(arg))
	return &shortCircuit{args: args}, err
}

func orOp(c *compiler, _ string, arg bsoncore.Value) (Expression, error) {
	args, err := c.compileAll(operands(arg))
	return &shortCircuit{args: args, or: true}, err
}

type condExpr struct{ cond, then, els Expression }

func (e *condExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := e.cond.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if Truthy(v) {
		return e.then.Eval(ctx)
	}
	return e.els.Eval(ctx)
}

func condOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	var parts []bsoncore.Value
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		m := map[string]bsoncore.Value{}
		for _, f := range Fields(arg) {
			switch f.Key {
			case "if", "then", "else":
				m[f.Key] = f.Val
			default:
				return nil, langerr.New(ErrCondUnknown, "Unrecognized parameter to $cond: %s", f.Key)
			}
		}
		for i, k := range []string{"if", "then", "else"} {
			v, ok := m[k]
			if !ok {
				return nil, langerr.New(condMissing[i], "Missing '%s' parameter to $cond", k)
			}
			parts = append(parts, v)
		}
	} else {
		parts = operands(arg)
		if len(parts) != 3 {
			return nil, langerr.New(ErrArity, "Expression $cond takes exactly 3 arguments. %d were passed in.", len(parts))
		}
	}
	e, err := c.compileAll(parts)
	if err != nil {
		return nil, err
	}
	return &condExpr{e[0], e[1], e[2]}, nil
}

type ifNullExpr []Expression

func (e ifNullExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for i, a := range e {
		v, err := a.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !isNullish(v) || i == len(e)-1 {
			return v, nil
		}
	}
	return Missing, nil
}

func ifNullOp(c *compiler, _ string, arg bsoncore.Value) (Expression, error) {
	ops := operands(arg)
	if len(ops) < 2 {
		return nil, langerr.New(ErrIfNullArity, "$ifNull needs at least two arguments, had: %d", len(ops))
	}
	e, err := c.compileAll(ops)
	return ifNullExpr(e), err
}

type switchExpr struct {
	cases, thens []Expression
	def          Expression
}

func (e *switchExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for i, c := range e.cases {
		v, err := c.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if Truthy(v) {
			return e.thens[i].Eval(ctx)
		}
	}
	if e.def == nil {
		return Missing, langerr.New(ErrNoSwitchBranch, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return e.def.Eval(ctx)
}

func switchOp(c *compiler, _ string, arg bsoncore.Value) (Expression, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, langerr.New(ErrSwitchNotObject, "$switch requires an object as an argument, found: %s", TypeName(arg))
	}
	e := &switchExpr{}
	for _, f := range Fields(arg) {
		switch f.Key {
		case "branches":
			if f.Val.Type != bsoncore.TypeArray {
				return nil, langerr.New(ErrSwitchBranchesArray, "$switch expected an array for 'branches', found: %s", TypeName(f.Val))
			}
			for _, b := range Elements(f.Val) {
				if b.Type != bsoncore.TypeEmbeddedDocument {
					return nil, langerr.New(ErrSwitchBranchObject, "$switch expected each branch to be an object, found: %s", TypeName(b))
				}
				var cs, th Expression
				for _, bf := range Fields(b) {
					x, err := c.compile(bf.Val)
					if err != nil {
						return nil, err
					}
					switch bf.Key {
					case "case":
						cs = x
					case "then":
						th = x
					default:
						return nil, langerr.New(ErrSwitchBranchUnknown, "$switch found an unknown argument to a branch: %s", bf.Key)
					}
				}
				if cs == nil {
					return nil, langerr.New(ErrSwitchNoCase, "$switch requires each branch have a 'case' expression")
				}
				if th == nil {
					return nil, langerr.New(ErrSwitchNoThen, "$switch requires each branch have a 'then' expression.")
				}
				e.cases, e.thens = append(e.cases, cs), append(e.thens, th)
			}
		case "default":
			x, err := c.compile(f.Val)
			if err != nil {
				return nil, err
			}
			e.def = x
		default:
			return nil, langerr.New(ErrSwitchUnknown, "$switch found an unknown argument: %s", f.Key)
		}
	}
	if len(e.cases) == 0 {
		return nil, langerr.New(ErrSwitchNoBranch, "$switch requires at least one branch.")
	}
	return e, nil
}

// letExpr binds variables, then evaluates in.
type letExpr struct {
	slots []int
	vals  []Expression
	in    Expression
}

func (e *letExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(e.vals))
	for i, x := range e.vals {
		v, err := x.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		vals[i] = v
	}
	for i, s := range e.slots {
		ctx.set(s, vals[i])
	}
	return e.in.Eval(ctx)
}

func letOp(c *compiler, name string, arg bsoncore.Value) (Expression, error) {
	m, err := namedArgs(name, arg, []string{"vars", "in"}, "vars", "in")
	if err != nil {
		return nil, err
	}
	vars := m["vars"]
	if vars.Type != bsoncore.TypeEmbeddedDocument {
		return nil, langerr.New(ErrLetVarsObject, "invalid parameter: expected an object (vars)")
	}
	e := &letExpr{}
	var names []string
	for _, f := range Fields(vars) {
		if err := CheckVariableName(f.Key); err != nil {
			return nil, err
		}
		x, err := c.compile(f.Val) // the values see the outer scope
		if err != nil {
			return nil, err
		}
		names = append(names, f.Key)
		e.vals = append(e.vals, x)
	}
	err = c.scope.with(names, func(slots []int) error {
		e.slots = slots
		var err error
		e.in, err = c.compile(m["in"])
		return err
	})
	return e, err
}
