package expr

import (
	"strings"

	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// pathExpr is "$a.b" (from $$CURRENT) or "$$var.a.b".
type pathExpr struct {
	root  int // rootDoc, rootNow, rootRemove, rootClusterTime or a variable slot >= 0
	parts []string
}

const (
	rootCurrent     = -5
	rootDoc         = -1
	rootNow         = -2
	rootRemove      = -3
	rootClusterTime = -4
)

func (c *compiler) compilePath(s string) (Expression, error) {
	if s == "$" {
		return nil, langerr.New(ErrFieldPath, "'$' by itself is not a valid FieldPath")
	}
	p := &pathExpr{root: rootCurrent}
	if slot, ok := c.scope.lookup("CURRENT"); ok {
		// A field path reads $$CURRENT, which a let may define.
		p.root = slot
	}
	rest := s[1:]
	if strings.HasPrefix(rest, "$") {
		name, tail, _ := strings.Cut(rest[1:], ".")
		slot, declared := c.scope.lookup(name)
		switch {
		case declared:
			// Variables a stage declares ($redact's DESCEND, PRUNE, KEEP)
			// may have names users cannot give.
			p.root = slot
		case name == "ROOT":
			p.root = rootDoc
		case name == "CURRENT":
		case name == "NOW":
			p.root = rootNow
		case name == "REMOVE":
			p.root = rootRemove
		case name == "CLUSTER_TIME":
			p.root = rootClusterTime
		default:
			if err := checkName(name, true); err != nil {
				return nil, err
			}
			return nil, langerr.New(ErrUndefinedVariable, "Use of undefined variable: %s", name)
		}
		if !strings.Contains(rest, ".") {
			return p, nil
		}
		rest = tail
	}
	for _, part := range strings.Split(rest, ".") {
		if part == "" {
			return nil, langerr.New(ErrFieldPath, "FieldPath field names may not be empty strings.")
		}
		if part[0] == '$' {
			return nil, langerr.New(ErrFieldPath, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		p.parts = append(p.parts, part)
	}
	return p, nil
}

func (p *pathExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	var v bsoncore.Value
	switch p.root {
	case rootCurrent:
		if ctx.Current != nil {
			v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ctx.Current}
		} else {
			v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ctx.Root}
		}
	case rootDoc:
		v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ctx.Root}
	case rootNow:
		v = DateTime(ctx.Now.UnixMilli())
	case rootClusterTime:
		v = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(ctx.Now.Unix()), 1)}
	case rootRemove:
		return Missing, nil
	default:
		if p.root < len(ctx.Vars) {
			v = ctx.Vars[p.root]
		}
	}
	return getPath(v, p.parts), nil
}

// getPath follows parts from v as aggregation field paths do: through
// documents, and over arrays element by element (keeping nested arrays,
// dropping elements where the path reaches nothing). Numeric parts are
// field names, not indexes.
func getPath(v bsoncore.Value, parts []string) bsoncore.Value {
	for i, part := range parts {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			x, ok := lookup(v.Data, part)
			if !ok {
				return Missing
			}
			v = x
		case bsoncore.TypeArray:
			return getPathArray(v, parts[i:])
		default:
			return Missing
		}
	}
	return v
}

func getPathArray(arr bsoncore.Value, parts []string) bsoncore.Value {
	var out []bsoncore.Value
	for e := range value.All(arr.Data) {
		x := e.Value()
		switch x.Type {
		case bsoncore.TypeEmbeddedDocument:
			if r := getPath(x, parts); r.Type != 0 {
				out = append(out, r)
			}
		case bsoncore.TypeArray:
			out = append(out, getPathArray(x, parts))
		}
	}
	return Array(out)
}

// FieldPath compiles a "$a.b" path expression by itself.
func FieldPath(path string) (Expression, error) {
	return (&compiler{scope: NewScope()}).compilePath(path)
}
