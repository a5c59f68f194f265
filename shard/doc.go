// Package shard describes how Parsec places documents: shard-key specs and
// key extraction, the 64-bit hash of a shard-key value, the partition map
// (contiguous ranges of the hash space owned by physical partitions, split
// as they grow) and routing of a filter to the partitions it can touch.
//
// Contract: shard is pure and deterministic. It does no I/O, reads no
// clock and keeps no global state; every input is an argument, so the same
// inputs always give the same partition map, hash and route. It imports no
// Parsec package except engine/value for BSON values.
//
// Hash space: [0, 2^64), the hash of a shard-key value read as an unsigned
// big-endian integer, which is also its place in document keys (see
// engine/store). A physical partition owns [min, max); the partitions of a
// collection tile the whole space without gaps or overlap.
package shard
