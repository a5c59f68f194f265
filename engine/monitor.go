package engine

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/parsecdb/parsec/engine/auth"
	"github.com/parsecdb/parsec/engine/billing"
	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/ru"
	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// What the HTTP console and the metrics endpoint read from the engine.
// They run beside the wire protocol, never inside a command: they see
// what GetPartitionStats and serverStatus see, through these methods.

// PartitionStatsDocument is the reply of {customAction:
// "GetPartitionStats"} run on database db: for one collection when
// collection is given, else for the collections of db, or of the whole
// server when db is "admin" (with its requestUnits); top bounds the
// logical partitions listed per partition. Errors are *CommandError.
func (e *Engine) PartitionStatsDocument(ctx context.Context, db, collection string, top int) (bson.Raw, error) {
	a := &customActionArgs{collection: collection, hasCollection: collection != "", top: top}
	if collection != "" {
		if err := validateCollName(db, collection); err != nil {
			return nil, toCommandError(err)
		}
	}
	raw, err := e.getPartitionStats(ctx, db, a)
	if err != nil {
		return nil, toCommandError(err)
	}
	return raw, nil
}

// AdviseRequest is a what-if for candidate partition keys, as `parsec
// advise` and the console ask it: the arguments of {customAction:
// "AnalyzePartitionKey"}.
type AdviseRequest struct {
	DB, Collection string
	// Keys are the candidates, each a path (hashed, as Cosmos DB's
	// partition key) or a key pattern in extended JSON ('{"ts": 1}',
	// '{"tenant": 1, "user": 1}').
	Keys []string
	// Throughput or AutoscaleMax (RU/s) to evaluate at; neither: the
	// collection's own.
	Throughput, AutoscaleMax int64
	// SampleSize is the documents to sample (0: the server's default).
	SampleSize int64
}

// Command is the AnalyzePartitionKey command r stands for, to run on
// r.DB; a request that cannot be one is a BadValue.
func (r AdviseRequest) Command() (bson.D, error) {
	switch {
	case r.DB == "" || r.Collection == "":
		return nil, errorf(ErrBadValue, "a database and a collection are required")
	case len(r.Keys) == 0:
		return nil, errorf(ErrBadValue, "give at least one candidate key")
	case r.Throughput < 0 || r.AutoscaleMax < 0 || r.SampleSize < 0:
		return nil, errorf(ErrBadValue, "throughput, autoscale maximum and sample size cannot be negative")
	case r.Throughput > 0 && r.AutoscaleMax > 0:
		return nil, errorf(ErrBadValue, "give a throughput or an autoscale maximum, not both")
	}
	keys := bson.A{}
	for _, k := range r.Keys {
		k = strings.TrimSpace(k)
		if !strings.HasPrefix(k, "{") {
			keys = append(keys, k)
			continue
		}
		var pattern bson.D // a key pattern: {"a": 1, "b": "hashed"}
		if err := bson.UnmarshalExtJSON([]byte(k), false, &pattern); err != nil {
			return nil, errorf(ErrBadValue, "key %s is not a key pattern: %v", k, err)
		}
		keys = append(keys, pattern)
	}
	cmd := bson.D{{Key: "customAction", Value: "AnalyzePartitionKey"}, {Key: "collection", Value: r.Collection}, {Key: "keys", Value: keys}}
	if r.Throughput > 0 {
		cmd = append(cmd, bson.E{Key: "offerThroughput", Value: r.Throughput})
	}
	if r.AutoscaleMax > 0 {
		cmd = append(cmd, bson.E{Key: "autoScaleSettings", Value: bson.D{{Key: "maxThroughput", Value: r.AutoscaleMax}}})
	}
	if r.SampleSize > 0 {
		cmd = append(cmd, bson.E{Key: "sampleSize", Value: r.SampleSize})
	}
	return cmd, nil
}

// Advise is the reply AnalyzePartitionKey gives r (advisor.go), or its
// error as a CommandError.
func (e *Engine) Advise(ctx context.Context, r AdviseRequest) (bson.Raw, error) {
	cmd, err := r.Command()
	if err != nil {
		return nil, err
	}
	body, err := bson.Marshal(cmd)
	if err != nil {
		return nil, errorf(ErrBadValue, "%v", err)
	}
	raw, err := e.cmdCustomAction(ctx, &request{name: "customAction", db: r.DB, body: body})
	if err != nil {
		return nil, toCommandError(err)
	}
	return raw, nil
}

// ServerSnapshot is the server as the console's first page shows it.
type ServerSnapshot struct {
	Version, MongoVersion, Host string
	Started                     time.Time
	Uptime                      time.Duration
	Persistent                  bool

	// Connections: open now, accepted since start, refused at the limit.
	Connections, ConnectionsCreated, ConnectionsRejected int64
	Cursors, Sessions, Transactions                      int64

	// Request units of every partition (split ones included) and of the
	// commands charged to no partition.
	RateLimiting                            bool
	RUTotal, RUCommands                     float64
	RULastSecond, RULastMinute              float64
	Requests, Throttled, WouldHaveThrottled int64
	PhysicalPartitions                      int64

	// Memory of the Go runtime: mapped from the OS, and live heap objects.
	MemorySys, HeapInUse uint64
	Storage              store.EngineStats
}

