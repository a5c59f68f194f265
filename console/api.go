package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parsecdb/parsec/engine"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The JSON API the page polls (every 2 s) and `parsec stats --http`
// reads. Every answer is computed into memory first, then written.

// writeJSON writes v as JSON with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, b)
}

func writeBody(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// writeError answers an engine error: 404 for a collection that does not
// exist, 400 for a bad name, 500 for anything else.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var ce *engine.CommandError
	if errors.As(err, &ce) {
		status = http.StatusBadRequest
		if ce.Code == engine.ErrNamespaceNotFound {
			status = http.StatusNotFound
		}
	}
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// serverView is /api/server.
type serverView struct {
	Version       string            `json:"version"`
	MongoVersion  string            `json:"mongoVersion"`
	Host          string            `json:"host"`
	Started       time.Time         `json:"started"`
	UptimeSeconds float64           `json:"uptimeSeconds"`
	Persistent    bool              `json:"persistent"`
	Connections   int64             `json:"connections"`
	Cursors       int64             `json:"cursors"`
	Sessions      int64             `json:"sessions"`
	RateLimiting  bool              `json:"rateLimiting"`
	RUPerSecond   float64           `json:"ruPerSecond"` // the last minute's average
	RULastSecond  float64           `json:"ruLastSecond"`
	RUTotal       float64           `json:"ruTotal"`
	Throttled     int64             `json:"throttledRequests"`
	WouldThrottle int64             `json:"wouldHaveBeenThrottledRequests"`
	Partitions    int64             `json:"physicalPartitions"`
	MemoryBytes   uint64            `json:"memoryBytes"`
	HeapBytes     uint64            `json:"heapBytes"`
	LSMBytes      int64             `json:"lsmBytes"`
	VlogBytes     int64             `json:"vlogBytes"`
	Databases     []databaseView    `json:"databases"`
	Splits        []splitView       `json:"recentSplits"`
	Commands      []commandRateView `json:"commands"`
	Error         string            `json:"error,omitempty"`
}

type databaseView struct {
	Name        string           `json:"name"`
	Collections []collectionView `json:"collections"`
}

type collectionView struct {
	Name         string  `json:"name"`
	ShardKey     string  `json:"shardKey"`
	Throughput   string  `json:"throughput"`
	Partitions   int     `json:"partitions"`
	Documents    int64   `json:"documents"`
	StorageBytes int64   `json:"storageBytes"`
	RUPerSecond  float64 `json:"ruPerSecond"`
	Normalized   float64 `json:"normalizedRUConsumption"`
	Throttled    int64   `json:"throttled"`
}

type commandRateView struct {
	Name        string  `json:"name"`
	Count       uint64  `json:"count"`
	MeanSeconds float64 `json:"meanSeconds"`
}

type splitView struct {
	Time       time.Time `json:"time"`
	Database   string    `json:"database"`
	Collection string    `json:"collection"`
	Parent     string    `json:"parent"`
	Children   []string  `json:"children"`
	Reason     string    `json:"reason"`
	Bytes      int64     `json:"bytes"`
	DurationMS float64   `json:"durationMs"`
}

func splitsView(evs []engine.SplitEvent, db, coll string) []splitView {
	out := []splitView{}
	for _, ev := range evs {
		if db != "" && (ev.DB != db || ev.Collection != coll) {
			continue
		}
		children := make([]string, len(ev.Children))
		for i, c := range ev.Children {
			children[i] = strconv.Itoa(c)
		}
		out = append(out, splitView{Time: ev.Time, Database: ev.DB, Collection: ev.Collection, Parent: strconv.Itoa(ev.Parent),
			Children: children, Reason: ev.Reason, Bytes: ev.Bytes, DurationMS: float64(ev.Duration.Microseconds()) / 1000})
	}
	return out
}

// throughputString describes a collection's throughput.
func (c *collectionStats) throughputString() string {
	switch {
	case c.Shared:
		return "shared with its database"
	case c.AutoScale != nil:
		return fmt.Sprintf("autoscale max %.0f RU/s", c.AutoScale.MaxThroughput)
	default:
		return fmt.Sprintf("%.0f RU/s", c.Provisioned)
	}
}

func (s *Server) apiServer(w http.ResponseWriter, r *http.Request) {
	snap := s.eng.Snapshot()
	v := serverView{
		Version: snap.Version, MongoVersion: snap.MongoVersion, Host: snap.Host, Started: snap.Started,
		UptimeSeconds: snap.Uptime.Seconds(), Persistent: snap.Persistent,
		Connections: snap.Connections, Cursors: snap.Cursors, Sessions: snap.Sessions,
		RateLimiting: snap.RateLimiting, RUPerSecond: snap.RULastMinute / 60, RULastSecond: snap.RULastSecond,
		RUTotal: snap.RUTotal, Throttled: snap.Throttled, WouldThrottle: snap.WouldHaveThrottled,
		Partitions: snap.PhysicalPartitions, MemoryBytes: snap.MemorySys, HeapBytes: snap.HeapInUse,
		LSMBytes: snap.Storage.LSMBytes, VlogBytes: snap.Storage.VlogBytes,
		Databases: []databaseView{}, Commands: []commandRateView{},
	}
	v.Splits = splitsView(s.eng.Splits(time.Now().Add(-s.opts.History)), "", "")
	if len(v.Splits) > 20 {
		v.Splits = v.Splits[len(v.Splits)-20:]
	}
	for _, t := range s.eng.CommandTimings() {
		v.Commands = append(v.Commands, commandRateView{Name: t.Name, Count: t.Count, MeanSeconds: t.Seconds / float64(max(t.Count, 1))})
	}
	sort.Slice(v.Commands, func(i, j int) bool { return v.Commands[i].Count > v.Commands[j].Count })
	colls, err := s.cache.get(r.Context())
	if err != nil {
		v.Error = err.Error()
	}
	byDB := map[string]int{}
	for i := range colls {
		c := &colls[i]
		di, ok := byDB[c.Database]
		if !ok {
			di = len(v.Databases)
			byDB[c.Database] = di
			v.Databases = append(v.Databases, databaseView{Name: c.Database})
		}
		var storage int64
		for _, p := range c.Partitions {
			storage += p.StorageBytes
		}
		v.Databases[di].Collections = append(v.Databases[di].Collections, collectionView{
			Name: c.Collection, ShardKey: c.shardKeyPattern(), Throughput: c.throughputString(),
			Partitions: len(c.Partitions), Documents: c.DocumentCount, StorageBytes: storage,
			RUPerSecond: c.RU.RULastMinute / 60, Normalized: c.RU.Normalized, Throttled: c.RU.Throttled + c.RU.WouldThrottle,
		})
	}
	writeJSON(w, v)
}

// collectionPage is /api/collection: the collection's GetPartitionStats
// reply (relaxed extended JSON, as the shell prints it), its splits in
// the history window, and the warnings the page shows.
type collectionPage struct {
	Stats json.RawMessage `json:"stats"`
	// ShardKey is the key's pattern as the shell writes it ("": unsharded).
	ShardKey string      `json:"shardKey"`
	Splits   []splitView `json:"splits"`
	Warnings []string    `json:"warnings"`
	Window   float64     `json:"windowSeconds"`
}

func (s *Server) apiCollection(w http.ResponseWriter, r *http.Request) {
	db, coll := r.URL.Query().Get("db"), r.URL.Query().Get("collection")
	if db == "" || coll == "" {
		writeError(w, &engine.CommandError{Code: engine.ErrInvalidNamespace, Msg: "db and collection are required"})
		return
	}
	raw, err := s.eng.PartitionStatsDocument(r.Context(), db, coll, statsTop)
	if err != nil {
		writeError(w, err)
		return
	}
	var cs collectionStats
	if err := bson.Unmarshal(raw, &cs); err != nil {
		writeError(w, err)
		return
	}
	js, err := bson.MarshalExtJSON(raw, false, false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, collectionPage{
		Stats:    js,
		ShardKey: cs.shardKeyPattern(),
		Splits:   splitsView(s.eng.Splits(time.Now().Add(-s.opts.History)), db, coll),
		Warnings: warnings(&cs),
		Window:   s.opts.History.Seconds(),
	})
}

// apiPartitions is GetPartitionStats' reply as relaxed extended JSON: db
// (default admin) and collection as in the command, top (default 3).
func (s *Server) apiPartitions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	db := q.Get("db")
	if db == "" {
		db = "admin"
	}
	top := 3
	if t := q.Get("top"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > 1000 {
			writeError(w, &engine.CommandError{Code: engine.ErrBadValue, Msg: "top must be a number from 0 to 1000"})
			return
		}
		top = n
	}
	raw, err := s.eng.PartitionStatsDocument(r.Context(), db, q.Get("collection"), top)
	writeReply(w, raw, err)
}

