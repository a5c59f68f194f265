package update

import (
	"errors"
	"strings"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// arrayFilter is one compiled entry of arrayFilters: the identifier its
// paths start with, and the filter, which is matched against {<id>: elem}.
type arrayFilter struct {
	name   string
	filter *query.Filter
}

func findFilter(fs []arrayFilter, name string) (arrayFilter, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return arrayFilter{}, false
}

// parseArrayFilters compiles arrayFilters, checking that each filter uses
// exactly one identifier and no identifier has two filters.
func parseArrayFilters(docs []bsoncore.Document, coll *value.Collator) ([]arrayFilter, error) {
	var out []arrayFilter
	for _, d := range docs {
		name, err := filterIdentifier(d)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, errorf(ErrFailedToParse, "Cannot use an expression without a top-level field name in arrayFilters")
		}
		if !validIdentifier(name) {
			return nil, errorf(ErrBadValue, "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", name)
		}
		if _, dup := findFilter(out, name); dup {
			return nil, errorf(ErrFailedToParse, "Found multiple array filters with the same top-level field name %s", name)
		}
		f, err := query.CompileWith(d, query.Options{Collation: coll})
		if err != nil {
			return nil, fromQueryError(err, "Error parsing array filter :: caused by :: ")
		}
		out = append(out, arrayFilter{name: name, filter: f})
	}
	return out, nil
}

// filterIdentifier returns the one top-level field name (before any dot)
// of a filter, looking into $and, $or and $nor.
func filterIdentifier(d bsoncore.Document) (string, error) {
	elems, err := d.Elements()
	if err != nil {
		return "", errorf(ErrFailedToParse, "invalid array filter: %v", err)
	}
	name := ""
	add := func(n string) error {
		if n == "" {
			return nil
		}
		if name != "" && name != n {
			return errorf(ErrFailedToParse, "Error parsing array filter :: caused by :: Expected a single top-level field name, found '%s' and '%s'", name, n)
		}
		name = n
		return nil
	}
	for _, e := range elems {
		k := e.Key()
		switch {
		case k == "$and" || k == "$or" || k == "$nor":
			arr, ok := e.Value().ArrayOK()
			if !ok {
				continue // query.Compile reports it
			}
			vals, _ := arr.Values()
			for _, v := range vals {
				sub, ok := v.DocumentOK()
				if !ok {
					continue
				}
				n, err := filterIdentifier(sub)
				if err != nil {
					return "", err
				}
				if err := add(n); err != nil {
					return "", err
				}
			}
		case strings.HasPrefix(k, "$"):
		default:
			top, _, _ := strings.Cut(k, ".")
			if err := add(top); err != nil {
				return "", err
			}
		}
	}
	return name, nil
}

func validIdentifier(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// matches reports whether elem satisfies the filter of identifier id.
func (c *applyCtx) matches(id string, elem *node) bool {
	f := c.u.filters[id]
	if f == nil {
		return false
	}
	start, b := bsoncore.AppendDocumentStart(c.scratch[:0])
	b = appendNode(b, id, elem)
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	c.scratch = b
	return f.Match(b)
}

// fromQueryError wraps an error of package query, whose category decides
// the code, with prefix added to its message.
func fromQueryError(err error, prefix string) error {
	msg := err.Error()
	if cat := errors.Unwrap(err); cat != nil {
		msg = strings.TrimPrefix(msg, cat.Error()+": ")
	}
	return &Error{cat: ErrQuery, msg: prefix + msg, cause: err}
}
