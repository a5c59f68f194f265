package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// httpStatsSource reads GetPartitionStats from a server's HTTP console
// (GET /api/partitions, the reply as extended JSON). addr is host:port or
// a URL; user:password in it are sent as basic auth.
func httpStatsSource(addr string) (statsSource, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	base, err := url.Parse(addr)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("--http %q: want host:port or a URL", addr)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	return func(ctx context.Context, db, collection string, top int) (bson.Raw, error) {
		q := url.Values{"db": {db}, "top": {strconv.Itoa(top)}}
		if collection != "" {
			q.Set("collection", collection)
		}
		u := *base
		u.Path = strings.TrimSuffix(u.Path, "/") + "/api/partitions"
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", redacted(u), err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", redacted(u), err)
		}
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || e.Error == "" {
				e.Error = strings.TrimSpace(string(body))
			}
			return nil, fmt.Errorf("GetPartitionStats over HTTP: %s: %s", resp.Status, e.Error)
		}
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON(body, false, &raw); err != nil {
			return nil, fmt.Errorf("GetPartitionStats over HTTP: %w", err)
		}
		return raw, nil
	}, nil
}

// redacted is u without its password, for messages.
func redacted(u url.URL) string { return u.Redacted() }
