package engine

import (
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Query sampling, as MongoDB 7.0's query analyzer does it:
// configureQueryAnalyzer turns it on for one collection at a rate of at
// most samplesPerSecond; from then on the reads (find, aggregate, count,
// distinct) and writes (each statement of update and delete, and
// findAndModify) clients send to that collection are kept, up to the
// rate, with their filters and the request units the command cost.
// analyzeShardKey's readWriteDistribution and the AnalyzePartitionKey
// what-if replay them against a candidate key; $listSampledQueries lists
// them. Inserts are not sampled (MongoDB does not either): the what-if
// spreads the request units nobody sampled like the data.
//
// Samples live in memory, at most maxKeptSamples for the server, each
// for sampleExpiry (MongoDB's queryAnalysisSampleExpirationSecs): a
// restart forgets them, and the sampling configurations with them.

const (
	maxSamplesPerSecond = 50
	sampleExpiry        = 7 * 24 * time.Hour
	maxKeptSamples      = 100_000
)

// queryAnalyzer is the server's sampling state; its zero value samples
// nothing.
type queryAnalyzer struct {
	// active counts the collections being sampled, so that the hook costs
	// one atomic load when there are none.
	active atomic.Int32

	mu      sync.Mutex
	configs map[string]*samplingConfig // by namespace
	samples []*sampledQuery            // oldest first
}

// samplingConfig is one collection's sampling.
type samplingConfig struct {
	collUUID []byte // the collection sampled: a new one of the same name is not
	rate     float64
	tokens   float64 // the rate's bucket, one second deep
	refilled time.Time
	// seen and sampled count the statements the collection received since
	// sampling began and those kept: their ratio scales the samples'
	// request units up to the whole workload's.
	seen, sampled int64
}

// sampledQuery is one sampled read or write statement.
type sampledQuery struct {
	id       [16]byte
	ns       string
	collUUID []byte
	cmdName  string            // find, aggregate, count, distinct, update, delete, findAndModify
	cmd      bsoncore.Document // as $listSampledQueries shows it
	filter   bsoncore.Document // the statement's filter ({} when it has none)
	multi    bool              // a write that may change several documents
	update   bsoncore.Value    // an update's u (document or pipeline); zero for deletes
	at       time.Time
	ru       float64 // the request units the statement cost (its share of its command's)
}

// noSample is what sampleQuery returns when it kept nothing.
func noSample() {}

// sampleQuery keeps req as sampled queries when its collection is being
// sampled and the rate allows. The function it returns records what the
// command cost once it ran: dispatch defers it.
func (e *Engine) sampleQuery(name string, req *request) func() {
	if e.analyzer.active.Load() == 0 {
		return noSample
	}
	coll, ok := req.body.Index(0).Value().StringValueOK()
	if !ok {
		return noSample
	}
	ns := namespaceOf(req.db, coll)
	qa := &e.analyzer
	qa.mu.Lock()
	cfg := qa.configs[ns]
	qa.mu.Unlock()
	if cfg == nil {
		return noSample
	}
	if _, err := req.body.LookupErr("explain"); err == nil && name == "aggregate" {
		return noSample // aggregate with explain: true runs nothing
	}
	stmts := sampleStatements(name, coll, req)
	if len(stmts) == 0 {
		return noSample
	}
	c := e.store.Collection(req.db, coll)
	now := e.now()
	qa.mu.Lock()
	defer qa.mu.Unlock()
	if c == nil || string(c.UUID) != string(cfg.collUUID) {
		return noSample // dropped or renamed: MongoDB stops sampling it
	}
	cfg.tokens = min(cfg.tokens+now.Sub(cfg.refilled).Seconds()*cfg.rate, max(cfg.rate, 1))
	cfg.refilled = now
	var kept []*sampledQuery
	for _, s := range stmts {
		cfg.seen++
		if cfg.tokens < 1 {
			continue
		}
		cfg.tokens--
		cfg.sampled++
		s.ns, s.collUUID, s.at = ns, c.UUID, now
		// The request's bytes are reused once it is answered.
		s.filter = bsoncore.Document(append([]byte(nil), s.filter...))
		s.update.Data = append([]byte(nil), s.update.Data...)
		_, _ = rand.Read(s.id[:])
		s.id[6] = s.id[6]&0x0f | 0x40 // a version 4 UUID, as MongoDB's sample ids are
		s.id[8] = s.id[8]&0x3f | 0x80
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		return noSample
	}
	qa.keep(now, kept)
	n := float64(len(stmts))
	return func() {
		charge := req.units.Charge() / n
		qa.mu.Lock()
		for _, s := range kept {
			s.ru = charge
		}
		qa.mu.Unlock()
	}
}

// keep adds samples, dropping those expired or past the cap. qa.mu is
// held.
func (qa *queryAnalyzer) keep(now time.Time, add []*sampledQuery) {
	drop := 0
	for drop < len(qa.samples) && now.Sub(qa.samples[drop].at) > sampleExpiry {
		drop++
	}
	if over := len(qa.samples) - drop + len(add) - maxKeptSamples; over > 0 {
		drop = min(drop+over, len(qa.samples))
	}
	if drop > 0 {
		qa.samples = append(qa.samples[:0], qa.samples[drop:]...)
	}
	qa.samples = append(qa.samples, add...)
}

// sampleStatements are the statements of a read or write command as
// samples (without their identity, which sampleQuery fills in).
func sampleStatements(name, coll string, req *request) []*sampledQuery {
	body := req.body
	lookupDoc := func(d bsoncore.Document, key string) bsoncore.Document {
		if v, err := d.LookupErr(key); err == nil {
			if doc, ok := v.DocumentOK(); ok {
				return doc
			}
		}
		return noFilter
	}
	read := func(filter bsoncore.Document) []*sampledQuery {
		b := bsoncore.NewDocumentBuilder().AppendDocument("filter", filter)
		for _, k := range []string{"collation", "let"} {
			if d := lookupDoc(body, k); len(d) > len(noFilter) {
				b.AppendDocument(k, d)
			}
		}
		return []*sampledQuery{{cmdName: name, cmd: b.Build(), filter: filter}}
	}
	switch name {
	case "find":
		return read(lookupDoc(body, "filter"))
	case "count", "distinct":
		return read(lookupDoc(body, "query"))
	case "aggregate":
		filter := noFilter
		if v, err := body.LookupErr("pipeline", "0", "$match"); err == nil {
			if d, ok := v.DocumentOK(); ok {
				filter = d
			}
		}
		return read(filter)
	case "update", "delete":
		field, q := "updates", "q"
		if name == "delete" {
			field = "deletes"
		}
		var stmts []bsoncore.Document
		if v, err := body.LookupErr(field); err == nil {
			if arr, ok := v.ArrayOK(); ok {
				for el := range value.All(arr) {
					if d, ok := el.Value().DocumentOK(); ok {
						stmts = append(stmts, d)
					}
				}
			}
		} else if docs, ok := req.sequence(field); ok {
			for _, d := range docs {
				stmts = append(stmts, d)
			}
		}
		out := make([]*sampledQuery, 0, len(stmts))
		for _, st := range stmts {
			s := &sampledQuery{cmdName: name, filter: lookupDoc(st, q)}
			if name == "update" {
				s.update, _ = st.LookupErr("u")
				if v, err := st.LookupErr("multi"); err == nil {
					s.multi = v.Boolean()
				}
			} else if v, err := st.LookupErr("limit"); err == nil {
				n, _ := numberFloat(v)
				s.multi = n == 0
			}
			arr := bsoncore.NewArrayBuilder().AppendDocument(st).Build()
			s.cmd = bsoncore.NewDocumentBuilder().AppendString(name, coll).AppendArray(field, arr).Build()
			out = append(out, s)
		}
		return out
	case "findAndModify":
		s := &sampledQuery{cmdName: name, filter: lookupDoc(body, "query")}
		s.update, _ = body.LookupErr("update")
		b := bsoncore.NewDocumentBuilder()
		for el := range value.All(body) {
			if k := el.Key(); k == "$db" || k == "lsid" || k == "txnNumber" || k == "$clusterTime" || strings.HasPrefix(k, "$") {
				continue
			}
			b.AppendValue(el.Key(), el.Value())
		}
		s.cmd = b.Build()
		return []*sampledQuery{s}
	}
	return nil
}

var noFilter = bsoncore.Document(bsoncore.NewDocumentBuilder().Build())

// samplesOf are the live samples of the collection ns (its current
// incarnation, uuid), copied, and the collection's sampling fraction
// (sampled / seen statements; 0 when it is not sampled now).
func (qa *queryAnalyzer) samplesOf(ns string, uuid []byte, now time.Time) ([]sampledQuery, float64) {
	qa.mu.Lock()
	defer qa.mu.Unlock()
	var out []sampledQuery
	for _, s := range qa.samples {
		if s.ns == ns && string(s.collUUID) == string(uuid) && now.Sub(s.at) <= sampleExpiry {
			out = append(out, *s)
		}
	}
	fraction := 0.0
	if cfg := qa.configs[ns]; cfg != nil && cfg.seen > 0 && string(cfg.collUUID) == string(uuid) {
		fraction = float64(cfg.sampled) / float64(cfg.seen)
	}
	return out, fraction
}

// listSampledQueries are the documents $listSampledQueries returns:
// every live sample, or those of one namespace.
func (e *Engine) listSampledQueries(spec bsoncore.Document) ([]bsoncore.Document, error) {
	ns, hasNS := "", false
	for el := range value.All(spec) {
		switch k, v := el.Key(), el.Value(); k {
		case "namespace":
			s, err := stringArg("$listSampledQueries", k, v)
			if err != nil {
				return nil, err
			}
			db, coll, ok := strings.Cut(s, ".")
			if !ok || db == "" || coll == "" {
				return nil, errorf(ErrInvalidNamespace, "Invalid namespace specified '%s'", s)
			}
			ns, hasNS = s, true
		default:
			return nil, errorf(ErrFailedToParse, "Unrecognized option '%s' in $listSampledQueries stage.", k)
		}
	}
	now := e.now()
	qa := &e.analyzer
	qa.mu.Lock()
	defer qa.mu.Unlock()
	var out []bsoncore.Document
	for _, s := range qa.samples {
		if (hasNS && s.ns != ns) || now.Sub(s.at) > sampleExpiry {
			continue
		}
		out = append(out, bsoncore.NewDocumentBuilder().
			AppendBinary("_id", bson.TypeBinaryUUID, s.id[:]).
			AppendString("ns", s.ns).
			AppendBinary("collectionUuid", bson.TypeBinaryUUID, s.collUUID).
			AppendString("cmdName", s.cmdName).
			AppendDocument("cmd", s.cmd).
			AppendDateTime("expireAt", s.at.Add(sampleExpiry).UnixMilli()).
			Build())
	}
	return out, nil
}

// leadingStageSpec is the argument of a pipeline's first stage when that
// stage is name.
func leadingStageSpec(pipeline bsoncore.Document, name string) (bsoncore.Document, bool) {
	v, err := pipeline.LookupErr("0")
	if err != nil {
		return nil, false
	}
	stage, ok := v.DocumentOK()
	if !ok {
		return nil, false
	}
	el, err := stage.IndexErr(0)
	if err != nil || el.Key() != name {
		return nil, false
	}
	spec, _ := el.Value().DocumentOK() // a wrong type is the stage parser's to refuse
	return spec, true
}
