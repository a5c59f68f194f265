package unified

import (
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/tag"
)

// args hands out an operation's arguments and remembers which were used,
// so that an argument the runner does not know fails the test (the format
// requires an error for unsupported arguments).
type args struct {
	op   string
	raw  bson.Raw
	used map[string]bool
}

func newArgs(op string, raw bson.Raw) *args {
	return &args{op: op, raw: raw, used: map[string]bool{}}
}

// value returns an argument and marks it used.
func (a *args) value(key string) (bson.RawValue, bool) {
	if len(a.raw) == 0 {
		return bson.RawValue{}, false
	}
	v, err := a.raw.LookupErr(key)
	if err != nil {
		return bson.RawValue{}, false
	}
	a.used[key] = true
	return v, true
}

func (a *args) has(key string) bool {
	if len(a.raw) == 0 {
		return false
	}
	_, err := a.raw.LookupErr(key)
	return err == nil
}

// skip marks arguments as handled elsewhere.
func (a *args) skip(keys ...string) {
	for _, k := range keys {
		a.used[k] = true
	}
}

func (a *args) typeErr(key string, v bson.RawValue, want string) error {
	return fmt.Errorf("runner: %s argument %s is %s, want %s", a.op, key, TypeName(v.Type), want)
}

func (a *args) doc(key string) (bson.Raw, bool, error) {
	v, ok := a.value(key)
	if !ok {
		return nil, false, nil
	}
	d, isDoc := v.DocumentOK()
	if !isDoc {
		return nil, false, a.typeErr(key, v, "a document")
	}
	return d, true, nil
}

func (a *args) requiredDoc(key string) (bson.Raw, error) {
	d, ok, err := a.doc(key)
	if err == nil && !ok {
		err = fmt.Errorf("runner: %s needs argument %s", a.op, key)
	}
	return d, err
}

func (a *args) str(key string) (string, bool, error) {
	v, ok := a.value(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.StringValueOK()
	if !isStr {
		return "", false, a.typeErr(key, v, "a string")
	}
	return s, true, nil
}

func (a *args) boolean(key string) (bool, bool, error) {
	v, ok := a.value(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.BooleanOK()
	if !isBool {
		return false, false, a.typeErr(key, v, "a boolean")
	}
	return b, true, nil
}

func (a *args) integer(key string) (int64, bool, error) {
	v, ok := a.value(key)
	if !ok {
		return 0, false, nil
	}
	n, isInt := v.AsInt64OK()
	if !isInt {
		return 0, false, a.typeErr(key, v, "an integer")
	}
	return n, true, nil
}

// array returns an array argument's values.
func (a *args) array(key string) ([]bson.RawValue, bool, error) {
	v, ok := a.value(key)
	if !ok {
		return nil, false, nil
	}
	arr, isArr := v.ArrayOK()
	if !isArr {
		return nil, false, a.typeErr(key, v, "an array")
	}
	vals, err := arr.Values()
	return vals, true, err
}

// anyValue returns an argument as a Go value the driver marshals back to
// the same BSON (documents as bson.Raw, arrays as bson.A).
func (a *args) anyValue(key string) (any, bool) {
	v, ok := a.value(key)
	if !ok {
		return nil, false
	}
	return toAny(v), true
}

// finish fails when an argument was not used by the operation.
func (a *args) finish() error {
	if len(a.raw) == 0 {
		return nil
	}
	elems, err := a.raw.Elements()
	if err != nil {
		return err
	}
	var unknown []string
	for _, e := range elems {
		if !a.used[e.Key()] {
			unknown = append(unknown, e.Key())
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		why := "not supported by the runner"
		if len(unknown) == 1 && driverLacks[unknown[0]] {
			why = "not supported: the Go driver's public API has no such option"
		}
		return fmt.Errorf("runner: argument %v %s (in %s)", unknown, why, a.op)
	}
	return nil
}

// driverLacks are spec arguments the Go driver v2 has no public option for.
var driverLacks = map[string]bool{"rawData": true, "maxCommitTimeMS": true, "wtimeoutMS": true}

// toAny converts a BSON value into one the driver marshals identically.
func toAny(v bson.RawValue) any {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return v.Document()
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		a := make(bson.A, len(vals))
		for i, e := range vals {
			a[i] = toAny(e)
		}
		return a
	}
	return v
}

// anySlice is toAny for the elements of an array value.
func anySlice(vals []bson.RawValue) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = toAny(v)
	}
	return out
}

