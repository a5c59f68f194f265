package store

import (
	"errors"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkReshardCopy measures the resharding copy of 50,000 documents
// sharded by {tenant: "hashed"} into {k: 1}, batches of batch documents,
// on disk: documents copied per second.
func BenchmarkReshardCopy(b *testing.B) {
	const docs = 100_000
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
	if p := os.Getenv("COPYPROF"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var copied int64
	var spent time.Duration
	for range b.N {
		r, err := s.BeginResharding(src, shard.Spec{Path: "k", Ranged: true}, 1)
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
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
		copied += r.Copied
		b.StopTimer()
		if err := s.AbortResharding(r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(copied)/spent.Seconds(), "docs/s")
}

var benchCopyBatch = func() int { n, _ := strconv.Atoi(os.Getenv("COPYBATCH")); return max(n, 64) }()