// writeReply writes a command's reply as relaxed extended JSON (as the
// shell prints it), or its error.
func writeReply(w http.ResponseWriter, raw bson.Raw, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	js, err := bson.MarshalExtJSON(raw, false, false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, js)
}

// apiAdvise is the what-if of candidate partition keys for a collection
// ({customAction: "AnalyzePartitionKey"}'s reply as relaxed extended
// JSON): db, collection, key (repeated: a path, hashed, or a key pattern
// such as {"ts": 1}), and throughput or autoscaleMax (RU/s; neither: the
// collection's own), sampleSize.
func (s *Server) apiAdvise(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := engine.AdviseRequest{DB: q.Get("db"), Collection: q.Get("collection")}
	for _, k := range q["key"] {
		if k = strings.TrimSpace(k); k != "" {
			req.Keys = append(req.Keys, k)
		}
	}
	for _, f := range []struct {
		name string
		to   *int64
	}{{"throughput", &req.Throughput}, {"autoscaleMax", &req.AutoscaleMax}, {"sampleSize", &req.SampleSize}} {
		name, to := f.name, f.to
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, &engine.CommandError{Code: engine.ErrBadValue, Msg: name + " must be a whole number of 0 or more"})
			return
		}
		*to = n
	}
	select {
	case s.advising <- struct{}{}:
		defer func() { <-s.advising }()
	case <-r.Context().Done():
		writeError(w, r.Context().Err())
		return
	}
	raw, err := s.eng.Advise(r.Context(), req)
	writeReply(w, raw, err)
}

