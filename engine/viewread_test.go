package engine

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustRaw(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestFindAsAggregate: find on a view becomes $match, $sort, $skip,
// $limit, $project in that order whatever the order of find's fields,
// with batchSize as the cursor's and the generic fields kept.
func TestFindAsAggregate(t *testing.T) {
	body := mustRaw(t, bson.D{
		{Key: "find", Value: "v"},
		{Key: "projection", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "limit", Value: int32(5)},
		{Key: "skip", Value: int64(2)},
		{Key: "sort", Value: bson.D{{Key: "a", Value: -1}}},
		{Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}}},
		{Key: "batchSize", Value: int32(3)},
		{Key: "maxTimeMS", Value: int32(1000)},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: "x"}}},
	})
	out, err := findAsAggregate("v", body)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Aggregate string   `bson:"aggregate"`
		Pipeline  []bson.D `bson:"pipeline"`
		Cursor    bson.D   `bson:"cursor"`
		MaxTimeMS int32    `bson:"maxTimeMS"`
		Lsid      bson.D   `bson:"lsid"`
	}
	if err := bson.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, st := range got.Pipeline {
		stages = append(stages, st[0].Key)
	}
	if !slices.Equal(stages, []string{"$match", "$sort", "$skip", "$limit", "$project"}) {
		t.Errorf("stages %v", stages)
	}
	if got.Aggregate != "v" || got.MaxTimeMS != 1000 || len(got.Lsid) != 1 || got.Cursor[0].Value != int64(3) {
		t.Errorf("aggregate %+v", got)
	}

	// An empty filter makes no $match; singleBatch with limit 1 (FindOne)
	// is kept as a batch of two, so that no cursor stays open.
	out, err = findAsAggregate("v", mustRaw(t, bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "batchSize", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := bson.Raw(out).Lookup("pipeline").String(); got != `[{"$limit": {"$numberLong":"1"}}]` {
		t.Errorf("pipeline %s", got)
	}
	if got := bson.Raw(out).Lookup("cursor", "batchSize").Int64(); got != 2 {
		t.Errorf("batchSize %d", got)
	}
	for _, tc := range []struct {
		field bson.E
		msg   string
	}{
		{bson.E{Key: "min", Value: bson.D{{Key: "a", Value: 1}}}, "Option min not supported in aggregation."},
		{bson.E{Key: "showRecordId", Value: true}, "Option showRecordId not supported in aggregation."},
		{bson.E{Key: "noCursorTimeout", Value: true}, "Option noCursorTimeout not supported in aggregation."},
		{bson.E{Key: "singleBatch", Value: true}, "Option singleBatch not supported in aggregation."},
	} {
		_, err := findAsAggregate("v", mustRaw(t, bson.D{{Key: "find", Value: "v"}, tc.field}))
		if ce, ok := err.(*CommandError); !ok || ce.Code != ErrInvalidPipelineOperator || ce.Msg != tc.msg {
			t.Errorf("%v: %v", tc.field, err)
		}
	}
	if _, err := findAsAggregate("v", mustRaw(t, bson.D{{Key: "find", Value: "v"}, {Key: "noCursorTimeout", Value: false}})); err != nil {
		t.Errorf("noCursorTimeout: false: %v", err)
	}
}

// TestDistinctAsAggregate: every array on the key's path is unwound
// before the values are gathered.
func TestDistinctAsAggregate(t *testing.T) {
	out, err := distinctAsAggregate("v", mustRaw(t, bson.D{{Key: "distinct", Value: "v"}, {Key: "key", Value: "a.b"}, {Key: "query", Value: bson.D{{Key: "x", Value: 1}}}}))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"$match": {"x": {"$numberInt":"1"}}},` +
		`{"$unwind": {"path": "$a","preserveNullAndEmptyArrays": true}},` +
		`{"$unwind": {"path": "$a.b","preserveNullAndEmptyArrays": true}},` +
		`{"$group": {"_id": null,"distinct": {"$addToSet": "$a.b"}}}]`
	if got := bson.Raw(out).Lookup("pipeline").String(); got != want {
		t.Errorf("pipeline %s", got)
	}
}

// TestPipelineNamespaces: the namespaces a view's pipeline reads, for the
// cycle check.
func TestPipelineNamespaces(t *testing.T) {
	arr := func(stages ...bson.D) bsoncore.Document {
		b := bsoncore.NewArrayBuilder()
		for _, st := range stages {
			b.AppendDocument(mustRaw(t, st))
		}
		return bsoncore.Document(b.Build())
	}
	p := arr(
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "a"}, {Key: "as", Value: "x"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$unionWith", Value: "b"}}}}}}},
		bson.D{{Key: "$facet", Value: bson.D{{Key: "f", Value: bson.A{bson.D{{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "c"}}}}}}}}},
		bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "d"}}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "from", Value: "e"}}}},
	)
	if got := pipelineNamespaces(p); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("pipelineNamespaces = %v", got)
	}
}
