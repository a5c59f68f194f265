//go:build unix

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user plus system.
func cpuTime() time.Duration {
	t, _ := usage()
	return t
}

// usage is the CPU time this process has used, user plus system, and the
// page faults it took that needed no I/O (the kernel supplied a page:
// first writes to fresh memory and to new pages of mapped files).
func usage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}

// pageCost is what writing one byte into each 4 KiB page of a fresh
// anonymous mapping costs per page (the kernel supplies and zeroes the
// page on the first write), and the same writes again once the pages are
// mapped. On some virtual machines the first is a hundred times the
// second, and every write path that copies data into new memory (a new
// memtable, a new log or table file) pays it per page: the figure
// explains write results that differ between machines.
func pageCost() (fresh, reused time.Duration) {
	const size, page = 64 << 20, 4096
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0, 0
	}
	defer func() { _ = syscall.Munmap(b) }()
	touch := func() time.Duration {
		start := time.Now()
		for off := 0; off < size; off += page {
			b[off] = 1
		}
		return time.Since(start) / (size / page)
	}
	fresh = touch()
	return fresh, touch()
}

// processCPU is the CPU time (user plus system) process pid has used, from
// /proc/<pid>/stat in clock ticks of 10 ms (Linux's USER_HZ); 0 when pid
// is 0 or unknown.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
