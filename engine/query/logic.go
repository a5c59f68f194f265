package query

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// andPred matches when every predicate does (an empty one always does).
// It passes the state on, so the positional key of its last child that
// matched through an array wins, as in MongoDB.
type andPred []predicate

func (a andPred) match(doc bsoncore.Document, st *state) bool {
	for _, p := range a {
		if !p.match(doc, st) {
			return false
		}
	}
	return true
}

// orPred matches when some predicate does. MongoDB records no positional
// key under $or, and neither does Parsec.
type orPred []predicate

func (o orPred) match(doc bsoncore.Document, st *state) bool {
	sub := errOnly(st)
	for _, p := range o {
		if p.match(doc, sub) {
			propagateErr(st, sub)
			return true
		}
	}
	propagateErr(st, sub)
	return false
}

// norPred matches when no predicate does.
type norPred []predicate

func (n norPred) match(doc bsoncore.Document, st *state) bool {
	sub := errOnly(st)
	for _, p := range n {
		if p.match(doc, sub) {
			propagateErr(st, sub)
			return false
		}
	}
	propagateErr(st, sub)
	return true
}

// notPred negates a predicate on the whole document (so {a: {$ne: 1}}
// refuses [1, 2]: some element equals 1).
type notPred struct{ p predicate }

func (n notPred) match(doc bsoncore.Document, st *state) bool {
	sub := errOnly(st)
	ok := !n.p.match(doc, sub)
	propagateErr(st, sub)
	return ok
}

// constPred is $alwaysTrue, $alwaysFalse, and what {$in: []} becomes.
type constPred bool

func (c constPred) match(bsoncore.Document, *state) bool { return bool(c) }

// errOnly returns a fresh state for a child whose positional key must not
// leak into st (under $or, $nor, $not), or nil when st is nil.
func errOnly(st *state) *state {
	if st == nil {
		return nil
	}
	return &state{pos: -1}
}

func propagateErr(st, sub *state) {
	if st != nil && sub != nil && st.err == nil {
		st.err = sub.err
	}
}

// pathPred matches when some value its path reaches satisfies vm.
type pathPred struct {
	path   []string
	vm     valueMatcher
	expand bool // look at the elements of an array the path ends at
}

func (p *pathPred) match(doc bsoncore.Document, st *state) bool {
	if st == nil {
		return walk(doc, p.path, p.expand, func(v bsoncore.Value, _ int) bool {
			return p.vm.matchValue(v, nil)
		})
	}
	return walk(doc, p.path, p.expand, func(v bsoncore.Value, pos int) bool {
		if !p.vm.matchValue(v, st) {
			return false
		}
		if pos >= 0 {
			st.pos = pos
		}
		return true
	})
}

// existsPred is $exists: true: the path reaches some value.
type existsPred struct{ path []string }

func (p *existsPred) match(doc bsoncore.Document, _ *state) bool {
	return walk(doc, p.path, false, func(v bsoncore.Value, _ int) bool { return v.Type != missing })
}
