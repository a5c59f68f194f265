// Package ru is Parsec's request-unit model: the cost function that turns
// what an operation did (bytes read and written, documents examined and
// returned, index entries written, partitions touched, consistency) into
// request units, and the per-partition throughput buckets that decide
// whether an operation may run now.
//
// Contract: ru is pure and deterministic. It does no I/O and never reads a
// clock: time is an argument (an injected clock), so its tests never sleep.
// It imports no Parsec package.
package ru
