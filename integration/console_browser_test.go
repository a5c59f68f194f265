package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/parsecdb/parsec/console"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The console in a real browser: Debian's chromium, headless, driven by
// chromedp. Screenshots of each page go to integration/screenshots/.

// screenshotDir is where TestConsoleBrowser saves its PNGs (.ci/run
// prints it).
const screenshotDir = "screenshots"

// findChromium is Debian's chromium (make clients installs it).
func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run `make clients` (apt-get install -y chromium)")
	return ""
}

// browserErrors collects what the page reports as errors: console.error
// calls, uncaught exceptions, and the browser's own error entries
// (failed loads, CSP violations).
type browserErrors struct {
	mu   sync.Mutex
	list []string
}

func (b *browserErrors) add(s string) {
	b.mu.Lock()
	b.list = append(b.list, s)
	b.mu.Unlock()
}

func (b *browserErrors) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.list...)
}

// pagePartition is one bar of the storage chart as the page shows it.
type pagePartition struct {
	ID      string `json:"id"`
	Docs    int64  `json:"docs"`
	Storage int64  `json:"storage"`
	Text    string `json:"text"`
}

const readPartitions = `[...document.querySelectorAll('#partitions .partition')].map(e => ({
	id: e.dataset.id, docs: +e.dataset.docs, storage: +e.dataset.storage,
	text: e.querySelector('.docs').textContent}))`