// Common options (the format's "Common Options").

func parseReadConcern(d bson.Raw) (*readconcern.ReadConcern, error) {
	a := newArgs("readConcern", d)
	level, _, err := a.str("level")
	if err != nil {
		return nil, err
	}
	return &readconcern.ReadConcern{Level: level}, a.finish()
}

func parseWriteConcern(d bson.Raw) (*writeconcern.WriteConcern, error) {
	a := newArgs("writeConcern", d)
	wc := &writeconcern.WriteConcern{}
	if v, ok := a.value("w"); ok {
		if s, isStr := v.StringValueOK(); isStr {
			wc.W = s
		} else if n, isInt := v.AsInt64OK(); isInt {
			wc.W = int(n)
		} else {
			return nil, a.typeErr("w", v, "a string or an integer")
		}
	}
	if j, ok, err := a.boolean("journal"); err != nil {
		return nil, err
	} else if ok {
		wc.Journal = &j
	}
	return wc, a.finish()
}

func parseReadPreference(d bson.Raw) (*readpref.ReadPref, error) {
	a := newArgs("readPreference", d)
	modeName, _, err := a.str("mode")
	if err != nil {
		return nil, err
	}
	mode, err := readpref.ModeFromString(modeName)
	if err != nil {
		return nil, fmt.Errorf("runner: readPreference mode %q: %w", modeName, err)
	}
	var opts []readpref.Option
	if n, ok, err := a.integer("maxStalenessSeconds"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, readpref.WithMaxStaleness(time.Duration(n)*time.Second))
	}
	if sets, ok, err := a.array("tagSets"); err != nil {
		return nil, err
	} else if ok {
		var tagSets []tag.Set
		for _, s := range sets {
			var ts tag.Set
			elems, _ := s.Document().Elements()
			for _, e := range elems {
				ts = append(ts, tag.Tag{Name: e.Key(), Value: e.Value().StringValue()})
			}
			tagSets = append(tagSets, ts)
		}
		opts = append(opts, readpref.WithTagSets(tagSets...))
	}
	if h, ok, err := a.doc("hedge"); err != nil {
		return nil, err
	} else if ok {
		enabled, _ := h.Lookup("enabled").BooleanOK()
		opts = append(opts, readpref.WithHedgeEnabled(enabled))
	}
	if err := a.finish(); err != nil {
		return nil, err
	}
	return readpref.New(mode, opts...)
}

func parseCollation(d bson.Raw) (*options.Collation, error) {
	a := newArgs("collation", d)
	c := &options.Collation{}
	var err error
	setStr := func(key string, dst *string) {
		if err == nil {
			*dst, _, err = a.str(key)
		}
	}
	setBool := func(key string, dst *bool) {
		if err == nil {
			*dst, _, err = a.boolean(key)
		}
	}
	setStr("locale", &c.Locale)
	setBool("caseLevel", &c.CaseLevel)
	setStr("caseFirst", &c.CaseFirst)
	setBool("numericOrdering", &c.NumericOrdering)
	setStr("alternate", &c.Alternate)
	setStr("maxVariable", &c.MaxVariable)
	setBool("normalization", &c.Normalization)
	setBool("backwards", &c.Backwards)
	if err != nil {
		return nil, err
	}
	if n, ok, err := a.integer("strength"); err != nil {
		return nil, err
	} else if ok {
		c.Strength = int(n)
	}
	return c, a.finish()
}

// collOptions reads collectionOptions / databaseOptions.
type rwOptions struct {
	rc *readconcern.ReadConcern
	wc *writeconcern.WriteConcern
	rp *readpref.ReadPref
}

func parseRWOptions(what string, d bson.Raw) (rwOptions, error) {
	var o rwOptions
	a := newArgs(what, d)
	if rc, ok, err := a.doc("readConcern"); err != nil {
		return o, err
	} else if ok {
		if o.rc, err = parseReadConcern(rc); err != nil {
			return o, err
		}
	}
	if wc, ok, err := a.doc("writeConcern"); err != nil {
		return o, err
	} else if ok {
		if o.wc, err = parseWriteConcern(wc); err != nil {
			return o, err
		}
	}
	if rp, ok, err := a.doc("readPreference"); err != nil {
		return o, err
	} else if ok {
		if o.rp, err = parseReadPreference(rp); err != nil {
			return o, err
		}
	}
	return o, a.finish()
}
