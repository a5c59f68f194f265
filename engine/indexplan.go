package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/parsecdb/parsec/engine/plan"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explain's view of reads through an index: a secondary index's plan
// (engine/plan chooses it) and the shard-key index, as MongoDB prints
// their IXSCAN stages and bounds.

// predicate is a plan's condition on an index field as explain renders
// it.
type predicate struct {
	op   string
	v    bsoncore.Value
	vals []bsoncore.Value // $in
}

// indexBounds are explain's indexBounds of an index plan: per field, the
// interval strings of its predicates.
func indexBounds(ip *plan.IndexPlan) bson.D {
	out := make(bson.D, 0, len(ip.Bounds))
	for _, b := range ip.Bounds {
		if b.Interval != "" {
			out = append(out, bson.E{Key: b.Path, Value: bson.A{b.Interval}})
			continue
		}
		ps := make([]predicate, len(b.Preds))
		for i, p := range b.Preds {
			ps[i] = predicate{op: p.Op, v: p.V, vals: p.Vals}
		}
		out = append(out, bson.E{Key: b.Path, Value: describeBounds(ps, b.FirstOnly)})
	}
	return out
}

// describeBounds renders predicates as explain's interval strings.
func describeBounds(ps []predicate, firstOnly bool) bson.A {
	var out bson.A
	var lo, hi string = "MinKey", "MaxKey"
	loIn, hiIn := true, true
	for _, p := range ps {
		switch p.op {
		case "$eq":
			s := shellString(p.v)
			return bson.A{"[" + s + ", " + s + "]"}
		case "$in":
			for i, v := range p.vals {
				if i == maxExplainedBounds {
					out = append(out, fmt.Sprintf("... %d more", len(p.vals)-i))
					break
				}
				s := shellString(v)
				out = append(out, "["+s+", "+s+"]")
			}
			return out
		case "$gt", "$gte":
			lo, loIn = shellString(p.v), p.op == "$gte"
			if hi == "MaxKey" {
				hi, hiIn = bracketEnd(p.v, true), true
			}
		case "$lt", "$lte":
			hi, hiIn = shellString(p.v), p.op == "$lte"
			if lo == "MinKey" {
				lo, loIn = bracketEnd(p.v, false), true
			}
		}
		if firstOnly {
			break
		}
	}
	l, r := "[", "]"
	if !loIn {
		l = "("
	}
	if !hiIn {
		r = ")"
	}
	return bson.A{l + lo + ", " + hi + r}
}

// bracketEnd names the end of a value's type bracket as MongoDB's bounds
// print it.
func bracketEnd(v bsoncore.Value, upper bool) string {
	switch value.TypeRank(v.Type) {
	case value.TypeRank(bsoncore.TypeDouble):
		if upper {
			return "inf.0"
		}
		return "-inf.0"
	case value.TypeRank(bsoncore.TypeString):
		if upper {
			return "{}"
		}
		return `""`
	}
	if upper {
		return "MaxKey"
	}
	return "MinKey"
}

// indexStages is explain's FETCH over IXSCAN (or over an OR of IXSCANs).
func indexStages(p *readPlan, filter bsoncore.Document, st planStats, withStats func(bson.D, int64, ...bson.E) bson.D) bson.D {
	ixscan := func(ip *plan.IndexPlan, keys int64) bson.D {
		ix := ip.Ix
		dir := "forward"
		if ip.Reverse {
			dir = "backward"
		}
		var multi bson.D
		for _, f := range ix.Fields {
			multi = append(multi, bson.E{Key: f.Path, Value: bson.A{}})
		}
		stage := bson.D{
			{Key: "stage", Value: "IXSCAN"},
			{Key: "keyPattern", Value: ix.Key},
			{Key: "indexName", Value: ix.Name},
		}
		if len(ix.Collation) > 0 {
			stage = append(stage, bson.E{Key: "collation", Value: ix.Collation})
		}
		return withStats(append(stage, bson.D{
			{Key: "isMultiKey", Value: ix.Multikey || ix.Wildcard},
			{Key: "multiKeyPaths", Value: multi},
			{Key: "isUnique", Value: ix.IsUnique()},
			{Key: "isSparse", Value: ix.Sparse},
			{Key: "isPartial", Value: len(ix.Partial) > 0},
			{Key: "indexVersion", Value: int32(2)},
			{Key: "direction", Value: dir},
			{Key: "indexBounds", Value: indexBounds(ip)},
		}...), keys, bson.E{Key: "keysExamined", Value: keys}, bson.E{Key: "seeks", Value: int64(ip.Seeks())})
	}
	var input bson.D
	if p.Index.Branches == nil {
		input = ixscan(p.Index, st.KeysExamined)
	} else {
		var subs bson.A
		for _, b := range p.Index.Branches {
			subs = append(subs, ixscan(b, b.KeysExamined))
		}
		input = withStats(bson.D{{Key: "stage", Value: "OR"}, {Key: "inputStages", Value: subs}}, st.DocsExamined)
	}
	fetch := bson.D{{Key: "stage", Value: "FETCH"}}
	if len(filter) > 5 {
		fetch = append(fetch, bson.E{Key: "filter", Value: bson.Raw(filter)})
	}
	fetch = withStats(fetch, st.Returned, bson.E{Key: "docsExamined", Value: st.DocsExamined})
	return append(fetch, bson.E{Key: "inputStage", Value: input})
}

