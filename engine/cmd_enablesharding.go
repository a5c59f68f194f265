package engine

import "context"

// cmdEnableSharding accepts {enableSharding: "db"}: every database of
// Parsec can hold sharded collections, so there is nothing to do but
// check the name (MongoDB 6.0+ needs the command no more either).
func (e *Engine) cmdEnableSharding(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	db, ok := v.StringValueOK()
	if !ok {
		return nil, wrongType(req.name, req.name, v, "string")
	}
	if err := validateDBName(db); err != nil {
		return nil, err
	}
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); k {
		case "primaryShard":
			if _, err := stringArg(req.name, k, el.Value()); err != nil {
				return nil, err
			}
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	return okReply()
}
