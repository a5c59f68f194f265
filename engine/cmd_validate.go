package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdValidate checks a collection's secondary indexes against its
// documents (and the index byte counters against the entries), as
// MongoDB's validate checks index consistency: {valid, nIndexes,
// keysPerIndex, indexDetails, errors}.
func (e *Engine) cmdValidate(_ context.Context, req *request) ([]byte, error) {
	name, err := collectionArg(req)
	if err != nil {
		return nil, err
	}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); k {
		case "full", "repair", "metadata", "checkBSONConformance", "background", "scandata":
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if e.isView(req.db, name) {
		return nil, errorf(ErrCommandNotSupportedOnView, "Cannot validate a view")
	}
	c := e.store.Collection(req.db, name)
	if c == nil {
		return nil, errorf(ErrNamespaceNotFound, "Collection '%s' does not exist to validate.", namespaceOf(req.db, name))
	}
	counts, err := e.store.Counts(c)
	if err != nil {
		return nil, err
	}
	checks, err := e.store.ValidateIndexes(c)
	if err != nil {
		return nil, err
	}
	keys := bson.D{{Key: "_id_", Value: counts.Docs}}
	details := bson.D{{Key: "_id_", Value: bson.D{{Key: "valid", Value: true}}}}
	errs := bson.A{}
	for _, chk := range checks {
		valid := len(chk.Errors) == 0
		keys = append(keys, bson.E{Key: chk.Name, Value: chk.Keys})
		details = append(details, bson.E{Key: chk.Name, Value: bson.D{{Key: "valid", Value: valid}}})
		for _, m := range chk.Errors {
			errs = append(errs, chk.Name+": "+m)
		}
	}
	return okDoc(bson.D{
		{Key: "ns", Value: c.Namespace()},
		{Key: "nInvalidDocuments", Value: int32(0)},
		{Key: "nNonCompliantDocuments", Value: int32(0)},
		{Key: "nrecords", Value: counts.Docs},
		{Key: "nIndexes", Value: int32(1 + len(c.Indexes))},
		{Key: "keysPerIndex", Value: keys},
		{Key: "indexDetails", Value: details},
		{Key: "valid", Value: len(errs) == 0},
		{Key: "repaired", Value: false},
		{Key: "warnings", Value: bson.A{}},
		{Key: "errors", Value: errs},
		{Key: "extraIndexEntries", Value: bson.A{}},
		{Key: "missingIndexEntries", Value: bson.A{}},
		{Key: "corruptRecords", Value: bson.A{}},
	})
}
