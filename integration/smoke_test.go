package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestSmoke(t *testing.T) {
	s := StartServer(t, ServerOptions{})
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	if err := client.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	coll := client.Database("smoke").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := 2; i <= 300; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "x", Value: "b"}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["x"] != "a" {
		t.Fatalf("got %v", got)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "x", Value: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 299 {
		t.Fatalf("got %d docs", len(all))
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("want dup key, got %v", err)
	}
	res, err := coll.DeleteMany(ctx, bson.D{{Key: "x", Value: "b"}})
	if err != nil || res.DeletedCount != 299 {
		t.Fatalf("delete: %v %v", res, err)
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	t.Log(n, err)
}