func TestConsoleBrowser(t *testing.T) {
	chromium := findChromium(t)
	srv := StartServer(t, ServerOptions{Dir: t.TempDir()})
	con := StartConsole(t, srv, console.Options{MinRefresh: 50 * time.Millisecond, SampleEvery: 250 * time.Millisecond})
	client := newTestClient(t, srv)
	const dbn, coll = "shop", "orders"
	loadSharded(t, client, dbn, coll, 2000, 400)
	d := client.Database(dbn)

	// Load: point reads over every key, plus a hot key, until the test
	// ends (or 3 minutes pass).
	loadCtx, stopLoad := context.WithTimeout(context.Background(), 3*time.Minute)
	var loaders sync.WaitGroup
	t.Cleanup(func() { stopLoad(); loaders.Wait() })
	for w := range 2 {
		loaders.Add(1)
		go func() {
			defer loaders.Done()
			c := d.Collection(coll)
			for i := w; loadCtx.Err() == nil; i += 2 {
				k := i % 2000
				if i%3 == 0 {
					k = 7 // a hot logical partition
				}
				_ = c.FindOne(loadCtx, bson.D{{Key: "k", Value: fmt.Sprintf("key-%d", k%400)}, {Key: "_id", Value: int32(k)}}).Err()
			}
		}()
	}

	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1100), chromedp.Flag("headless", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// Start the browser, then read its console messages as they come.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	var errs browserErrors
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				errs.add(fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
			}
		}
	}()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v (browser errors: %v)", what, err, errs.all())
		}
	}
	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(screenshotDir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(path)
		t.Logf("screenshot: %s", abs)
	}
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			t.Fatalf("waiting for %s: %v (browser errors: %v)", what, err, errs.all())
		}
	}
	eval := func(what, expr string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err == nil {
			err = json.Unmarshal(v, out)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// checkPartitions compares the page's partitions with GetPartitionStats.
	checkPartitions := func(want int) {
		t.Helper()
		poll(fmt.Sprintf("%d partitions on the page", want), fmt.Sprintf("document.querySelectorAll('#partitions .partition').length === %d", want))
		var page []pagePartition
		eval("reading the partitions", readPartitions, &page)
		ps := getPartitionStats(t, d, coll)
		if len(page) != len(ps.Partitions) {
			t.Fatalf("page shows %d partitions, GetPartitionStats %d", len(page), len(ps.Partitions))
		}
		for i, p := range ps.Partitions {
			got := page[i]
			storage := p.DataBytes + p.IndexBytes
			if got.ID != p.ID || got.Docs != p.DocumentCount || got.Text != commas(p.DocumentCount) {
				t.Errorf("partition %d: page %+v, GetPartitionStats id %s, %d documents", i, got, p.ID, p.DocumentCount)
			}
			if got.Storage < storage {
				t.Errorf("partition %s: page storage %d, GetPartitionStats data+index %d", p.ID, got.Storage, storage)
			}
		}
		// The RU bars: each partition's share of the throughput.
		var shares []struct {
			ID    string  `json:"id"`
			Share float64 `json:"share"`
		}
		eval("reading the RU bars", `[...document.querySelectorAll('#ru-bars .partition')].map(e => ({id: e.dataset.id, share: +e.dataset.share}))`, &shares)
		raw := runOK(t, d, bson.D{{Key: "customAction", Value: "GetPartitionStats"}, {Key: "collection", Value: coll}})
		parts, _ := mustLookup(t, raw, "partitions").Array().Values()
		if len(shares) != len(parts) {
			t.Fatalf("%d RU bars, %d partitions", len(shares), len(parts))
		}
		for i, v := range parts {
			p := v.Document()
			if id, share := p.Lookup("partitionKeyRangeId").StringValue(), p.Lookup("throughputShare").Double(); shares[i].ID != id || shares[i].Share != share {
				t.Errorf("RU bar %d: page %+v, GetPartitionStats partition %s with %v RU/s", i, shares[i], id, share)
			}
		}
	}

	do("opening the collection page", chromedp.Navigate(con.URL+"/#/c/"+dbn+"/"+coll))
	checkPartitions(2)
	poll("the shard key", `document.querySelector('#shard-key .value').textContent === '{k: "hashed"}'`)
	poll("heat-map cells", `document.querySelectorAll('#heatmap .cell:not(.empty)').length >= 4`)
	poll("RU consumed on the page", `[...document.querySelectorAll('#ru-bars .figures')].some(e => !e.textContent.startsWith('0.00 /'))`)
	poll("top logical partitions", `document.querySelectorAll('#top-storage tr.top-storage').length > 0 && document.querySelectorAll('#top-ru tr.top-ru').length > 0`)
	poll("the RU chart", `document.querySelector('#ru-chart canvas') !== null && document.getElementById('ru-chart').dataset.span !== undefined`)
	// Its time axis spans the samples, at most the hour the console
	// keeps (with samples of one second uPlot stretched it to 1,000 days).
	var span float64
	eval("reading the chart's time axis", `+document.getElementById('ru-chart').dataset.span`, &span)
	if span <= 0 || span > 3600 {
		t.Errorf("the RU chart's time axis spans %v s", span)
	}
	screenshot("console-collection.png")

	// The partition-key what-if: two candidates at 40,000 RU/s, side by
	// side as AnalyzePartitionKey answers them.
	do("asking the what-if",
		chromedp.SetValue(chromedp.CSS("#advise-keys"), "k\n{\"_id\": 1}"),
		chromedp.SetValue(chromedp.CSS("#advise-mode"), "throughput"),
		chromedp.SetValue(chromedp.CSS("#advise-rus"), "40000"),
		chromedp.Click(chromedp.CSS("#advise-run")))
	poll("the what-if's answer", `document.querySelectorAll('#advice .candidate-detail').length === 2`)
	advice := runOK(t, d, bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: coll},
		{Key: "keys", Value: bson.A{"k", bson.D{{Key: "_id", Value: 1}}}}, {Key: "offerThroughput", Value: 40000}})
	cands, _ := mustLookup(t, advice, "candidates").Array().Values()
	var shown []struct {
		Key        string  `json:"key"`
		Verdict    string  `json:"verdict"`
		Partitions int     `json:"partitions"`
		Bytes      []int64 `json:"bytes"`
		Count      string  `json:"count"`
	}
	eval("reading the what-if", `[...document.querySelectorAll('#advice .candidate-detail')].map((e, i) => ({
		key: e.dataset.key, verdict: e.querySelector('.verdict').textContent,
		partitions: e.querySelectorAll('.partition.what-if').length,
		bytes: [...e.querySelectorAll('.partition.what-if')].map(p => +p.dataset.bytes),
		count: document.querySelectorAll('#advice tr.partitions td')[i].textContent}))`, &shown)
	if len(shown) != len(cands) {
		t.Fatalf("the page shows %d candidates, AnalyzePartitionKey %d", len(shown), len(cands))
	}
	for i, v := range cands {
		want := v.Document()
		parts, _ := want.Lookup("partitions").Array().Values()
		got := shown[i]
		if got.Key != want.Lookup("key").StringValue() || got.Verdict != want.Lookup("verdict").StringValue() ||
			got.Partitions != len(parts) || got.Count != fmt.Sprint(intOf(t, want.Lookup("physicalPartitions"))) {
			t.Errorf("candidate %d on the page: %+v; AnalyzePartitionKey: %s", i, got, want)
			continue
		}
		for j, p := range parts {
			if b := intOf(t, p.Document().Lookup("dataBytes")); got.Bytes[j] != b {
				t.Errorf("candidate %s partition %d: %d bytes on the page, %d in AnalyzePartitionKey", got.Key, j, got.Bytes[j], b)
			}
		}
	}
	do("scrolling to the what-if", chromedp.ScrollIntoView(chromedp.CSS("#advisor")))
	screenshot("console-advisor.png")
	// A bad key pattern shows the server's error in the panel.
	do("asking about a bad key",
		chromedp.SetValue(chromedp.CSS("#advise-keys"), "{\"k\": \"sideways\"}"),
		chromedp.Click(chromedp.CSS("#advise-run")))
	poll("the what-if's error", `(document.querySelector('#advice .advise-error') || {}).textContent?.includes('sideways')`)

	// A split shows without reloading: 50,000 RU/s needs 5 partitions,
	// so both partitions split (one of them twice: three children).
	var before string
	eval("marking the page", `window.__notReloaded = true; document.querySelectorAll('#splits tr.split').length + ''`, &before)
	runOK(t, d, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: coll}, {Key: "offerThroughput", Value: 50000}})
	checkPartitions(5)
	poll("the splits on the timeline", `document.querySelectorAll('#splits tr.split').length === 2 && document.querySelectorAll('#splits .timeline .mark').length === 2`)
	poll("heat-map rows of the new partitions", `[...document.querySelectorAll('#partitions .partition')].every(p =>
		document.querySelector('#heatmap .cell[data-partition="' + p.dataset.id + '"]') !== null)`)
	var kept bool
	eval("checking the page was not reloaded", `window.__notReloaded === true`, &kept)
	if !kept || before != "0" {
		t.Errorf("the page reloaded (%v) or showed splits before any (%s)", !kept, before)
	}
	screenshot("console-collection-split.png")

	// The server page lists the collection and the splits.
	do("opening the server page", chromedp.Navigate(con.URL+"/#/"))
	poll("the collection row", fmt.Sprintf(`document.querySelector('tr.collection[data-ns="%s.%s"]') !== null`, dbn, coll))
	poll("recent splits", `document.querySelectorAll('#recent-splits tr.split').length === 2`)
	poll("partition count", `document.querySelector('#partition-count .value').textContent === '5'`)
	screenshot("console-server.png")

	// An unknown collection shows an error in the page, not in the console.
	do("opening a missing collection", chromedp.Navigate(con.URL+"/#/c/"+dbn+"/none"))
	poll("the error", `document.getElementById('status').textContent.startsWith('error:')`)

	if e := errs.all(); len(e) > 0 {
		// The missing collection's 404 and the bad key's 400 are the only
		// errors the browser may log.
		var others []string
		for _, s := range e {
			if !strings.Contains(s, "404") && !(strings.Contains(s, "400") && strings.Contains(s, "sideways")) {
				others = append(others, s)
			}
		}
		if len(others) > 0 {
			t.Errorf("browser errors: %v", others)
		}
	}
}

// commas writes n as the page does (en locale: 12,345).
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
