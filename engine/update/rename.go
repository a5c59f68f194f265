package update

import (
	"strings"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $rename is two leaves of the trie: the source, which it unsets, and the
// destination, which takes the source's value from the original document.
// Conflict checks then cover both paths like any other operator's.

type rename struct {
	from, to           string
	fromParts, toParts []string
}

// renameOp is what parseRename returns; addRename turns it into leaves.
type renameOp struct{ to string }

func (renameOp) apply(*applyCtx, *node, target) (*node, bool, error) { return nil, false, nil }

func parseRename(v bsoncore.Value, e bsoncore.Element) (op, error) {
	to, ok := v.StringValueOK()
	if !ok {
		return nil, errorf(ErrBadValue, "The 'to' field for $rename must be a string: %s", value.RenderElement(e.Key(), v))
	}
	// A string value may hold a zero byte; a field name cannot.
	if strings.IndexByte(to, 0) >= 0 {
		return nil, errorf(ErrBadValue, "The 'to' field for $rename cannot contain an embedded null byte: %s", e.Key())
	}
	return &renameOp{to: to}, nil
}

func (u *Update) addRename(r *renameOp, from string, fromParts []string) error {
	toParts, err := splitPath(r.to)
	if err != nil {
		return err
	}
	for _, p := range fromParts {
		if k, _ := componentKind(p); k != posNone {
			return errorf(ErrBadValue, "The source field for $rename may not be dynamic: %s", from)
		}
	}
	for _, p := range toParts {
		if k, _ := componentKind(p); k != posNone {
			return errorf(ErrBadValue, "The destination field for $rename may not be dynamic: %s", r.to)
		}
	}
	if from == r.to {
		return errorf(ErrBadValue, "The source and target field for $rename must differ: %s: %q", from, r.to)
	}
	if strings.HasPrefix(r.to, from+".") || strings.HasPrefix(from, r.to+".") {
		return errorf(ErrBadValue, "The source and target field for $rename must not be on the same path: %s: %q", from, r.to)
	}
	if err := u.insert(fromParts, from, renameFromOp{}); err != nil {
		return err
	}
	if err := u.insert(toParts, r.to, renameToOp{from: from}); err != nil {
		return err
	}
	if strings.HasPrefix(toParts[0], "$") && u.topDollarField == "" {
		u.topDollarField = toParts[0]
	}
	u.renames = append(u.renames, rename{from: from, to: r.to, fromParts: fromParts, toParts: toParts})
	return nil
}

type renameFromOp struct{}

func (renameFromOp) apply(_ *applyCtx, cur *node, _ target) (*node, bool, error) {
	return nil, cur != nil, nil
}

type renameToOp struct{ from string }

func (o renameToOp) apply(c *applyCtx, _ *node, _ target) (*node, bool, error) {
	v, ok := c.renamed[o.from]
	if !ok {
		return nil, false, nil
	}
	return rawNode(v), false, nil
}

// prepareRenames reads each rename's source value from the original
// document, refusing sources and destinations inside arrays.
func (c *applyCtx) prepareRenames(doc bsoncore.Document) error {
	for _, r := range c.u.renames {
		v, ok, err := c.lookupNoArrays(doc, r.fromParts, "source", r.from)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if _, _, err := c.lookupNoArrays(doc, r.toParts, "destination", r.to); err != nil {
			return err
		}
		if c.renamed == nil {
			c.renamed = map[string]bsoncore.Value{}
		}
		c.renamed[r.from] = v
	}
	return nil
}

// lookupNoArrays finds the value at parts, failing when a field on the
// way (not the last) is an array.
func (c *applyCtx) lookupNoArrays(doc bsoncore.Document, parts []string, role, path string) (bsoncore.Value, bool, error) {
	cur := doc
	for i, p := range parts {
		v, err := cur.LookupErr(p)
		if err != nil {
			return bsoncore.Value{}, false, nil
		}
		if i == len(parts)-1 {
			return v, true, nil
		}
		switch v.Type {
		case bsoncore.TypeArray:
			return bsoncore.Value{}, false, errorf(ErrBadValue, "The %s field cannot be an array element, '%s' in doc with %s has an array field called '%s'", role, path, c.idElem(), p)
		case bsoncore.TypeEmbeddedDocument:
			cur = v.Document()
		default:
			return bsoncore.Value{}, false, nil
		}
	}
	return bsoncore.Value{}, false, nil
}
