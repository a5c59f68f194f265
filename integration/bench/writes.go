package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/parsecdb/parsec/engine/store"
	"github.com/parsecdb/parsec/engine/value"
	"github.com/parsecdb/parsec/integration"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The write workloads (issue 4):
//
//   - insertMany: InsertMany of insertManyBatch fresh 1 KB documents per
//     operation, against badger-insertMany, one store transaction
//     inserting the same documents under the same keys: the engine's
//     batched write path with the wire, the driver and the command layer
//     taken away. Its figure is documents per second. Both run in a phase
//     of their own (batchPhase), each on a fresh store, after the others:
//     the flushes and compactions tens of megabytes a second cause would
//     otherwise be billed to whatever runs next.
//   - updateOne: UpdateOne by _id ($inc of one field) on a preloaded
//     document chosen at random, against ping and against badger-update
//     (read, modify, replace the same document in one transaction).

// insertManyBatch is the number of documents per insertMany operation.
const insertManyBatch = 1000

// writeServerWorkloads are the server-side write workloads and
// writeBadgerWorkloads their raw-store baselines, in report order.
// updateOne runs in serverPhase, badger-update in badgerPhase, the
// insertMany pair in batchPhase.
var (
	writeServerWorkloads = []string{"updateOne", "insertMany"}
	writeBadgerWorkloads = []string{"badger-update", "badger-insertMany"}
)

// writeBaselines maps each write workload to its Badger baseline.
var writeBaselines = map[string]string{"insertMany": "badger-insertMany", "updateOne": "badger-update"}

// writeGoals are issue 4's targets: updateOne against ping, insertMany
// against its Badger baseline.
var writeGoals = []goal{{Workload: "updateOne", Clients: 16, Min: 0.6}}

// writeBadgerGoals: workload@clients >= min x its Badger baseline.
var writeBadgerGoals = []struct {
	workload string
	clients  int
	min      float64
}{{"insertMany", 16, 0.4}, {"insertMany", 1, 0.4}}

// setupServerWrites preloads the documents updateOne changes.
func setupServerWrites(ctx context.Context, cfg config, want func(string) bool, coll func(int, string) *mongo.Collection, t template) error {
	if want("updateOne") {
		return preloadServer(ctx, coll(0, "update"), t, cfg.Docs)
	}
	return nil
}

func serverWriteWorkloads(cfg config, coll func(int, string) *mongo.Collection, t template) []workload {
	return []workload{
		{"updateOne", "server", func(w int) opFunc { return updateOp(coll(w, "update"), cfg.Docs, uint64(w)+1) }},
	}
}

// setupBadgerWrites preloads badger-update's documents.
func setupBadgerWrites(st *store.Store, cfg config, want func(string) bool, t template) (*store.Collection, error) {
	upd, _, err := st.EnsureCollection("bench", "update")
	if err != nil {
		return nil, err
	}
	if want("badger-update") {
		if err := preloadStore(st, upd, t, cfg.Docs); err != nil {
			return nil, err
		}
	}
	return upd, nil
}

func badgerWriteWorkloads(st *store.Store, upd *store.Collection, cfg config, t template) []workload {
	return []workload{
		{"badger-update", "baseline-badger", func(w int) opFunc { return rawUpdateOp(st, upd, cfg.Docs, uint64(w)+1) }},
	}
}

// batchPhase runs insertMany on a server of its own (or -uri, in a
// database of its own, dropped after), then badger-insertMany on a store
// of its own.
func batchPhase(ctx context.Context, cfg config, rep *report, want func(string) bool, t template) (err error) {
	if want("insertMany") {
		uri, dbName := cfg.URI, fmt.Sprintf("parsec_bench_batch_%d", os.Getpid())
		if cfg.InProcess {
			srv, stop, err := launchPhase("batch", integration.ServerOptions{})
			if err != nil {
				return err
			}
			defer stop(&err)
			uri = srv.URI()
		}
		var mcs []*mongo.Client
		pprof.Do(ctx, pprof.Labels("side", "client"), func(context.Context) {
			mcs, err = connect(cfg.ClientMode, uri, slices.Max(cfg.Clients))
		})
		if err != nil {
			return err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = mcs[0].Database(dbName).Drop(dctx)
			for _, c := range mcs {
				_ = c.Disconnect(dctx)
			}
		}()
		coll := func(w int) *mongo.Collection { return mcs[w%len(mcs)].Database(dbName).Collection("insertMany") }
		if err := runPhase(ctx, cfg, rep, want, []workload{
			{"insertMany", "server", func(w int) opFunc { return insertManyOp(coll(w), t) }},
		}); err != nil {
			return err
		}
	}
	if ctx.Err() != nil || !want("badger-insertMany") {
		return nil
	}
	dir, err := os.MkdirTemp("", "parsec-bench-batch-raw-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(store.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fmt.Errorf("open raw store: %w", err)
	}
	defer st.Close()
	ins, _, err := st.EnsureCollection("bench", "insertMany")
	if err != nil {
		return err
	}
	return runPhase(ctx, cfg, rep, want, []workload{
		{"badger-insertMany", "baseline-badger", func(w int) opFunc { return rawInsertManyOp(st, ins, t) }},
	})
}

// insertManyOp inserts insertManyBatch fresh documents per call, pre-encoded.
func insertManyOp(coll *mongo.Collection, t template) opFunc {
	docs := make([]any, insertManyBatch)
	bufs := make([][]byte, insertManyBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, docSize)
	}
	return func(ctx context.Context) error {
		for i := range docs {
			d, _ := t.withOID(bufs[i])
			docs[i] = bson.Raw(d)
		}
		res, err := coll.InsertMany(ctx, docs)
		if err == nil && len(res.InsertedIDs) != insertManyBatch {
			err = fmt.Errorf("insertMany: %d of %d inserted", len(res.InsertedIDs), insertManyBatch)
		}
		return err
	}
}

