package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdConfigureQueryAnalyzer turns query sampling on or off for one
// collection (queryanalyzer.go), as MongoDB 7.0 does:
//
//	{configureQueryAnalyzer: "db.coll", mode: "full", samplesPerSecond: n}   0 < n <= 50
//	{configureQueryAnalyzer: "db.coll", mode: "off"}
//
// and replies {ok: 1, newConfiguration: {mode, samplesPerSecond},
// oldConfiguration: ...} (oldConfiguration when the collection had one).
// Sampling stops by itself when the collection is dropped or renamed.
func (e *Engine) cmdConfigureQueryAnalyzer(_ context.Context, req *request) ([]byte, error) {
	v := req.body.Index(0).Value()
	ns, err := stringArg(req.name, req.name, v)
	if err != nil {
		return nil, err
	}
	mode, hasMode := "", false
	rate, hasRate := 0.0, false
	elems, _ := req.body.Elements()
	for _, el := range elems[1:] {
		k, v := el.Key(), el.Value()
		switch k {
		case "mode":
			if mode, err = stringArg(req.name, k, v); err != nil {
				return nil, err
			}
			if mode != "full" && mode != "off" {
				return nil, errorf(ErrBadValue, "Enumeration value '%s' for field '%s.mode' is not a valid value.", mode, req.name)
			}
			hasMode = true
		case "samplesPerSecond":
			f, ok := numberFloat(v)
			if !ok {
				return nil, wrongType(req.name, k, v, "double")
			}
			rate, hasRate = f, true
		case "readConcern", "writeConcern":
			return nil, errorf(ErrInvalidOptions, "Command %s does not support %s", req.name, k)
		default:
			if !genericFields[k] {
				return nil, unknownField(req.name, k)
			}
		}
	}
	if !hasMode {
		return nil, missingField(req.name, "mode")
	}
	switch {
	case mode == "off" && hasRate:
		return nil, errorf(ErrInvalidOptions, "Cannot specify 'samplesPerSecond' when 'mode' is \"off\"")
	case mode == "full" && !hasRate:
		return nil, errorf(ErrInvalidOptions, "'samplesPerSecond' must be specified when 'mode' is \"full\"")
	case mode == "full" && (rate <= 0 || rate > maxSamplesPerSecond):
		return nil, errorf(ErrInvalidOptions, "'samplesPerSecond' must be greater than 0 and at most %d, got %v", maxSamplesPerSecond, rate)
	}
	c, ce := e.analyzableCollection(ns)
	switch {
	case ce == nil:
	case ce.Code != ErrNamespaceNotFound:
		return nil, ce
	case mode == "full":
		return nil, errorf(ErrNamespaceNotFound, "Cannot analyze queries for a non-existing collection %s", ns)
		// turning off a dropped collection's sampling is allowed
	}
	qa := &e.analyzer
	qa.mu.Lock()
	defer qa.mu.Unlock()
	old := qa.configs[ns]
	fields := []bson.E{}
	if mode == "full" {
		if qa.configs == nil {
			qa.configs = map[string]*samplingConfig{}
		}
		cfg := &samplingConfig{collUUID: c.UUID, rate: rate, tokens: max(rate, 1), refilled: e.now()}
		if old != nil && string(old.collUUID) == string(c.UUID) {
			cfg.seen, cfg.sampled = old.seen, old.sampled // the what-if's scale goes on
		}
		qa.configs[ns] = cfg
		if old == nil {
			qa.active.Add(1)
		}
		fields = append(fields, bson.E{Key: "newConfiguration", Value: bson.D{{Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: rate}}})
	} else {
		if old != nil {
			delete(qa.configs, ns)
			qa.active.Add(-1)
		}
		fields = append(fields, bson.E{Key: "newConfiguration", Value: bson.D{{Key: "mode", Value: "off"}}})
	}
	if old != nil {
		fields = append(fields, bson.E{Key: "oldConfiguration", Value: bson.D{{Key: "mode", Value: "full"}, {Key: "samplesPerSecond", Value: old.rate}}})
	}
	return okReply(fields...)
}
