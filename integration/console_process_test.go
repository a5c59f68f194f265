package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// `parsec serve` with its HTTP listener, and the log that tells what
// happened: splits, throughput changes, index builds, would-be throttles.

var consoleURLRE = regexp.MustCompile(`msg="console and metrics" url=(http://127\.0\.0\.1:\d+/)`)

// waitLog polls p's log until it has a line matching re.
func waitLog(t *testing.T, p *proc, what string, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, l := range strings.Split(p.log(), "\n") {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line for %s (%s) within %v:\n%s", what, re, within, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeHTTPAndLog(t *testing.T) {
	t.Parallel()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0",
		"--partition-max-bytes", "64KiB")
	url := waitLog(t, p, "the console's address", consoleURLRE, 10*time.Second)[1]
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(body.String(), "parsec_build_info{") || !strings.Contains(body.String(), "go_goroutines") {
		t.Errorf("GET /metrics: %d\n%.500s", resp.StatusCode, body.String())
	}

	c := connect(t, p.addr)
	db := c.Database("logs")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "events"},
		{Key: "shardKey", Value: "k"}, {Key: "offerThroughput", Value: 400}}).Err(); err != nil {
		t.Fatal(err)
	}
	// 200 KB over 100 shard-key values: past 64 KiB the partition splits.
	var docs []any
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 100}, {Key: "pad", Value: strings.Repeat("p", 1000)}})
	}
	if _, err := db.Collection("events").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	split := waitLog(t, p, "a size split", regexp.MustCompile(`msg="partition split" collection=logs\.events parent=0 children=(\d+),(\d+) reason=size bytes=(\d+) duration=\S+ partitions=2`), 10*time.Second)
	if n, _ := strconv.Atoi(split[3]); split[1] == split[2] || n <= 64<<10 {
		t.Errorf("split line: %q", split[0])
	}

	// The size splits made 4 partitions at most; 100,000 RU/s needs 10.
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "events"}, {Key: "offerThroughput", Value: 100000}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "the throughput change", regexp.MustCompile(`msg="throughput changed" collection=logs\.events from="400 RU/s" to="100000 RU/s" partitions_before=\d+ partitions=10`), 5*time.Second)
	waitLog(t, p, "the throughput split", regexp.MustCompile(`msg="partition split" collection=logs\.events parent=\d+ children=\d+(,\d+)+ reason=throughput`), 5*time.Second)

	if _, err := db.Collection("events").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "the index build's start", regexp.MustCompile(`msg="index build started" collection=logs\.events indexes=pad_1`), 5*time.Second)
	done := waitLog(t, p, "the index build's end", regexp.MustCompile(`msg="index build done" collection=logs\.events indexes=pad_1 documents=(\d+) duration=\S+ docs_per_second=(\d+)`), 5*time.Second)
	if done[1] != "200" || done[2] == "0" {
		t.Errorf("index build line: %q", done[0])
	}

	// 400 RU/s spent many times over in a second: the partitions would
	// have throttled (rate limiting is off), one line per partition per
	// 10 s, with a count.
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "events"}, {Key: "offerThroughput", Value: 400}}).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := db.Collection("events").FindOne(ctx, bson.D{{Key: "k", Value: 3}, {Key: "_id", Value: 3 + 100*(i%2)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	throttle := waitLog(t, p, "the would-be throttles", regexp.MustCompile(`msg="partition would have throttled requests \(rate limiting is off\)" collection=logs\.events partition=\d+ count=(\d+) interval=10s`), 15*time.Second)
	if throttle[1] == "0" {
		t.Errorf("throttle line: %q", throttle[0])
	}
	if n := strings.Count(p.log(), "partition would have throttled"); n > 6 {
		t.Errorf("%d throttle lines: one per partition per 10 s at most", n)
	}
}

// TestServeHTTPTLS: with TLS on, the console speaks HTTPS only, with the
// server's certificate.
func TestServeHTTPTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", dir, "--http", "127.0.0.1:0", "--tls-self-signed")
	url := waitLog(t, p, "the console's address", regexp.MustCompile(`msg="console and metrics" url=(https://127\.0\.0\.1:\d+/)`), 10*time.Second)[1]
	pem, err := os.ReadFile(filepath.Join(dir, "tls-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("tls-cert.pem holds no certificate")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics over TLS: %d", resp.StatusCode)
	}
	plain := strings.Replace(url, "https://", "http://", 1)
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(plain + "metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served /metrics on a TLS server")
		}
	}
}

func TestServeHTTPAddressTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Given explicitly, a taken address stops the server from starting.
	p, err := tryStartProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", ln.Addr().String())
	if err == nil || !strings.Contains(p.log(), "--http: listen on "+ln.Addr().String()) {
		t.Errorf("a taken --http address: %v\n%s", err, p.log())
	}
	// Off: no console line.
	p = startProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "")
	if strings.Contains(p.log(), "console and metrics") {
		t.Errorf("--http \"\" still serves:\n%s", p.log())
	}
	if _, err := tryStartProc(t, nil, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "xml"); err == nil {
		t.Error("--log-format xml was accepted")
	}
}

// TestServeJSONLog: --log-format json writes one JSON object a line.
func TestServeJSONLog(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(parsecBinary(t), "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "", "--log-format", "json")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server exited before its start-up line")
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(l), &entry); err != nil {
				t.Fatalf("not a JSON line: %q", l)
			}
			if entry["msg"] != "parsec started" {
				continue
			}
			addr, _ := entry["address"].(string)
			if !strings.HasPrefix(addr, "127.0.0.1:") || entry["level"] != "INFO" || entry["time"] == nil {
				t.Errorf("start-up line: %v", entry)
			}
			c, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://%s/", addr)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Disconnect(context.Background())
			if err := c.Ping(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			return
		case <-timeout:
			t.Fatal("no start-up line in 20 s")
		}
	}
}
