package engine

import "go.mongodb.org/mongo-driver/v2/bson"

// catalogStats is serverStatus.catalogStats as MongoDB 7.0 counts it:
// collections of the internal databases (admin, config, local) apart
// from the others. Parsec has no clustered or time-series collections.
func (e *Engine) catalogStats() bson.D {
	var user, internal, views, internalViews, capped int32
	for _, db := range e.store.Databases() {
		n := int32(len(e.store.ViewDefinitions(db)))
		if db == "admin" || db == "config" || db == "local" {
			internalViews += n
		} else {
			views += n
		}
		for _, c := range e.store.Collections(db) {
			if e.store.Pending(c.ID) {
				continue // created by a transaction not yet committed
			}
			if c.Capped {
				capped++
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
		{Key: "capped", Value: capped},
		{Key: "clustered", Value: int32(0)},
		{Key: "timeseries", Value: int32(0)},
		{Key: "views", Value: views},
		{Key: "internalCollections", Value: internal},
		{Key: "internalViews", Value: internalViews},
	}
}
