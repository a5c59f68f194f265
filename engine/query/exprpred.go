package query

import (
	"time"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"

	"github.com/parsecdb/parsec/engine/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// exprEnv is what aggregation expressions ($expr, computed projection
// fields) are compiled and run with: the scope holding the command's let
// variables, their values (evaluated once, at compile time, as MongoDB
// does) and the clock.
type exprEnv struct {
	scope   *expr.Scope
	letVals []bsoncore.Value
	now     time.Time
}

func newExprEnv(opts Options) (*exprEnv, error) {
	env := &exprEnv{scope: expr.NewScope(), now: opts.Now}
	env.scope.SetCollation(opts.Collation)
	if env.now.IsZero() {
		env.now = time.Unix(0, 0).UTC()
	}
	if len(opts.Let) == 0 {
		return env, nil
	}
	let := append(bsoncore.Document(nil), opts.Let...)
	if err := let.Validate(); err != nil {
		return nil, langerr.New(langerr.ErrFailedToParse, "let: %v", err)
	}
	type pending struct {
		name string
		e    expr.Expression
	}
	var vars []pending
	empty := bsoncore.NewDocumentBuilder().Build()
	for e := range value.All(let) {
		if err := expr.CheckLetParameterName(e.Key()); err != nil {
			return nil, err
		}
		x, err := expr.Compile(e.Value(), expr.NewScope())
		if err != nil {
			return nil, err
		}
		vars = append(vars, pending{e.Key(), x})
	}
	for _, p := range vars {
		v, err := p.e.Eval(&expr.Context{Root: empty, Now: env.now})
		if err != nil {
			return nil, err
		}
		env.scope.Declare(p.name)
		env.letVals = append(env.letVals, v)
	}
	return env, nil
}

// context makes an evaluation context for doc.
func (env *exprEnv) context(doc bsoncore.Document) *expr.Context {
	vars := make([]bsoncore.Value, env.scope.Slots())
	copy(vars, env.letVals)
	return &expr.Context{Root: doc, Vars: vars, Now: env.now}
}

// exprPred is $expr: the expression's value, read as a boolean.
type exprPred struct {
	e   expr.Expression
	env *exprEnv
}

func (c *compiler) compileExprPred(v bsoncore.Value) (predicate, error) {
	env := c.env()
	e, err := expr.Compile(v, env.scope)
	if err != nil {
		return nil, err
	}
	c.canFail = true
	return &exprPred{e: e, env: env}, nil
}

func (p *exprPred) match(doc bsoncore.Document, st *state) bool {
	v, err := p.e.Eval(p.env.context(doc))
	if err != nil {
		if st != nil && st.err == nil {
			st.err = err
		}
		return false
	}
	return expr.Truthy(v)
}
