package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parsecdb/parsec/console"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The HTTP listener: /metrics as Prometheus reads it, the console's
// JSON API, access control, and bad requests.

// httpGet fetches url (with basic auth when user is set) and returns the
// status and body.
func httpGet(t testing.TB, url, user, password string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// scrape reads /metrics and parses it as Prometheus does.
func scrape(t testing.TB, c *Console) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	status, body := httpGet(t, c.URL+"/metrics", "", "")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families, body
}

// metricValue is the value of family name's sample with labels (gauge,
// counter or untyped), and whether there is one.
func metricValue(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// loadSharded makes db.coll sharded by k over two partitions (12,000
// RU/s) with n documents over keys distinct values, and reads each once.
func loadSharded(t testing.TB, client *mongo.Client, db, coll string, n, keys int) {
	t.Helper()
	d := client.Database(db)
	runOK(t, d, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: coll},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 12000}})
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: fmt.Sprintf("key-%d", i%keys)}, {Key: "pad", Value: strings.Repeat("x", 200)}}
	}
	if _, err := d.Collection(coll).InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	for i := range min(n, 50) {
		if err := d.Collection(coll).FindOne(testCtx(t), bson.D{{Key: "k", Value: fmt.Sprintf("key-%d", i%keys)}, {Key: "_id", Value: int32(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConsoleMetrics(t *testing.T) {
	srv := StartServer(t, ServerOptions{Dir: t.TempDir()})
	con := StartConsole(t, srv, console.Options{MinRefresh: time.Millisecond})
	client := newTestClient(t, srv)
	db := "metricsdb"
	loadSharded(t, client, db, "orders", 600, 40)
	runOK(t, client.Database(db), bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "orders"}, {Key: "offerThroughput", Value: 30000}})

	families, body := scrape(t, con)

	// promtool check metrics' rules (promlint): names, units, help, types.
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for name, f := range families {
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		if f.GetType() == dto.MetricType_UNTYPED {
			t.Errorf("%s has no type", name)
		}
		if !model.IsValidLegacyMetricName(name) {
			t.Errorf("%s is not a valid metric name", name)
		}
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
		if !strings.HasPrefix(name, "parsec_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("%s: not parsec_, go_ or process_", name)
		}
	}
	for name, typ := range map[string]dto.MetricType{
		"parsec_partition_request_units_total":               dto.MetricType_COUNTER,
		"parsec_partition_normalized_ru_consumption_percent": dto.MetricType_GAUGE,
		"parsec_partition_throttled_requests_total":          dto.MetricType_COUNTER,
		"parsec_partition_would_throttle_requests_total":     dto.MetricType_COUNTER,
		"parsec_partition_documents":                         dto.MetricType_GAUGE,
		"parsec_partition_data_bytes":                        dto.MetricType_GAUGE,
		"parsec_partition_index_bytes":                       dto.MetricType_GAUGE,
		"parsec_partition_logical_partitions":                dto.MetricType_GAUGE,
		"parsec_collection_partition_splits_total":           dto.MetricType_COUNTER,
		"parsec_logical_partition_storage_bytes":             dto.MetricType_GAUGE,
		"parsec_logical_partition_request_units":             dto.MetricType_GAUGE,
		"parsec_command_duration_seconds":                    dto.MetricType_HISTOGRAM,
		"parsec_connections":                                 dto.MetricType_GAUGE,
		"parsec_cursors_open":                                dto.MetricType_GAUGE,
		"parsec_sessions":                                    dto.MetricType_GAUGE,
		"parsec_badger_lsm_size_bytes":                       dto.MetricType_GAUGE,
		"parsec_badger_vlog_size_bytes":                      dto.MetricType_GAUGE,
		"parsec_badger_memtable_flushes_total":               dto.MetricType_COUNTER,
		"parsec_badger_compaction_tables_written_total":      dto.MetricType_COUNTER,
		"go_goroutines":                                      dto.MetricType_GAUGE,
		"process_cpu_seconds_total":                          dto.MetricType_COUNTER,
	} {
		f := families[name]
		if f == nil {
			t.Errorf("no %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %s, want %s", name, f.GetType(), typ)
		}
	}

	// Per partition, the figures of GetPartitionStats.
	ps := getPartitionStats(t, client.Database(db), "orders")
	if len(ps.Partitions) != 3 {
		t.Fatalf("%d partitions after raising to 30,000 RU/s, want 3", len(ps.Partitions))
	}
	var docs float64
	for _, p := range ps.Partitions {
		l := map[string]string{"database": db, "collection": "orders", "partition": p.ID}
		got, ok := metricValue(families, "parsec_partition_documents", l)
		if !ok || got != float64(p.DocumentCount) {
			t.Errorf("partition %s: parsec_partition_documents %v (%v), GetPartitionStats %d", p.ID, got, ok, p.DocumentCount)
		}
		docs += got
		if got, _ := metricValue(families, "parsec_partition_data_bytes", l); got != float64(p.DataBytes) {
			t.Errorf("partition %s: data bytes %v, want %d", p.ID, got, p.DataBytes)
		}
		if got, _ := metricValue(families, "parsec_partition_logical_partitions", l); got != float64(p.LogicalCount) {
			t.Errorf("partition %s: logical partitions %v, want %d", p.ID, got, p.LogicalCount)
		}
	}
	if docs != 600 {
		t.Errorf("documents over partitions: %v, want 600", docs)
	}
	if got, _ := metricValue(families, "parsec_collection_partition_splits_total", map[string]string{"database": db, "collection": "orders"}); got != 1 {
		t.Errorf("splits: %v, want 1 (partition 0 or 1 split in two for 30,000 RU/s)", got)
	}
	var ruSum float64
	for _, m := range families["parsec_partition_request_units_total"].GetMetric() {
		ruSum += m.GetCounter().GetValue()
	}
	raw := runOK(t, client.Database(db), bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: "orders"}})
	var want float64 // the partitions now; the collection's total has the split one's too
	parts, _ := mustLookup(t, raw, "partitions").Array().Values()
	for _, p := range parts {
		want += floatOf(t, p.Document().Lookup("ruTotal"))
	}
	if ruSum < 600*2 || ruSum < want-0.01 || ruSum > want+0.01 {
		t.Errorf("RU charged over partitions: %v in /metrics, %v in GetPartitionStats", ruSum, want)
	}
	if n, ok := metricValue(families, "parsec_command_duration_seconds", map[string]string{"command": "find"}); !ok || n < 50 {
		t.Errorf("find commands counted: %v (%v), want at least 50", n, ok)
	}
	// Top-k shard-key values per partition only.
	if n := len(families["parsec_logical_partition_storage_bytes"].GetMetric()); n == 0 || n > 3*len(ps.Partitions) {
		t.Errorf("%d logical-partition series, want 1 to 3 per partition", n)
	}
	// Transactions in progress.
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(testCtx(t))
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(testCtx(t), sess)
	if _, err := client.Database(db).Collection("orders").InsertOne(sctx, bson.D{{Key: "_id", Value: -1}, {Key: "k", Value: "key-1"}}); err != nil {
		t.Fatal(err)
	}
	families, _ = scrape(t, con)
	if n, _ := metricValue(families, "parsec_transactions_open", nil); n != 1 {
		t.Errorf("parsec_transactions_open = %v in a transaction, want 1", n)
	}
	if n, _ := metricValue(families, "parsec_sessions", nil); n < 1 {
		t.Errorf("parsec_sessions = %v in a session, want at least 1", n)
	}
	if err := sess.CommitTransaction(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	families, _ = scrape(t, con)
	if n, ok := metricValue(families, "parsec_transactions_open", nil); !ok || n != 0 {
		t.Errorf("parsec_transactions_open = %v (%v) after the commit, want 0", n, ok)
	}

	// A name clients send that the server does not know lands in one bucket.
	_ = client.Database(db).RunCommand(testCtx(t), bson.D{{Key: "noSuchCommandAtAll", Value: 1}}).Err()
	families, _ = scrape(t, con)
	if _, ok := metricValue(families, "parsec_command_duration_seconds", map[string]string{"command": "noSuchCommandAtAll"}); ok {
		t.Error("an unknown command name became a label value")
	}
	if _, ok := metricValue(families, "parsec_command_duration_seconds", map[string]string{"command": "unknown"}); !ok {
		t.Error("no command=unknown series")
	}
}

func TestConsoleAPI(t *testing.T) {
	srv := StartServer(t, ServerOptions{Dir: t.TempDir()})
	con := StartConsole(t, srv, console.Options{MinRefresh: time.Millisecond, SampleEvery: 50 * time.Millisecond})
	client := newTestClient(t, srv)
	loadSharded(t, client, "apidb", "users", 300, 30)

	for _, path := range []string{"/nope", "/metrics/x", "/assets/", "/assets/nothing.js", "/api", "/api/nope"} {
		if status, _ := httpGet(t, con.URL+path, "", ""); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, status)
		}
	}
	if status, body := httpGet(t, con.URL+"/", "", ""); status != http.StatusOK || !bytes.Contains(body, []byte("console.js")) {
		t.Errorf("GET /: %d %.200s", status, body)
	}
	for _, asset := range []string{"/assets/console.js", "/assets/console.css", "/assets/uplot/uPlot.iife.min.js", "/assets/uplot/LICENSE"} {
		if status, _ := httpGet(t, con.URL+asset, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: %d", asset, status)
		}
	}
	if status, _ := httpGet(t, con.URL+"/api/collection?db=apidb&collection=none", "", ""); status != http.StatusNotFound {
		t.Errorf("missing collection: %d, want 404", status)
	}
	if status, _ := httpGet(t, con.URL+"/api/collection?db=apidb&collection=a$b", "", ""); status != http.StatusBadRequest {
		t.Errorf("bad collection name: %d, want 400", status)
	}
	if status, _ := httpGet(t, con.URL+"/api/partitions?top=x", "", ""); status != http.StatusBadRequest {
		t.Errorf("bad top: %d, want 400", status)
	}

	// /api/collection carries GetPartitionStats' reply.
	status, body := httpGet(t, con.URL+"/api/collection?db=apidb&collection=users", "", "")
	if status != http.StatusOK {
		t.Fatalf("/api/collection: %d %s", status, body)
	}
	var page struct {
		Stats struct {
			Partitions []struct {
				ID   string `json:"partitionKeyRangeId"`
				Docs int64  `json:"documentCount"`
			} `json:"partitions"`
		} `json:"stats"`
		Splits []any `json:"splits"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	ps := getPartitionStats(t, client.Database("apidb"), "users")
	if len(page.Stats.Partitions) != len(ps.Partitions) {
		t.Fatalf("%d partitions in the API, %d in GetPartitionStats", len(page.Stats.Partitions), len(ps.Partitions))
	}
	for i, p := range ps.Partitions {
		if got := page.Stats.Partitions[i]; got.ID != p.ID || got.Docs != p.DocumentCount {
			t.Errorf("partition %d: API %+v, GetPartitionStats %s with %d documents", i, got, p.ID, p.DocumentCount)
		}
	}

	// /api/advise is AnalyzePartitionKey's reply: bad requests are 400,
	// a missing collection 404.
	for _, c := range []struct {
		query  string
		status int
	}{
		{"db=apidb&collection=users", http.StatusBadRequest},
		{"db=apidb&collection=users&key=k&throughput=x", http.StatusBadRequest},
		{"db=apidb&collection=users&key=k&throughput=4000&autoscaleMax=4000", http.StatusBadRequest},
		{"db=apidb&collection=users&key=" + url.QueryEscape(`{"k": 1`), http.StatusBadRequest},
		{"db=apidb&collection=users&key=" + url.QueryEscape(`{"k": "sideways"}`), http.StatusBadRequest},
		{"db=apidb&collection=none&key=k", http.StatusNotFound},
	} {
		if status, body := httpGet(t, con.URL+"/api/advise?"+c.query, "", ""); status != c.status || !bytes.Contains(body, []byte(`"error"`)) {
			t.Errorf("/api/advise?%s: %d %s, want %d and an error", c.query, status, body, c.status)
		}
	}
	status, body = httpGet(t, con.URL+"/api/advise?db=apidb&collection=users&key=k&key="+url.QueryEscape(`{"_id": 1}`)+"&throughput=40000", "", "")
	if status != http.StatusOK {
		t.Fatalf("/api/advise: %d %s", status, body)
	}
	var advice struct {
		Candidates []struct {
			Key        string `json:"key"`
			Partitions int    `json:"physicalPartitions"`
			Verdict    string `json:"verdict"`
			Parts      []struct {
				ID    string `json:"partitionKeyRangeId"`
				Docs  int64  `json:"documentCount"`
				Bytes int64  `json:"dataBytes"`
			} `json:"partitions"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(body, &advice); err != nil {
		t.Fatal(err)
	}
	raw := runOK(t, client.Database("apidb"), bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: "users"},
		{Key: "keys", Value: bson.A{"k", bson.D{{Key: "_id", Value: 1}}}}, {Key: "offerThroughput", Value: 40000}})
	cands, _ := mustLookup(t, raw, "candidates").Array().Values()
	if len(advice.Candidates) != 2 || len(cands) != 2 {
		t.Fatalf("/api/advise: %d candidates, the command %d", len(advice.Candidates), len(cands))
	}
	for i, v := range cands {
		want, got := v.Document(), advice.Candidates[i]
		if got.Key != want.Lookup("key").StringValue() || int64(got.Partitions) != intOf(t, want.Lookup("physicalPartitions")) ||
			got.Verdict != want.Lookup("verdict").StringValue() || got.Partitions != 7 {
			t.Errorf("candidate %d: API %s, %d partitions, %s; the command %s", i, got.Key, got.Partitions, got.Verdict, want)
		}
		parts, _ := want.Lookup("partitions").Array().Values()
		if len(parts) != len(got.Parts) {
			t.Fatalf("candidate %s: %d partitions in the API, %d in the command", got.Key, len(got.Parts), len(parts))
		}
		for j, p := range parts {
			if d := p.Document(); got.Parts[j].ID != d.Lookup("partitionKeyRangeId").StringValue() || got.Parts[j].Docs != intOf(t, d.Lookup("documentCount")) || got.Parts[j].Bytes != intOf(t, d.Lookup("dataBytes")) {
				t.Errorf("candidate %s partition %d: API %+v, the command %s", got.Key, j, got.Parts[j], d)
			}
		}
	}

	// Slow clients hold only their own connections: 20 that send a
	// request and never read, and 20 that send half a request; the
	// database and other scrapes go on.
	for i := range 40 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(con.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
		if i%2 == 1 {
			req = "GET /metr"
		}
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for i := range 50 {
		if err := client.Database("apidb").Collection("users").FindOne(testCtx(t), bson.D{{Key: "k", Value: fmt.Sprintf("key-%d", i%30)}, {Key: "_id", Value: int32(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if status, _ := httpGet(t, con.URL+"/metrics", "", ""); status != http.StatusOK {
		t.Errorf("/metrics beside slow clients: %d", status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("50 reads and a scrape beside slow HTTP clients took %v", d)
	}

	// The heat map fills as the sampler runs.
	var hm struct {
		Times      []int64      `json:"times"`
		Partitions []string     `json:"partitions"`
		Normalized [][]*float64 `json:"normalized"`
	}
	waitFor(t, "heat map samples", func() bool {
		_, body := httpGet(t, con.URL+"/api/heatmap?db=apidb&collection=users", "", "")
		return json.Unmarshal(body, &hm) == nil && len(hm.Times) >= 2
	})
	if len(hm.Partitions) != len(ps.Partitions) || len(hm.Normalized) != len(hm.Partitions) || len(hm.Normalized[0]) != len(hm.Times) {
		t.Errorf("heat map shape: %d partitions, %d rows, times %d", len(hm.Partitions), len(hm.Normalized), len(hm.Times))
	}
}

func TestConsoleAuth(t *testing.T) {
	srv := StartServer(t, ServerOptions{Dir: t.TempDir(), Auth: true, RootUser: "root", RootPassword: "rootpw"})
	con := StartConsole(t, srv, console.Options{Auth: true})
	admin := userClient(t, srv, "root", "rootpw", "admin", "").Database("admin")
	runOK(t, admin, bson.D{{Key: "createUser", Value: "monitor"}, {Key: "pwd", Value: "m0nitor"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}}}})
	runOK(t, admin, bson.D{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "r3ader"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readAnyDatabase"}, {Key: "db", Value: "admin"}}}}})
	runOK(t, admin, bson.D{{Key: "createUser", Value: "legacy"}, {Key: "pwd", Value: "l3gacy"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}}}})

	for _, path := range []string{"/", "/metrics", "/api/server", "/assets/console.js", "/nope"} {
		status, body := httpGet(t, con.URL+path, "", "")
		if status != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", path, status)
		}
		if strings.Contains(string(body), "monitor") || len(body) > 20 {
			t.Errorf("GET %s: the 401 tells too much: %q", path, body)
		}
	}
	for _, c := range []struct{ user, password string }{{"monitor", "wrong"}, {"nobody", "m0nitor"}, {"reader", "r3ader"}, {"monitor", ""}} {
		status, body := httpGet(t, con.URL+"/metrics", c.user, c.password)
		if status != http.StatusUnauthorized || strings.TrimSpace(string(body)) != "Unauthorized" {
			t.Errorf("%s/%s: %d %q, want 401 Unauthorized and no more", c.user, c.password, status, body)
		}
	}
	for _, c := range []struct{ user, password string }{{"monitor", "m0nitor"}, {"root", "rootpw"}, {"legacy", "l3gacy"}} {
		for _, path := range []string{"/metrics", "/api/server", "/"} {
			if status, body := httpGet(t, con.URL+path, c.user, c.password); status != http.StatusOK {
				t.Errorf("%s GET %s: %d %.100s", c.user, path, status, body)
			}
		}
	}
	if status, _ := httpGet(t, con.URL+"/nope", "monitor", "m0nitor"); status != http.StatusNotFound {
		t.Errorf("unknown path with credentials: %d, want 404", status)
	}
	// A dropped user's password stops working at once.
	runOK(t, admin, bson.D{{Key: "dropUser", Value: "monitor"}})
	if status, _ := httpGet(t, con.URL+"/metrics", "monitor", "m0nitor"); status != http.StatusUnauthorized {
		t.Errorf("dropped user: %d, want 401", status)
	}
}

// BenchmarkMetricsScrape is one GET /metrics of a server holding a
// sharded collection of 10,000 documents over 1,000 shard-key values,
// its statistics recomputed at every scrape.
func BenchmarkMetricsScrape(b *testing.B) {
	srv := StartServer(b, ServerOptions{Dir: b.TempDir()})
	con := StartConsole(b, srv, console.Options{MinRefresh: time.Nanosecond, SampleEvery: time.Hour, StatsBudget: 1})
	client := newTestClient(b, srv)
	loadSharded(b, client, "bench", "scraped", 10_000, 1_000)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		status, body := httpGet(b, con.URL+"/metrics", "", "")
		if status != http.StatusOK {
			b.Fatal(status)
		}
		size = len(body)
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
