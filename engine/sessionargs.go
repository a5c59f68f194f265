package engine

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Ending or killing a logical session closes the cursors it owns and
// forgets its retryable writes (retryable.go).

// sessionIDs reads the array of {id: UUID} documents that names sessions.
func sessionIDs(req *request) ([]string, error) {
	v := req.body.Index(0).Value()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, wrongType(req.name, req.name, v, "array")
	}
	vals, _ := arr.Values()
	ids := make([]string, 0, len(vals))
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, wrongType(req.name, req.name, x, "object")
		}
		id, err := d.LookupErr("id")
		if err != nil {
			return nil, missingField(req.name, "id")
		}
		ids = append(ids, sessionKey(id))
	}
	return ids, nil
}

// sessionKey identifies a session by its lsid.id bytes.
func sessionKey(id bsoncore.Value) string { return string(id.Data) }

// requestSession returns the key of the request's lsid, or "".
func requestSession(body bsoncore.Document) string {
	v, err := body.LookupErr("lsid", "id")
	if err != nil {
		return ""
	}
	return sessionKey(v)
}
