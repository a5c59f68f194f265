//go:build unix

package store

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parsecdb/parsec/shard"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// benchReshardDoc is a document of about 200 bytes, as the server's
// resharding benchmark loads them.
func benchReshardDoc(i int64, pad string) []byte {
	return bsoncore.BuildDocument(nil,
		bsoncore.AppendInt64Element(nil, "_id", i),
		bsoncore.AppendInt64Element(nil, "tenant", i%1000),
		bsoncore.AppendInt64Element(nil, "k", i),
		bsoncore.AppendInt64Element(nil, "g", i%5000),
		bsoncore.AppendStringElement(nil, "pad", pad))
}

// BenchmarkReshardCopy measures the resharding copy of 100,000 documents
// (PARSEC_BENCH_DOCS to change it) sharded by {tenant: "hashed"} into
// {k: 1}, on disk, as the engine runs it (a worker per range, batches of
// benchCopyBatch): documents copied per second, the process's CPU time
// per document (Badger's background work included), which other
// processes on the machine change less, and the bytes written to disk
// per document.
//
//	PARSEC_BENCH_DOCS=1000000 go test ./engine/store -run '^$' -bench ReshardCopy -benchtime 1x
func BenchmarkReshardCopy(b *testing.B) {
	docs := int64(100_000)
	if n, err := strconv.ParseInt(os.Getenv("PARSEC_BENCH_DOCS"), 10, 64); err == nil {
		docs = n
	}
	s, err := Open(Options{Dir: b.TempDir(), SyncInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	src, err := s.CreateCollectionWith("db", "c", NewCollection{Spec: shard.Spec{Path: "tenant"}, Partitions: 4})
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 150)
	for i := int64(0); i < docs; i += 1000 {
		err := s.Update(func(tx *Txn) error {
			for j := i; j < i+1000; j++ {
				doc := benchReshardDoc(j, pad)
				k, err := reshardKeyOf(src, src.Spec(), doc)
				if err != nil {
					return err
				}
				if err := tx.Insert(src, k, doc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var copied int64
	var spent, cpu time.Duration
	var written int64
	for range b.N {
		r, err := s.BeginResharding(src, shard.Spec{Path: "k", Ranged: true}, 1)
		if err != nil {
			b.Fatal(err)
		}
		began, cpuBefore, wBefore := time.Now(), processCPU(), processWritten()
		ranges := r.CopyRanges()
		var wg sync.WaitGroup
		errs := make([]error, len(ranges))
		for i := range ranges {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !ranges[i].Done && errs[i] == nil {
					errs[i] = s.CopyReshardingRange(r, i, &ranges[i], benchCopyBatch)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		if err := s.EndReshardingCopy(r, ranges); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(began)
		written += processWritten() - wBefore
		cpu += processCPU() - cpuBefore
		copied += r.Copied
		b.StopTimer()
		if err := s.AbortResharding(r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(copied)/spent.Seconds(), "docs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(copied), "cpu-µs/doc")
	b.ReportMetric(float64(written)/float64(copied), "written-B/doc")
}

// processCPU is the CPU time the process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCopyBatch is the engine's batch while nothing else runs
// (engine.reshardCopyBatchAlone).
const benchCopyBatch = 256

// processWritten is how many bytes the process has had written to disk
// (Linux's /proc/self/io; 0 elsewhere): with the documents copied, the
// copy's write amplification, Badger's compactions included.
func processWritten() int64 {
	raw, _ := os.ReadFile("/proc/self/io")
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
