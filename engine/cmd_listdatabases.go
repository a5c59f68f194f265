package engine

import (
	"context"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/query"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// visibleDatabases is, with access control on, the databases the
// connection's roles name when they do not cover every database (MongoDB's
// authorizedDatabases); nil means all.
func (e *Engine) visibleDatabases(c *conn) map[string]bool {
	if !e.cfg.Auth {
		return nil
	}
	u := c.user()
	if u == nil {
		return map[string]bool{}
	}
	if auth.SeesAllDatabases(u.roles) {
		return nil
	}
	out := map[string]bool{}
	for _, r := range u.roles {
		out[r.DB] = true
	}
	return out
}

// matchesD reports whether a reply entry built as bson.D matches filter
// (nil matches everything).
func matchesD(filter *query.Filter, d bson.D) (bool, error) {
	if filter == nil {
		return true, nil
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return false, err
	}
	return filter.Match(bsoncore.Document(raw)), nil
}

// parseListArgs reads listCollections' and listDatabases' fields: filter,
// nameOnly, and authorized (authorizedCollections or authorizedDatabases,
// accepted: a user sees what its roles allow either way); listCollections
// also takes cursor.
func parseListArgs(req *request, authorized string) (filter *query.Filter, nameOnly bool, batchSize int64, err error) {
	batchSize = -1
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch {
		case k == "filter":
			var d bsoncore.Document
			if d, err = docArg(req.name, k, v); err == nil {
				filter, err = compileFilter(d)
			}
		case k == "nameOnly":
			nameOnly, err = boolArg(req.name, k, v)
		case k == authorized:
			_, err = boolArg(req.name, k, v)
		case k == "cursor" && req.name == "listCollections":
			batchSize, err = cursorBatchSize(req.name, v)
		default:
			if !genericFields[k] {
				err = unknownField(req.name, k)
			}
		}
		if err != nil {
			return nil, false, -1, err
		}
	}
	return filter, nameOnly, batchSize, nil
}

// cmdListDatabases lists databases with sizeOnDisk (their data and _id key
// bytes) and empty, filtered by filter; nameOnly leaves the sizes out.
func (e *Engine) cmdListDatabases(_ context.Context, req *request) ([]byte, error) {
	filter, nameOnly, _, err := parseListArgs(req, "authorizedDatabases")
	if err != nil {
		return nil, err
	}
	dbs := bson.A{}
	var total int64
	visible := e.visibleDatabases(req.c)
	for _, name := range e.store.Databases() {
		if visible != nil && !visible[name] {
			continue
		}
		var size, docs int64
		colls := e.store.Collections(name)
		listed := 0
		for _, c := range colls {
			if e.store.Pending(c.ID) {
				continue // created by a transaction not yet committed
			}
			listed++
			counts, err := e.store.Counts(c)
			if err != nil {
				return nil, err
			}
			size += counts.Bytes + counts.IndexTotal()
			docs += counts.Docs
		}
		if listed == 0 && len(colls) > 0 && e.store.Database(name) == nil {
			continue // only pending collections: the database is not there yet
		}
		entry := bson.D{{Key: "name", Value: name}}
		if !nameOnly {
			entry = append(entry, bson.E{Key: "sizeOnDisk", Value: size}, bson.E{Key: "empty", Value: docs == 0})
		}
		if ok, err := matchesD(filter, entry); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		total += size
		dbs = append(dbs, entry)
	}
	if nameOnly {
		return okReply(bson.E{Key: "databases", Value: dbs})
	}
	return okReply(
		bson.E{Key: "databases", Value: dbs},
		bson.E{Key: "totalSize", Value: total},
		bson.E{Key: "totalSizeMb", Value: total >> 20},
	)
}
