package engine

import "go.mongodb.org/mongo-driver/v2/bson"

// catalogStats is serverStatus.catalogStats as MongoDB 7.0 counts it:
// collections of the internal databases (admin, config, local) apart
// from the others. Parsec has no capped, clustered or time-series
// collections and no views.
func (e *Engine) catalogStats() bson.D {
	var user, internal int32
	for _, db := range e.store.Databases() {
		for _, c := range e.store.Collections(db) {
			if e.store.Pending(c.ID) {
				continue // created by a transaction not yet committed
			}
			if db == "admin" || db == "config" || db == "local" {
				internal++
			} else {
				user++
			}
		}
	}
	return bson.D{
		{Key: "collections", Value: user},
		{Key: "capped", Value: int32(0)},
		{Key: "clustered", Value: int32(0)},
		{Key: "timeseries", Value: int32(0)},
		{Key: "views", Value: int32(0)},
		{Key: "internalCollections", Value: internal},
		{Key: "internalViews", Value: int32(0)},
	}
}