// updateOp increments seq of a random preloaded document.
func updateOp(coll *mongo.Collection, ndocs int64, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x51ed270b27fa4b1f))
	fbuf := make([]byte, 0, 32)
	upd := bsoncore.NewDocumentBuilder().AppendDocument("$inc", bsoncore.NewDocumentBuilder().AppendInt64("seq", 1).Build()).Build()
	return func(ctx context.Context) error {
		id := rng.Int64N(ndocs)
		fbuf = idFilter(fbuf, id)
		res, err := coll.UpdateOne(ctx, bson.Raw(fbuf), bson.Raw(upd))
		if err == nil && res.ModifiedCount != 1 {
			err = fmt.Errorf("updateOne %d: modified %d", id, res.ModifiedCount)
		}
		return err
	}
}

// rawInsertManyOp is insertMany's storage work: one transaction inserting
// the batch under keys made from the _ids.
func rawInsertManyOp(st *store.Store, coll *store.Collection, t template) opFunc {
	bufs := make([][]byte, insertManyBatch)
	keys := make([][]byte, insertManyBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, docSize)
	}
	return func(context.Context) error {
		for i := range bufs {
			var oid bson.ObjectID
			bufs[i], oid = t.withOID(bufs[i])
			keys[i] = store.DocKey(coll.ID, 0, nil, value.EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}))
		}
		return st.Update(func(tx *store.Txn) error {
			for i := range bufs {
				if err := tx.Insert(coll, keys[i], bufs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// rawUpdateOp is updateOne's storage work: read the document, write a
// changed copy of the same size, in one transaction.
func rawUpdateOp(st *store.Store, coll *store.Collection, ndocs int64, seed uint64) opFunc {
	rng := rand.New(rand.NewPCG(seed, 0x51ed270b27fa4b1f))
	var idb [8]byte
	return func(context.Context) error {
		id := rng.Int64N(ndocs)
		key := store.DocKey(coll.ID, 0, nil, value.EncodeKey(nil, int64Value(idb[:], id)))
		return st.Update(func(tx *store.Txn) error {
			doc, err := tx.Get(key)
			if err != nil {
				return err
			}
			doc[len(doc)-3]++ // the payload's last character: same size, new bytes
			return tx.Replace(coll, key, doc, len(doc))
		})
	}
}

// writeRatios adds the write goals measured against Badger to rep.Goals
// (their ratio field is then against the Badger baseline).
func writeRatios(rep *report, find func(string, int) *result) {
	for _, g := range writeBadgerGoals {
		out := goal{Name: fmt.Sprintf("%s@%d >= %.2f x %s@%d", g.workload, g.clients, g.min, writeBaselines[g.workload], g.clients), Workload: g.workload, Clients: g.clients, Min: g.min, Status: "n/a"}
		r := find(g.workload, g.clients)
		if r != nil && r.VsBadger > 0 {
			out.Ratio = r.VsBadger
			out.Status = "FAIL"
			if out.Ratio >= g.min {
				out.Status = "PASS"
			}
		}
		rep.Goals = append(rep.Goals, out)
	}
}

// printWriteSummary restates insertMany in documents per second, and for
// each single-document write goal against ping, the CPU per operation
// (client and server together) at which it would pass, beside what ping
// and the write's raw Badger baseline take in this run: when the baseline
// alone, without wire, driver or command layer, uses most of what the
// goal allows, no server-side change to the command layer reaches it.
func printWriteSummary(w io.Writer, rep *report) {
	find := rep.find
	base := map[string]string{"insertOne": "badger-insert", "updateOne": "badger-update"}
	for _, g := range rep.Goals {
		p, r := find("ping", g.Clients), find(g.Workload, g.Clients)
		if _, write := base[g.Workload]; write && p != nil && r != nil && p.ServerCPUPerOpUS > 0 && r.ServerCPUPerOpUS > 0 && g.Min > 0 {
			fmt.Fprintf(w, "%s@%d: ping takes %.0fµs of CPU per operation (client %.0f, server %.0f), %s %.0fµs (client %.0f, server %.0f); %.2f x ping allows %.0fµs, of which the client alone takes %.0fµs\n",
				g.Workload, g.Clients, p.totalCPU(), p.CPUPerOpUS, p.ServerCPUPerOpUS, g.Workload, r.totalCPU(), r.CPUPerOpUS, r.ServerCPUPerOpUS, g.Min, p.totalCPU()/g.Min, r.CPUPerOpUS)
		}
	}
	for _, g := range rep.Goals {
		b, ok := base[g.Workload]
		p, r, raw := find("ping", g.Clients), find(g.Workload, g.Clients), find(b, g.Clients)
		if !ok || p == nil || r == nil || raw == nil || p.CPUPerOpUS == 0 || g.Min == 0 {
			continue
		}
		allowed := p.CPUPerOpUS / g.Min
		fmt.Fprintf(w, "%s@%d: %.2f x ping allows %.0fµs of CPU per operation (client and server), %.0fµs more than ping's %.0fµs; %s alone takes %.0fµs; %s took %.0fµs\n",
			g.Workload, g.Clients, g.Min, allowed, allowed-p.CPUPerOpUS, p.CPUPerOpUS, b, raw.CPUPerOpUS, g.Workload, r.CPUPerOpUS)
	}
	for _, r := range rep.Results {
		if r.Workload == "insertMany" || r.Workload == "badger-insertMany" {
			fmt.Fprintf(w, "%s c=%d: %.0f documents/s (batches of %d)\n", r.Workload, r.Clients, r.OpsPerS*insertManyBatch, insertManyBatch)
		}
	}
}
