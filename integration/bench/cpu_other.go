//go:build !unix

package main

import "time"

// cpuTime is not measured here: cpu_per_op_us stays 0.
func cpuTime() time.Duration { return 0 }

// usage is not measured here.
func usage() (time.Duration, int64) { return 0, 0 }

// pageCost is not measured here.
func pageCost() (fresh, reused time.Duration) { return 0, 0 }

// processCPU is not measured here.
func processCPU(int) time.Duration { return 0 }
