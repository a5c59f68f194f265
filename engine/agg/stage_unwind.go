package agg

import (
	"context"
	"strings"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

type unwindStage struct {
	path     []string
	index    []string // includeArrayIndex; nil when not asked
	preserve bool
	raw      bsoncore.Document
}

func parseUnwind(_ *pipelineParser, arg bsoncore.Value, raw bsoncore.Document) ([]stage, error) {
	u := &unwindStage{raw: raw}
	var path string
	switch arg.Type {
	case bsoncore.TypeString:
		path = stringOf(arg)
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := arg.Document().Elements()
		found := false
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "path":
				s, ok := v.StringValueOK()
				if !ok {
					return nil, langerr.New(ErrUnwindSpec, "expected a string as the path for $unwind stage, got %s", typeName(v))
				}
				path, found = s, true
			case "includeArrayIndex":
				s, ok := v.StringValueOK()
				if !ok || s == "" {
					return nil, langerr.New(ErrUnwindSpec, "expected a non-empty string for the includeArrayIndex  option to $unwind stage, got %s", typeName(v))
				}
				if strings.HasPrefix(s, "$") {
					return nil, langerr.New(ErrUnwindSpec, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", s)
				}
				if err := checkFieldPath(s); err != nil {
					return nil, err
				}
				u.index = splitPath(s)
			case "preserveNullAndEmptyArrays":
				if v.Type != bsoncore.TypeBoolean {
					return nil, langerr.New(ErrUnwindSpec, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", typeName(v))
				}
				u.preserve = v.Boolean()
			default:
				return nil, langerr.New(ErrUnwindSpec, "unrecognized option to $unwind stage: %s", el.Key())
			}
		}
		if !found {
			return nil, langerr.New(ErrUnwindSpec, "no path specified to $unwind stage")
		}
	default:
		return nil, langerr.New(ErrUnwindSpec, "expected either a string or an object as specification for $unwind stage, got %s", typeName(arg))
	}
	if !strings.HasPrefix(path, "$") {
		return nil, langerr.New(ErrUnwindPath, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	if err := checkFieldPath(path[1:]); err != nil {
		return nil, err
	}
	u.path = splitPath(path[1:])
	return []stage{u}, nil
}

func (*unwindStage) name() string              { return "$unwind" }
func (u *unwindStage) spec() bsoncore.Document { return u.raw }

func (u *unwindStage) open(in Iterator) Iterator {
	var cur bsoncore.Document
	var elems []bsoncore.Value
	pos := 0
	return &funcIter{next: func(ctx context.Context) (bsoncore.Document, error) {
		for {
			if pos < len(elems) {
				i := pos
				pos++
				out := setPath(cur, u.path, elems[i])
				if u.index != nil {
					out = setPath(out, u.index, expr.Int64(int64(i)))
				}
				return out, nil
			}
			d, err := in.Next(ctx)
			if err != nil || d == nil {
				return nil, err
			}
			v := getPath(d, u.path)
			switch {
			case v.Type == bsoncore.TypeArray && len(v.Data) > 5:
				cur, elems, pos = d, expr.Elements(v), 0
			case v.Type == bsoncore.TypeArray:
				if u.preserve {
					out := removePath(d, u.path)
					if u.index != nil {
						out = setPath(out, u.index, expr.Null)
					}
					return out, nil
				}
			case v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined:
				if u.preserve {
					if u.index != nil {
						return setPath(d, u.index, expr.Null), nil
					}
					return d, nil
				}
			default:
				if u.index != nil {
					return setPath(d, u.index, expr.Null), nil
				}
				return d, nil
			}
		}
	}, close: in.Close}
}

// removePath drops a dotted path (through embedded documents only).
func removePath(doc bsoncore.Document, path []string) bsoncore.Document {
	fields := expr.Fields(docValue(doc))
	for i, f := range fields {
		if f.Key != path[0] {
			continue
		}
		if len(path) == 1 {
			fields = append(fields[:i], fields[i+1:]...)
		} else if f.Val.Type == bsoncore.TypeEmbeddedDocument {
			fields[i].Val = docValue(removePath(f.Val.Data, path[1:]))
		}
		break
	}
	return expr.Document(fields).Data
}
