package agg

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// panicking is a partition stream whose reads panic.
type panicking struct{}

func (panicking) Next(context.Context) (bsoncore.Document, error) { panic("a partition's read failed") }
func (panicking) Close()                                          {}

// TestUnionRecoversPanics: a partition's branch of a pipeline that panics
// on its goroutine fails the pipeline with a *PanicError; the process and
// the other branches go on.
func TestUnionRecoversPanics(t *testing.T) {
	p, err := Parse(parseArray(t, `[{"$match": {}}]`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}})
	u := newUnion(p, []Iterator{Docs([]bsoncore.Document{doc}), panicking{}, Docs(nil)}, 2)
	defer u.Close()
	var got error
	for range 10 {
		d, err := u.Next(context.Background())
		if err != nil {
			got = err
			break
		}
		if d == nil {
			break
		}
	}
	var pe *PanicError
	if !errors.As(got, &pe) || pe.Value != "a partition's read failed" {
		t.Fatalf("union over a panicking partition: %v", got)
	}
}
