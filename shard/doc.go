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
// # Shard keys
//
// A shard key is one field, named by a dotted path, hashed:
// {region: "hashed"} (shardCollection) or "region" (Cosmos DB's shardKey).
// Range and compound keys are refused. A document's shard-key value is the
// value at the path; it must exist, and neither it nor any field along the
// path may be an array (nor may it be a regular expression). All documents
// with one shard-key value form a logical partition.
//
// # Hash space
//
// The hash of a value is MongoDB's hashed-index hash (Hash, the value
// convertShardKeyToHashed returns): MD5 over a canonical encoding, first
// 8 bytes little-endian, a signed int64. Its point in the hash space
// [0, 2^64) is that int64 with the sign bit flipped (Point), so unsigned
// order is MongoDB's chunk order and a point is written big endian in
// document keys (see engine/store):
//
//	hash (int64)   -2^63 ........ -1   0 ........ 2^63-1
//	point (uint64)  0 ....... 2^63-1   2^63 ..... 2^64-1
//
// Unsharded collections put every document at point 0 and have one
// partition, "0", that owns the whole space.
//
// # Partition map
//
// A Map lists physical partitions in point order. Each owns [Min, Max]
// (Max inclusive; Cosmos DB's maxExclusive is Max+1, or the end of the
// space) and has an id (partitionKeyRangeId) and the ids of its ancestors.
//
//	   id 0                          [0 ............................ 2^64-1]
//	split 0 at 2^63:      id 1 [0 ... 2^63-1]    id 2 [2^63 ...... 2^64-1]
//	                      parents [0]            parents [0]
//	split 2 at 3·2^62:                           id 3 [2^63..]  id 4 [3·2^62..]
//	                                             parents [0 2]  parents [0 2]
//
// Invariants of every Map (Validate checks them):
//
//  1. Partitions tile the space: the first starts at 0, each starts right
//     after the previous one ends, the last ends at 2^64-1. So every point
//     has exactly one owner.
//  2. Ids are distinct and below NextID; a split gives both children new
//     ids and retires the parent's, so an id never names two ranges.
//  3. A Map is never changed in place; Split and SplitTo return new maps.
//
// # Splits
//
// A split divides one partition at a point into two children. Because a
// logical partition lives at a single point, no split divides one. Two
// reasons to split:
//
//   - throughput: a collection needs ceil(T / maxRUs) partitions
//     (PartitionsFor); SplitTo halves the widest partitions until there
//     are enough. Lowering throughput never merges.
//   - size: a partition over its byte limit splits where its bytes are
//     best halved (SplitPoint), between two points that hold data; a
//     partition whose data sits at one point cannot split.
//
// New collections start with InitialPartitions: ceil(T / 6000) for manual
// throughput, ceil(Tmax / 10000) for autoscale, at the default 10,000
// RU/s per partition.
//
// # Routing
//
// Spec.Values finds the shard-key values a filter pins (equality and $in
// on the key, through $and and $or); Map.Route maps their points to
// partitions. A filter that pins nothing goes to every partition. Routing
// only ever over-approximates: every document the filter matches lives in
// a routed partition.
package shard
