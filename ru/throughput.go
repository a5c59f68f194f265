package ru

import (
	"errors"
	"fmt"
)

// Cosmos DB's throughput rules.
const (
	// MinManualRUs is the smallest manual throughput of a collection or a
	// shared-throughput database.
	MinManualRUs = 400
	// ManualStepRUs: manual throughput is a multiple of it.
	ManualStepRUs = 100
	// MinAutoscaleMaxRUs is the smallest autoscale maximum (scaling
	// between 100 and 1,000 RU/s).
	MinAutoscaleMaxRUs = 1000
	// AutoscaleStepRUs: an autoscale maximum is a multiple of it.
	AutoscaleStepRUs = 1000
	// AutoscaleFloor is the fraction of the maximum an autoscale resource
	// never scales below.
	AutoscaleFloor = 0.1
)

// ErrInvalidThroughput is wrapped by the errors of Throughput.Validate.
var ErrInvalidThroughput = errors.New("invalid throughput")

// Throughput is the RU/s provisioned on a collection or on a database that
// shares it among its collections: manual (offerThroughput) or autoscale
// (autoScaleSettings.maxThroughput). Exactly one field is set; the zero
// Throughput means none (a collection that uses its database's).
type Throughput struct {
	// RUs is manual throughput T: every second, T RU/s.
	RUs int
	// MaxRUs is the autoscale maximum Tmax.
	MaxRUs int
}

// Manual is throughput of rus RU/s.
func Manual(rus int) Throughput { return Throughput{RUs: rus} }

// Autoscale is autoscale throughput of maximum maxRUs RU/s.
func Autoscale(maxRUs int) Throughput { return Throughput{MaxRUs: maxRUs} }

// IsZero reports whether t provisions nothing.
func (t Throughput) IsZero() bool { return t == Throughput{} }

// IsAutoscale reports whether t is autoscale throughput.
func (t Throughput) IsAutoscale() bool { return t.MaxRUs != 0 }

// Validate checks t against Cosmos DB's rules: manual throughput is a
// multiple of 100 of at least 400 RU/s, an autoscale maximum a multiple of
// 1,000 of at least 1,000 RU/s.
func (t Throughput) Validate() error {
	switch {
	case t.RUs != 0 && t.MaxRUs != 0:
		return fmt.Errorf("%w: both manual (%d RU/s) and autoscale (max %d RU/s)", ErrInvalidThroughput, t.RUs, t.MaxRUs)
	case t.IsZero():
		return fmt.Errorf("%w: none provisioned", ErrInvalidThroughput)
	case t.IsAutoscale() && (t.MaxRUs < MinAutoscaleMaxRUs || t.MaxRUs%AutoscaleStepRUs != 0):
		return fmt.Errorf("%w: autoscale maximum %d RU/s is not a multiple of %d of at least %d", ErrInvalidThroughput, t.MaxRUs, AutoscaleStepRUs, MinAutoscaleMaxRUs)
	case !t.IsAutoscale() && (t.RUs < MinManualRUs || t.RUs%ManualStepRUs != 0):
		return fmt.Errorf("%w: %d RU/s is not a multiple of %d of at least %d", ErrInvalidThroughput, t.RUs, ManualStepRUs, MinManualRUs)
	}
	return nil
}

// MinSharedRUs is the smallest manual throughput of a database that shares
// it among collections: 400 RU/s for up to four, 100 more for each
// collection after the fourth.
func MinSharedRUs(collections int) int { return max(MinManualRUs, ManualStepRUs*collections) }

// Limit is the RU/s that throttling enforces: T for manual throughput,
// Tmax for autoscale, which scales instantly to whatever is needed up to
// Tmax, so the ceiling is all a request can run into.
func (t Throughput) Limit() float64 {
	if t.IsAutoscale() {
		return float64(max(t.MaxRUs, 0))
	}
	return float64(max(t.RUs, 0))
}

// PartitionRate is the RU/s each of n physical partitions gets: the limit
// divided evenly. For throughput shared by a database, n is the number of
// physical partitions of all the collections that share it.
func (t Throughput) PartitionRate(n int) float64 {
	if n <= 0 {
		return 0
	}
	return t.Limit() / float64(n)
}

// Scaled is the throughput an autoscale resource is scaled to in a second
// in which its busiest of n physical partitions consumed busiest RU: since
// every partition gets an even share, serving the busiest needs n×busiest
// RU/s, clamped to [0.1×Tmax, Tmax]. For manual throughput it is T.
func (t Throughput) Scaled(busiest float64, n int) float64 {
	if !t.IsAutoscale() {
		return t.Limit()
	}
	limit := t.Limit()
	return min(max(busiest*float64(max(n, 1)), AutoscaleFloor*limit), limit)
}
