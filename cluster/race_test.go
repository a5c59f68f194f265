//go:build race

package cluster

// raceEnabled says the race detector slows this test binary down.
const raceEnabled = true
