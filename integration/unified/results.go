package unified

import (
	"errors"
	"sort"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// opResult is what an operation produced: a BSON value, the documents of
// an iterable (matched element by element as root documents), or an
// entity (change stream) for saveResultAsEntity; plus its error.
type opResult struct {
	value  bson.RawValue
	docs   []bson.Raw
	isDocs bool
	entity any
	err    error
}

func valueResult(v any, err error) opResult {
	if err != nil {
		return opResult{err: err}
	}
	return opResult{value: mustValue(v)}
}

func docsResult(docs []bson.Raw, err error) opResult {
	if docs == nil {
		docs = []bson.Raw{}
	}
	return opResult{docs: docs, isDocs: true, err: err}
}

// errResult is an operation that returned only an error (or nothing).
func errResult(err error) opResult { return opResult{err: err} }

// singleDocResult turns a SingleResult into a document, or null when
// nothing matched.
func singleDocResult(sr *mongo.SingleResult) opResult {
	raw, err := sr.Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return opResult{value: bson.RawValue{Type: bson.TypeNull}}
	}
	if err != nil {
		return opResult{err: err}
	}
	return opResult{value: docValue(raw)}
}

// The CRUD spec's result models as documents.

func withAck(d bson.D, acknowledged bool) bson.D {
	if !acknowledged {
		d = append(d, bson.E{Key: "acknowledged", Value: false})
	}
	return d
}

func insertOneDoc(r *mongo.InsertOneResult) bson.D {
	return withAck(bson.D{{Key: "insertedId", Value: r.InsertedID}}, r.Acknowledged)
}

// insertManyDoc is an insertMany result in BulkWriteResult form.
// insertedIds maps statement indexes to ids, which the driver only keeps
// for every document when nothing failed; otherwise the optional field is
// left out.
func insertManyDoc(r *mongo.InsertManyResult, total int) bson.D {
	d := bson.D{
		{Key: "insertedCount", Value: int64(len(r.InsertedIDs))},
		{Key: "deletedCount", Value: int64(0)},
		{Key: "matchedCount", Value: int64(0)},
		{Key: "modifiedCount", Value: int64(0)},
		{Key: "upsertedCount", Value: int64(0)},
		{Key: "upsertedIds", Value: bson.D{}},
	}
	if len(r.InsertedIDs) == total {
		ids := bson.D{}
		for i, id := range r.InsertedIDs {
			ids = append(ids, bson.E{Key: strconv.Itoa(i), Value: id})
		}
		d = append(d, bson.E{Key: "insertedIds", Value: ids})
	}
	return withAck(d, r.Acknowledged)
}

func updateDoc(r *mongo.UpdateResult) bson.D {
	d := bson.D{
		{Key: "matchedCount", Value: r.MatchedCount},
		{Key: "modifiedCount", Value: r.ModifiedCount},
		{Key: "upsertedCount", Value: r.UpsertedCount},
	}
	if r.UpsertedID != nil {
		d = append(d, bson.E{Key: "upsertedId", Value: r.UpsertedID})
	}
	return withAck(d, r.Acknowledged)
}

func deleteDoc(r *mongo.DeleteResult) bson.D {
	return withAck(bson.D{{Key: "deletedCount", Value: r.DeletedCount}}, r.Acknowledged)
}

// bulkWriteDoc leaves out insertedIds, which the Go driver does not
// report (the CRUD spec makes it optional).
func bulkWriteDoc(r *mongo.BulkWriteResult) bson.D {
	idx := make([]int64, 0, len(r.UpsertedIDs))
	for i := range r.UpsertedIDs {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	ups := bson.D{}
	for _, i := range idx {
		ups = append(ups, bson.E{Key: strconv.FormatInt(i, 10), Value: r.UpsertedIDs[i]})
	}
	return withAck(bson.D{
		{Key: "deletedCount", Value: r.DeletedCount},
		{Key: "insertedCount", Value: r.InsertedCount},
		{Key: "matchedCount", Value: r.MatchedCount},
		{Key: "modifiedCount", Value: r.ModifiedCount},
		{Key: "upsertedCount", Value: r.UpsertedCount},
		{Key: "upsertedIds", Value: ups},
	}, r.Acknowledged)
}

func clientBulkWriteDoc(r *mongo.ClientBulkWriteResult) bson.D {
	d := bson.D{
		{Key: "insertedCount", Value: r.InsertedCount},
		{Key: "upsertedCount", Value: r.UpsertedCount},
		{Key: "matchedCount", Value: r.MatchedCount},
		{Key: "modifiedCount", Value: r.ModifiedCount},
		{Key: "deletedCount", Value: r.DeletedCount},
	}
	if r.HasVerboseResults {
		ins, upd, del := bson.D{}, bson.D{}, bson.D{}
		for _, i := range sortedKeys(r.InsertResults) {
			ins = append(ins, bson.E{Key: strconv.Itoa(i), Value: bson.D{{Key: "insertedId", Value: r.InsertResults[i].InsertedID}}})
		}
		for _, i := range sortedKeys(r.UpdateResults) {
			u := r.UpdateResults[i]
			ud := bson.D{{Key: "matchedCount", Value: u.MatchedCount}, {Key: "modifiedCount", Value: u.ModifiedCount}}
			if u.UpsertedID != nil {
				ud = append(ud, bson.E{Key: "upsertedId", Value: u.UpsertedID})
			}
			upd = append(upd, bson.E{Key: strconv.Itoa(i), Value: ud})
		}
		for _, i := range sortedKeys(r.DeleteResults) {
			del = append(del, bson.E{Key: strconv.Itoa(i), Value: bson.D{{Key: "deletedCount", Value: r.DeleteResults[i].DeletedCount}}})
		}
		d = append(d, bson.E{Key: "insertResults", Value: ins}, bson.E{Key: "updateResults", Value: upd}, bson.E{Key: "deleteResults", Value: del})
	}
	return withAck(d, r.Acknowledged)
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
