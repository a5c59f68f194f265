package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// mountSmallFS mounts a tmpfs of size bytes on a new directory and
// unmounts it when the test ends; it skips the test, saying why, where
// that cannot be done (not Linux, not root).
func mountSmallFS(t *testing.T, size string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("a small filesystem is mounted as tmpfs, which needs Linux (this is %s)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		t.Skipf("mounting a %s tmpfs needs root (uid %d)", size, os.Geteuid())
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount -t tmpfs -o size=%s: %v: %s", size, err, out)
	}
	// Registered before the servers start, so it runs after they are
	// killed; lazy, since a killed process may hold files a moment longer.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// outOfDiskSpace reports whether err is 14031 OutOfDiskSpace, and its
// message.
func outOfDiskSpace(err error) (bool, string) {
	var we mongo.WriteException
	if errors.As(err, &we) {
		for _, e := range we.WriteErrors {
			if e.Code == 14031 {
				return true, e.Message
			}
		}
		if we.WriteConcernError != nil && we.WriteConcernError.Code == 14031 {
			return true, we.WriteConcernError.Message
		}
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Code == 14031 && ce.Name == "OutOfDiskSpace" {
		return true, ce.Message
	}
	return false, ""
}

// fillUntilFull inserts 1 KB documents with 8 writers until every writer
// has been refused with 14031 refusals times in a row (compactions free
// space now and then, so a refused write may fit a moment later); ids
// start at first. Any other error fails the test (a crashed server shows
// as EOF). It returns the acknowledged ids and one refusal's message.
func fillUntilFull(t *testing.T, coll *mongo.Collection, first int) ([]int, string) {
	t.Helper()
	const writers, most, refusals = 8, 200_000, 20 // a 64 MB disk holds far fewer
	pad := strings.Repeat("p", 1000)
	var (
		mu    sync.Mutex
		acked []int
		msg   string
		fail  error
		wg    sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refused := 0
			for i := w; i < most && refused < refusals; i += writers {
				id := first + i
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: pad}})
				cancel()
				mu.Lock()
				if err == nil {
					acked = append(acked, id)
					refused = 0
					mu.Unlock()
					continue
				}
				full, m := outOfDiskSpace(err)
				if !full {
					if fail == nil {
						fail = fmt.Errorf("insert %d: %w", id, err)
					}
					mu.Unlock()
					return
				}
				msg = m
				refused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fail != nil {
		t.Fatalf("after %d acknowledged inserts: %v", len(acked), fail)
	}
	if msg == "" {
		t.Fatalf("%d inserts and none refused with 14031", len(acked))
	}
	return acked, msg
}

// storedIDs reads every _id of coll.
func storedIDs(t *testing.T, coll *mongo.Collection) map[int]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for cur.Next(ctx) {
		v := cur.Current.Lookup("_id")
		n, ok := v.AsInt64OK()
		if !ok {
			t.Fatalf("_id %v is not a number", v)
		}
		ids[int(n)] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestDiskFull fills a 64 MB filesystem through the driver: writes that
// would not fit are refused with 14031 OutOfDiskSpace naming the data
// directory and its free space, the server keeps serving reads, deletes
// and drops, writes resume without a restart once space is freed, and
// after SIGKILL on the full disk the server starts again, serves every
// acknowledged write and refuses new ones.
func TestDiskFull(t *testing.T) {
	mnt := mountSmallFS(t, "64m")
	// Ballast removed later frees space on the filesystem.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 12<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// The lowest free space seen tells how much of the reserve the
	// storage engine's flushes and compactions used.
	lowest := watchFreeSpace(t, mnt)
	dataDir := filepath.Join(mnt, "data")
	// The change log keeps a copy of every inserted document (24 hours
	// by default): on a disk this small it is bounded, as an operator of
	// a small disk would bound it, so that the documents fill the disk.
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--change-retention-bytes", "1MiB"}
	p := startProc(t, nil, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("first server's log (end):\n%s", logTail(p.log(), 60))
		}
	})
	ctx := context.Background()
	db := connect(t, p.addr).Database("full")
	fill := db.Collection("fill")

	spare := make([]any, 500)
	for i := range spare {
		spare[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: strings.Repeat("s", 1000)}}
	}
	if _, err := db.Collection("spare").InsertMany(ctx, spare); err != nil {
		t.Fatal(err)
	}

	acked, msg := fillUntilFull(t, fill, 0)
	t.Logf("first fill: %d acknowledged inserts of 1 KB, then: %s", len(acked), msg)
	if !strings.Contains(msg, dataDir) || !strings.Contains(msg, "MiB free") {
		t.Errorf("the refusal does not name the data directory %s and its free space: %s", dataDir, msg)
	}
	if len(acked) < 5_000 {
		t.Errorf("only %d documents of 1 KB fitted on a 64 MB disk with 12 MB of ballast", len(acked))
	}
	// Still refused, not a crash: the server answers 14031 (or, when a
	// compaction has just freed space, takes the write).
	refused := 0
	for i := range 20 {
		id := -1 - i
		_, err := fill.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("r", 1000)}})
		if err == nil {
			acked = append(acked, id)
			continue
		}
		if full, _ := outOfDiskSpace(err); !full {
			t.Fatalf("insert on a full disk: want 14031, got %v", err)
		}
		refused++
	}
	if refused == 0 {
		t.Errorf("20 inserts on a full disk all taken")
	}
	_, err := fill.UpdateOne(ctx, bson.D{{Key: "_id", Value: acked[len(acked)-1]}}, bson.D{{Key: "$set", Value: bson.D{{Key: "more", Value: strings.Repeat("u", 2000)}}}})
	if full, _ := outOfDiskSpace(err); err != nil && !full {
		t.Errorf("update that grows a document on a full disk: want 14031, got %v", err)
	}

	// Reads go on.
	if n, err := fill.CountDocuments(ctx, bson.D{}); err != nil || int(n) != len(acked) {
		t.Fatalf("count on a full disk = %d, %v; want %d", n, err, len(acked))
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Err(); err != nil {
		t.Fatalf("serverStatus on a full disk: %v", err)
	}
	// Deletes and drops go on.
	deleted := append([]int(nil), acked[:100]...)
	res, err := fill.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: deleted}}}})
	if err != nil || res.DeletedCount != int64(len(deleted)) {
		t.Fatalf("delete on a full disk: %+v, %v", res, err)
	}
	acked = acked[100:]
	if err := db.Collection("spare").Drop(ctx); err != nil {
		t.Fatalf("drop on a full disk: %v", err)
	}

	// Space freed by anyone is seen without a restart.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := fill.InsertOne(ctx, bson.D{{Key: "_id", Value: 1_000_000}, {Key: "pad", Value: "after"}})
		if err == nil {
			acked = append(acked, 1_000_000)
			break
		}
		if full, _ := outOfDiskSpace(err); !full || time.Now().After(deadline) {
			t.Fatalf("insert after freeing 12 MB: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	more, msg := fillUntilFull(t, fill, 2_000_000)
	acked = append(acked, more...)
	t.Logf("second fill, after 12 MB were freed: %d acknowledged inserts, then: %s", len(more), msg)
	if len(more) < 2_000 {
		t.Errorf("only %d more documents of 1 KB fitted in 12 MB freed", len(more))
	}

	// A crash on the full disk, and a restart on it.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
	p2, err := tryStartProc(t, nil, args...)
	if err != nil {
		t.Fatalf("restart on the full disk: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted server's log (end):\n%s", logTail(p2.log(), 80))
		}
	})
	db2 := connect(t, p2.addr).Database("full")
	stored := storedIDs(t, db2.Collection("fill"))
	missing := 0
	for _, id := range acked {
		if !stored[id] {
			missing++
		}
	}
	for _, id := range deleted {
		if stored[id] {
			t.Errorf("deleted _id %d is back after the restart", id)
		}
	}
	t.Logf("acknowledged writes: %d; after SIGKILL and restart on the full disk: %d of them stored, %d documents in all", len(acked), len(acked)-missing, len(stored))
	if missing > 0 {
		t.Errorf("%d of %d acknowledged inserts are missing after the restart", missing, len(acked))
	}
	if len(stored) != len(acked) {
		t.Errorf("%d documents stored, %d acknowledged", len(stored), len(acked))
	}
	// Writes go on being refused when they would not fit (the restart
	// may have found some space: compactions it finished).
	again, _ := fillUntilFull(t, db2.Collection("fill"), 3_000_000)
	t.Logf("after the restart: %d more inserts acknowledged before 14031", len(again))
	if _, err := db2.Collection("fill").DeleteOne(ctx, bson.D{{Key: "_id", Value: acked[0]}}); err != nil {
		t.Errorf("delete after the restart on a full disk: %v", err)
	}
	t.Logf("lowest free space seen on the 64 MB filesystem: %.1f MiB", float64(lowest())/(1<<20))
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p2.wait(t, 30*time.Second); err != nil {
		t.Errorf("clean stop on the full disk: %v\n%s", err, p2.log())
	}
}

// logTail is the last n lines of a log.
func logTail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// watchFreeSpace samples dir's free space every 5 ms until the test ends
// and returns a function giving the lowest seen.
func watchFreeSpace(t *testing.T, dir string) func() int64 {
	var mu sync.Mutex
	lowest := int64(-1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var st syscall.Statfs_t
			if syscall.Statfs(dir, &st) == nil {
				free := int64(st.Bavail) * int64(st.Bsize)
				mu.Lock()
				if lowest < 0 || free < lowest {
					lowest = free
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}