func (s *Server) apiHeatmap(w http.ResponseWriter, r *http.Request) {
	db, coll := r.URL.Query().Get("db"), r.URL.Query().Get("collection")
	writeJSON(w, s.history.heatmap(db+"."+coll, heatmapRows))
}

// warnings explain what is uneven in a collection: a partition holding
// far more than its share, a logical partition holding a third of the
// collection or close to its limit, a partition at 100% normalized RU.
func warnings(c *collectionStats) []string {
	out := []string{}
	n := len(c.Partitions)
	var total int64
	for _, p := range c.Partitions {
		total += p.StorageBytes
	}
	if n > 1 && total > 0 {
		mean := float64(total) / float64(n)
		for _, p := range c.Partitions {
			if ratio := float64(p.StorageBytes) / mean; ratio >= 1.5 {
				out = append(out, fmt.Sprintf("Skewed: partition %s holds %.0f%% of the storage, %.1f× the mean of %d partitions.", p.ID, float64(p.StorageBytes)/float64(total)*100, ratio, n))
			}
		}
	}
	for _, p := range c.Partitions {
		for _, lp := range p.Largest {
			size := lp.DataBytes + lp.IndexBytes
			if total > 0 && c.LogicalCount > 1 && float64(size)/float64(total) >= 1.0/3 {
				out = append(out, fmt.Sprintf("Skewed: shard-key value %s holds %.0f%% of the collection's storage (one of %d logical partitions).", valueString(lp.ShardKey), float64(size)/float64(total)*100, c.LogicalCount))
			}
			if lim := c.Limits.LogicalPartitionMaxBytes; lim > 0 && float64(size) >= 0.8*float64(lim) {
				out = append(out, fmt.Sprintf("Logical partition %s holds %.0f%% of the %d bytes a shard-key value may hold.", valueString(lp.ShardKey), float64(size)/float64(lim)*100, lim))
			}
		}
	}
	for _, p := range c.Partitions {
		if p.RU.Normalized >= 100 {
			over := fmt.Sprintf("%d requests throttled", p.RU.Throttled)
			if !c.RateLimiting {
				over = fmt.Sprintf("%d requests would have been throttled (rate limiting is off)", p.RU.WouldThrottle)
			}
			out = append(out, fmt.Sprintf("Hot: partition %s reached 100%% normalized RU consumption (busiest second %.0f%% of its %.0f RU/s); %s.", p.ID, max(p.RU.Uncapped, p.RU.Normalized), p.ThroughputShare, over))
		}
	}
	return out
}
