//go:build !unix

package main

import "time"

// cpuTime is not measured here: cpu_per_op_us stays 0.
func cpuTime() time.Duration { return 0 }
