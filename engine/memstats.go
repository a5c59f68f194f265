package engine

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// procMemory is what the kernel says of the process's memory, in bytes
// (/proc/self/status): VmRSS is resident memory, the sum of RssAnon
// (heap, stacks: Go's memory and Badger's memtables and caches), RssFile
// (pages of memory-mapped data files and the binary, which the kernel
// may reclaim) and RssShmem.
type procMemory struct {
	VmRSS, VmSize, RssAnon, RssFile, RssShmem int64
}

// readProcMemory parses /proc/self/status; false where there is none.
func readProcMemory() (procMemory, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return procMemory{}, false
	}
	return parseProcStatus(b)
}

func parseProcStatus(b []byte) (procMemory, bool) {
	var m procMemory
	fields := map[string]*int64{"VmRSS": &m.VmRSS, "VmSize": &m.VmSize, "RssAnon": &m.RssAnon, "RssFile": &m.RssFile, "RssShmem": &m.RssShmem}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		dst := fields[string(name)]
		if dst == nil {
			continue
		}
		f := bytes.Fields(rest) // "123456 kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			continue
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			continue
		}
		*dst = n << 10
		found++
	}
	return m, found == len(fields)
}

// memSection is serverStatus.mem. resident and virtual are MongoDB's
// fields, in MiB; the others are Parsec's, in MiB too: the anonymous and
// file-backed parts of resident memory, the Go runtime's own figures and
// its soft memory limit (--memory-limit).
func memSection() bson.D {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mib := func(n int64) int32 { return int32(n >> 20) }
	limit := debug.SetMemoryLimit(-1)
	goStats := bson.D{
		{Key: "goHeapInUse", Value: mib(int64(ms.HeapInuse))},
		{Key: "goHeapReleased", Value: mib(int64(ms.HeapReleased))},
		{Key: "goRuntimeSys", Value: mib(int64(ms.Sys))},
	}
	if limit < 1<<62 {
		goStats = append(goStats, bson.E{Key: "memoryLimit", Value: mib(limit)})
	}
	pm, ok := readProcMemory()
	if !ok {
		// No /proc: the Go runtime's figures are all there is.
		return append(bson.D{
			{Key: "bits", Value: int32(64)},
			{Key: "resident", Value: mib(int64(ms.Sys))},
			{Key: "virtual", Value: mib(int64(ms.Sys))},
			{Key: "supported", Value: false},
			{Key: "heapInUseMB", Value: mib(int64(ms.HeapInuse))},
		}, goStats...)
	}
	return append(bson.D{
		{Key: "bits", Value: int32(64)},
		{Key: "resident", Value: mib(pm.VmRSS)},
		{Key: "virtual", Value: mib(pm.VmSize)},
		{Key: "supported", Value: true},
		{Key: "heapInUseMB", Value: mib(int64(ms.HeapInuse))},
		{Key: "residentAnonymous", Value: mib(pm.RssAnon)},
		{Key: "residentFileMapped", Value: mib(pm.RssFile)},
		{Key: "residentShared", Value: mib(pm.RssShmem)},
	}, goStats...)
}
