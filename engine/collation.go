package engine

import (
	"errors"
	"math"
	"strings"
	"sync"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// collationCache memoizes collators by their (complete) spec, so that
// requests with the same collation share one collator and its pool of
// golang.org/x/text collators. Keyed by the spec, not the document's
// bytes, it is bounded by the number of distinct collations.
var collationCache sync.Map // value.Collation -> *value.Collator

// collationArg parses the collation argument k of cmd: nil for the simple
// collation ({locale: "simple"}).
func collationArg(cmd, k string, v bsoncore.Value) (*value.Collator, error) {
	d, err := docArg(cmd, k, v)
	if err != nil {
		return nil, err
	}
	return parseCollation(d)
}

// parseCollation validates a collation document with MongoDB's errors and
// returns its collator; nil means the simple collation.
func parseCollation(d bsoncore.Document) (*value.Collator, error) {
	spec, simple, err := collationSpec(d)
	if err != nil || simple {
		return nil, err
	}
	if c, ok := collationCache.Load(spec); ok {
		return c.(*value.Collator), nil
	}
	c, err := value.NewCollator(spec)
	if err != nil {
		return nil, localeError(d, err)
	}
	got, _ := collationCache.LoadOrStore(spec, c)
	return got.(*value.Collator), nil
}

// collationSpec reads a collation document: the spec with the locale's
// defaults for what it leaves out, or simple for {locale: "simple"}.
func collationSpec(d bsoncore.Document) (spec value.Collation, simple bool, err error) {
	shown := value.RenderDocument(d)
	loc, lerr := d.LookupErr("locale")
	if lerr != nil {
		return spec, false, errorf(ErrFailedToParse, "BSON field 'locale' is missing but a required field")
	}
	locale, ok := loc.StringValueOK()
	if !ok {
		return spec, false, errorf(ErrTypeMismatch, "\"locale\" had the wrong type. Expected string, found %s", TypeName(loc.Type))
	}
	n := 0
	for range value.All(d) {
		n++
	}
	if locale == "simple" {
		if n > 1 {
			return spec, false, errorf(ErrFailedToParse, "If locale=simple, no other fields should be present in: %s", shown)
		}
		return spec, true, nil
	}
	switch {
	case locale == "":
		return spec, false, errorf(ErrBadValue, "Field 'locale' cannot be the empty string in: %s", shown)
	case strings.IndexByte(locale, 0) >= 0:
		return spec, false, errorf(ErrBadValue, "Field 'locale' cannot contain null byte. Collation spec: %s", shown)
	}
	if spec, err = value.DefaultCollation(locale); err != nil {
		return spec, false, localeError(d, err)
	}
	for el := range value.All(d) {
		k, v := el.Key(), el.Value()
		switch k {
		case "locale":
		case "caseLevel", "numericOrdering", "normalization", "backwards":
			b, ok := v.BooleanOK()
			if !ok {
				return spec, false, errorf(ErrTypeMismatch, "\"%s\" had the wrong type. Expected bool, found %s", k, TypeName(v.Type))
			}
			switch k {
			case "caseLevel":
				spec.CaseLevel = b
			case "numericOrdering":
				spec.NumericOrdering = b
			case "normalization":
				spec.Normalization = b
			default:
				spec.Backwards = b
			}
		case "caseFirst", "alternate", "maxVariable":
			s, ok := v.StringValueOK()
			if !ok {
				return spec, false, errorf(ErrTypeMismatch, "\"%s\" had the wrong type. Expected string, found %s", k, TypeName(v.Type))
			}
			switch {
			case k == "caseFirst" && (s == "upper" || s == "lower" || s == "off"):
				spec.CaseFirst = s
			case k == "caseFirst":
				return spec, false, errorf(ErrFailedToParse, "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: %s", s)
			case k == "alternate" && (s == "non-ignorable" || s == "shifted"):
				spec.Alternate = s
			case k == "alternate":
				return spec, false, errorf(ErrFailedToParse, "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: %s", s)
			case s == "punct" || s == "space":
				spec.MaxVariable = s
			default:
				return spec, false, errorf(ErrFailedToParse, "Field 'maxVariable' must be 'punct' or 'space'. Got: %s", s)
			}
		case "strength":
			if !isNumber(v) {
				return spec, false, errorf(ErrTypeMismatch, "Expected field \"strength\" to have numeric type, but found %s", TypeName(v.Type))
			}
			f := value.Float(v)
			if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
				return spec, false, errorf(ErrBadValue, "Expected field \"strength\" to have a value exactly representable as a 64-bit integer, but found %s", value.RenderElement(k, v))
			}
			if f < 1 || f > 5 {
				return spec, false, errorf(ErrFailedToParse, "Field 'strength' must be an integer 1 through 5. Got: %d", int64(f))
			}
			spec.Strength = int(f)
		case "version":
			s, ok := v.StringValueOK()
			if !ok {
				return spec, false, errorf(ErrTypeMismatch, "\"version\" had the wrong type. Expected string, found %s", TypeName(v.Type))
			}
			if s != value.CollationVersion {
				return spec, false, errorf(ErrIncompatibleCollationVersion, "Requested collation version %s but the only available collator version was %s. Requested collation spec: %s", s, value.CollationVersion, shown)
			}
		default:
			return spec, false, errorf(ErrFailedToParse, "Collation spec contains unknown field. Collation spec: %s", shown)
		}
	}
	return spec, false, nil
}

// localeError is MongoDB's error for a locale it has no collation for,
// with the canonical id as a suggestion when there is one.
func localeError(d bsoncore.Document, err error) error {
	var le *value.LocaleError
	if !errors.As(err, &le) {
		return err
	}
	msg := "Field 'locale' is invalid in: " + value.RenderDocument(d)
	if le.Suggest != "" {
		msg += ". Did you mean '" + le.Suggest + "'?"
	}
	return errorf(ErrBadValue, "%s", msg)
}

// collationOrDefault is the collation an operation on a collection uses:
// the one the operation gave (given: the argument was present, even as
// {locale: "simple"}), else the collection's default collation.
func (e *Engine) collationOrDefault(db, coll string, given bool, c *value.Collator) *value.Collator {
	if given {
		return c
	}
	return e.defaultCollation(db, coll)
}

// defaultCollation is the default collation a collection was created with
// (create's collation option); nil when it has none.
func (e *Engine) defaultCollation(db, name string) *value.Collator {
	return collectionCollation(e.store.Collection(db, name))
}

// collectionCollation is the default collation of c; nil: none (simple).
func collectionCollation(c *store.Collection) *value.Collator {
	if c == nil || len(c.Options) == 0 {
		return nil
	}
	v, err := bsoncore.Document(c.Options).LookupErr("collation")
	if err != nil {
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil
	}
	coll, _ := parseCollation(d)
	return coll
}

// collationOpt is a command's collation argument: given tells an explicit
// {locale: "simple"} (coll nil) from none (the collection's default).
type collationOpt struct {
	given bool
	coll  *value.Collator
}

// parse reads the collation argument k of cmd.
func (o *collationOpt) parse(cmd, k string, v bsoncore.Value) error {
	c, err := collationArg(cmd, k, v)
	if err != nil {
		return err
	}
	o.given, o.coll = true, c
	return nil
}

// resolve is the collation the operation uses on db.name.
func (o collationOpt) resolve(e *Engine, db, name string) *value.Collator {
	return e.collationOrDefault(db, name, o.given, o.coll)
}
