// Package shard describes how Parsec places documents: shard-key specs and
// key extraction, the point of a shard-key value in a 64-bit space (its
// hash, or an order-preserving prefix of it), the partition map
// (contiguous ranges of that space owned by physical partitions, split as
// they grow) and routing of a filter to the partitions it can touch.
//
// Contract: shard is pure and deterministic. It does no I/O, reads no
// clock and keeps no global state; every input is an argument, so the same
// inputs always give the same partition map, point and route. It imports
// no Parsec package except engine/value for BSON values.
//
// # Shard keys
//
// A shard key (Spec) is one or more fields, named by dotted paths, each
// ranged (1) or hashed, at most one hashed, as MongoDB takes them:
// {region: "hashed"}, {region: 1}, {a: 1, b: 1}, {a: "hashed", b: 1},
// {a: 1, b: "hashed"} (shardCollection; ParseSpec gives MongoDB's errors
// for the rest); "region" (Cosmos DB's shardKey, the single hashed key);
// ["/tenant", "/user", "/session"] (Cosmos DB's hierarchical partition
// key, up to three levels: {tenant: "hashed", user: 1, session: 1}).
// A document's shard-key value is the value at the path, or for a
// compound key the document of the values at the paths, named by the
// paths in key order ({"a": 1, "b": "x"}); every field must exist, and
// neither a value nor any field along a path may be an array (nor may a
// value be a regular expression). All documents with one shard-key value
// form a logical partition.
//
// # Point space
//
// A shard-key value has a point in [0, 2^64), computed from the leading
// field's value the way the field asks:
//
//   - hashed: MongoDB's hashed-index hash (Hash, the value
//     convertShardKeyToHashed returns: MD5 over a canonical encoding,
//     first 8 bytes little-endian, a signed int64) with the sign bit
//     flipped (Point), so unsigned order is MongoDB's chunk order:
//
//     hash (int64)   -2^63 ........ -1   0 ........ 2^63-1
//     point (uint64)  0 ....... 2^63-1   2^63 ..... 2^64-1
//
//   - ranged: the first 8 bytes of the value's key encoding
//     (value.EncodeKey, order preserving), zero padded (RangePoint). Order
//     is kept (a < b gives RangePoint(a) <= RangePoint(b)), so documents
//     sort by the key, a range of values is a run of points, and a
//     partition's [Min, Max] is a range of values: its chunk bounds are
//     values (DecodeRangePoint). Values whose encodings share 8 bytes
//     (strings sharing 7 bytes, numbers sharing 8 significant digits)
//     share a point: a partition never splits between them.
//
// A point is written big endian in document keys, followed by the whole
// shard-key value (see engine/store): so logical partitions stay apart
// by value, and a compound key's further fields order the documents
// within a point. Unsharded collections put every document at point 0
// and have one partition, "0", that owns the whole space.
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
//     are enough, or for a ranged key, whose values leave most of the
//     space empty, SplitToData splits the partitions holding the most
//     bytes where their data is. Lowering throughput never merges.
//   - size: a partition over its byte limit splits where its bytes are
//     best halved (Spec.SplitPoint), between two points that hold data:
//     midway for a hashed key, at the right point itself for a ranged
//     one (the boundary is then a value the data holds). A partition
//     whose data sits at one point cannot split.
//
// New collections start with InitialPartitions: ceil(T / 6000) for manual
// throughput, ceil(Tmax / 10000) for autoscale, at the default 10,000
// RU/s per partition, dividing the space evenly; a collection sharded by
// a ranged key with data already in it starts with one and splits where
// its data is.
//
// # Routing
//
// Spec.Values finds the shard-key values a filter pins (equality and $in
// on every field of the key, through $and and $or); their points and
// values name logical partitions. Spec.PointRanges finds the points a
// filter narrows the leading field to: its pinned values, and for a
// ranged field comparisons too ($gt, $gte, $lt, $lte, within the bound's
// type). Map.Route maps points to partitions. A filter that narrows
// nothing goes to every partition. Routing only ever over-approximates:
// every document the filter matches lives in a routed partition, at a
// routed point.
package shard
