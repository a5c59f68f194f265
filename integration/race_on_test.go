//go:build race

package integration

// raceEnabled: the race detector slows CPU-bound paths several times, so
// tests that bound a time leave it to runs without it.
const raceEnabled = true