// maxExplainedBounds caps the intervals explain lists for a shard-key
// read of many values.
const maxExplainedBounds = 1000

// shardKeyBounds are explain's intervals, per field of the shard key, of
// a read of the logical partitions filter pins: MongoDB's index bounds,
// one [v, v] per distinct value of the field, by hash for a hashed field.
func shardKeyBounds(c *store.Collection, filter bsoncore.Document) bson.D {
	spec := c.Spec()
	fields := spec.Fields()
	out := make(bson.D, 0, len(fields))
	vals, ok := spec.Values(filter)
	for i, f := range fields {
		if !ok {
			out = append(out, bson.E{Key: f.Path, Value: bson.A{"[MinKey, MaxKey]"}})
			continue
		}
		var bounds []string
		var hashes []int64
		seen := map[string]bool{}
		for _, v := range vals {
			if spec.Compound() {
				v = v.Document().Index(uint(i)).Value()
			}
			if f.Hashed {
				hashes = append(hashes, shard.Hash(v))
				continue
			}
			if r := value.Render(v); !seen[r] {
				seen[r] = true
				bounds = append(bounds, "["+r+", "+r+"]")
			}
		}
		if f.Hashed {
			slices.Sort(hashes)
			hashes = slices.Compact(hashes)
			for _, h := range hashes {
				s := strconv.FormatInt(h, 10)
				bounds = append(bounds, "["+s+", "+s+"]")
			}
		}
		list := bson.A{}
		for j, b := range bounds {
			if j == maxExplainedBounds {
				list = append(list, "... "+strconv.Itoa(len(bounds)-j)+" more")
				break
			}
			list = append(list, b)
		}
		out = append(out, bson.E{Key: f.Path, Value: list})
	}
	return out
}

// shardKeyStages is explain's FETCH over IXSCAN of the shard-key index
// for a read of logical partitions: the keys examined are the documents
// of those logical partitions read.
func shardKeyStages(c *store.Collection, filter bsoncore.Document, st planStats, withStats func(bson.D, int64, ...bson.E) bson.D) bson.D {
	ixscan := withStats(bson.D{
		{Key: "stage", Value: "IXSCAN"},
		{Key: "keyPattern", Value: plan.ShardKeyIndexKey(c)},
		{Key: "indexName", Value: plan.ShardKeyIndexName(c)},
		{Key: "isMultiKey", Value: false},
		{Key: "isUnique", Value: false},
		{Key: "isSparse", Value: false},
		{Key: "isPartial", Value: false},
		{Key: "indexVersion", Value: int32(2)},
		{Key: "direction", Value: "forward"},
		{Key: "indexBounds", Value: shardKeyBounds(c, filter)},
	}, st.KeysExamined, bson.E{Key: "keysExamined", Value: st.KeysExamined})
	fetch := bson.D{{Key: "stage", Value: "FETCH"}}
	if len(filter) > 5 {
		fetch = append(fetch, bson.E{Key: "filter", Value: bson.Raw(filter)})
	}
	fetch = withStats(fetch, st.Returned, bson.E{Key: "docsExamined", Value: st.DocsExamined})
	return append(fetch, bson.E{Key: "inputStage", Value: ixscan})
}