// Snapshot reads the server's figures now.
func (e *Engine) Snapshot() ServerSnapshot {
	now := e.now()
	s := ServerSnapshot{
		Version: Version, MongoVersion: MongoVersion, Host: e.host,
		Started: e.started, Uptime: now.Sub(e.started),
		Persistent:   !e.store.InMemory(),
		Cursors:      int64(e.cursors.Count()),
		Sessions:     int64(e.sessions.Len()),
		Transactions: e.sessions.OpenTransactions(),
		RateLimiting: e.ruOpts.Limiting(),
		RUCommands:   float64(e.commandRU.Load()) / 100,
		Storage:      e.store.EngineStats(),
	}
	if e.cfg.ConnStats != nil {
		st := e.cfg.ConnStats()
		s.Connections, s.ConnectionsCreated, s.ConnectionsRejected = st.Current, st.TotalCreated, st.Rejected
	}
	if !e.ruOpts.Bypass {
		var sum billing.Sum
		for _, u := range e.units.All() {
			s.PhysicalPartitions += int64(len(u.Parts()))
			sum.AddPartitions(u, now)
		}
		s.RUTotal = sum.Total + s.RUCommands
		s.RULastSecond, s.RULastMinute, s.Requests = sum.Second, sum.Minute, sum.Requests
		if s.RateLimiting {
			s.Throttled = sum.Throttled
		} else {
			s.WouldHaveThrottled = sum.Throttled
		}
	}
	// runtime/metrics, unlike ReadMemStats, does not stop the world.
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		s.MemorySys = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		s.HeapInUse = samples[1].Value.Uint64()
	}
	return s
}

// Splits are the partition splits since the server started (the most
// recent thousand), at or after since, oldest first.
func (e *Engine) Splits(since time.Time) []store.SplitEvent { return e.store.Splits(since) }

// SplitCount is how many partitions of db.collection split since start.
func (e *Engine) SplitCount(db, collection string) int64 { return e.store.SplitCount(db, collection) }

// throughputString writes throughput as the log shows it.
func throughputString(t ru.Throughput) string {
	if t.IsAutoscale() {
		return fmt.Sprintf("autoscale max %d RU/s", t.MaxRUs)
	}
	return fmt.Sprintf("%d RU/s", t.RUs)
}

// ErrMonitorDenied is AuthorizeMonitor's answer to a wrong user name or
// password, or a user without clusterMonitor: the caller tells no more.
var ErrMonitorDenied = errors.New("not authorized")

// monitorLogins remembers the passwords that proved right, by a digest
// of user and password, for as long as no user changes: browsers and
// scrapers send them with every request, and deriving SCRAM keys costs
// milliseconds.
type monitorLogins struct {
	mu      sync.Mutex
	version uint64
	ok      map[[32]byte]bool
}

// AuthorizeMonitor checks HTTP basic-auth credentials against the SCRAM
// credentials of admin.<user>, and that the user's roles grant
// clusterMonitor (serverStatus's privilege). Failures count, per source
// address, toward the same back-off as failed SCRAM logins.
func (e *Engine) AuthorizeMonitor(ctx context.Context, source, user, password string) error {
	if !e.cfg.Auth {
		return nil
	}
	key := sha256.Sum256([]byte(user + "\x00" + password))
	version := e.usersVersion.Load()
	e.monitor.mu.Lock()
	if e.monitor.version != version || e.monitor.ok == nil {
		e.monitor.version, e.monitor.ok = version, map[[32]byte]bool{}
	}
	known := e.monitor.ok[key]
	e.monitor.mu.Unlock()
	if known {
		return nil
	}
	if wait := e.logins.Admit(source, e.now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	u, found, err := e.lookupUser("admin", user)
	if err != nil {
		return err
	}
	if !found || !passwordMatches(u, password) || !auth.Allowed(u.Roles, auth.ClassClusterMonitor, "admin") {
		if n, report := e.logins.Failure(source, e.now()); report {
			e.logger.Info("console authentication failed", "user", user, "remote", source, "failures", n)
		}
		return ErrMonitorDenied
	}
	e.monitor.mu.Lock()
	if e.monitor.version == version && len(e.monitor.ok) < 1024 {
		e.monitor.ok[key] = true
	}
	e.monitor.mu.Unlock()
	return nil
}

// passwordMatches derives u's stored key from password (SCRAM-SHA-256
// when u has it, else SCRAM-SHA-1's digest of MongoDB) and compares.
func passwordMatches(u auth.User, password string) bool {
	var cred *auth.Credential
	var cl *scram.Client
	var err error
	switch {
	case u.Credentials.SHA256 != nil:
		cred = u.Credentials.SHA256
		cl, err = scram.SHA256.NewClient(u.User, password, "")
	case u.Credentials.SHA1 != nil:
		cred = u.Credentials.SHA1
		sum := md5.Sum([]byte(u.User + ":mongo:" + password))
		cl, err = scram.SHA1.NewClientUnprepped(u.User, hex.EncodeToString(sum[:]), "")
	default:
		return false
	}
	if err != nil {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(cred.Salt)
	if err != nil {
		return false
	}
	want, err := base64.StdEncoding.DecodeString(cred.StoredKey)
	if err != nil {
		return false
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: cred.IterationCount})
	if err != nil {
		return false
	}
	return hmac.Equal(sc.StoredKey, want)
}

// SplitEvent is one split, as Splits reports it.
type SplitEvent = store.SplitEvent
