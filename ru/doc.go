// Package ru is Parsec's request-unit model: the cost function that turns
// what an operation did (bytes read and written, documents examined and
// returned, index entries written, partitions touched, consistency) into
// request units, and the per-partition throughput buckets that decide
// whether an operation may run now.
//
// Contract: ru is pure and deterministic. It does no I/O and never reads a
// clock: time is an argument (an injected clock), so its tests never sleep.
// It imports no Parsec package.
//
// # Cost model
//
// Charge (or Model.Charge) prices a Usage; the result is rounded to two
// decimals, as Cosmos DB reports charges. With KB(n) = n/1024 and
// over1(n) = max(KB(n)−1, 0), the KB past the first that the base price
// covers, DefaultModel charges:
//
//	point read   1 + over1(BytesRead)/11
//	insert       5 + 5·over1(BytesWritten)/11 + 0.5·IndexEntries + 5·KB(IndexBytes)/11
//	delete       as insert, of the item removed
//	replace      2 × insert of the new item
//	upsert       insert if it created the item, replace if it replaced one
//	query        2.5·Partitions + 0.02·DocsExamined + 0.08·KB(BytesRead) + 0.9·DocsReturned
//	command      1
//	strong read  × 2 (point reads and queries at ConsistencyStrong)
//
// Writes cost five times reads, per item and per KB. The published figures
// (learn.microsoft.com/azure/cosmos-db: request-units,
// optimize-cost-reads-writes) and Parsec's charges, tested as data in
// testdata/charge (each within ±10%):
//
//	| operation                                   | published          | Parsec  |
//	|---------------------------------------------|--------------------|---------|
//	| point read, 1 KB item                       | 1 RU               | 1.00    |
//	| point read, 100 KB item                     | 10 RU              | 10.00   |
//	| insert 1 KB, no index entries               | ~5 RU              | 5.00    |
//	| insert 1 KB, default indexing (_id index)   | ~5.5 RU            | 5.52    |
//	| insert 100 KB (no index / _id index)        | ~50 RU             | 50.00 / 50.52 |
//	| replace 1 KB (_id index)                    | 2 × insert = ~11   | 11.04   |
//	| replace 100 KB (_id index)                  | 2 × insert = ~100  | 101.04  |
//	| upsert 1 KB: created / replaced             | as insert / replace| 5.52 / 11.04 |
//	| delete 1 KB / 100 KB (_id index)            | ~5.5 / ~50 RU      | 5.52 / 50.52 |
//	| query returning 1,000 items of 1 KB         | ~1,000 RU          | 1002.50 |
//	| the same query over 4 physical partitions   | + 2–3 RU each      | 1010.00 |
//	| query returning one 1 KB item               | —                  | 3.50    |
//	| point read 1 KB, strong / bounded staleness | × 2 = 2 RU         | 2.00    |
//	| query 1,000 × 1 KB, strong                  | × 2 = ~2,000 RU    | 2005.00 |
//	| metadata command                            | small fixed        | 1.00    |
//
// Filling a Usage (the engine's side):
//   - Sizes are raw BSON sizes. A point read is a read by the full shard key
//     and _id; a read of a missing item costs ReadRU.
//   - A write Usage is one item. insertMany, updateMany and deleteMany
//     charge one per item written and sum the charges. An update or delete
//     whose filter is not a point lookup adds one KindQuery Usage for the
//     search (DocsReturned 0, DocsExamined and BytesRead what it loaded).
//   - An update stores a new version of the item: KindReplace with the new
//     size. Replace counts the index entries of the new version only.
//   - Partitions is the number of physical partitions a query ran on.
//   - ConsistencyStrong is readConcern "majority" or "linearizable".
//
// # Throughput
//
// A Throughput is manual (T RU/s: a multiple of 100, at least 400) or
// autoscale (maximum Tmax: a multiple of 1,000, at least 1,000). A Pool
// holds one provisioned throughput and divides it evenly among its
// physical partitions: a collection's own, or a database's shared among
// the partitions of all its collections without throughput of their own.
// Adding or removing partitions (a split adds two, detaches the parent) or
// changing the throughput re-divides at once.
//
// Each Partition has a Bucket that refills at its share, T/N RU/s (Tmax/N
// for autoscale), holding at most Options.BurstSeconds (default 1) seconds
// of it. Bucket documents the rules; in short: a charge is paid when the
// balance covers it, and a refused charge changes nothing and gets the
// time until it would be paid; a charge larger than the burst is paid
// from a full bucket and leaves the balance negative, so huge operations
// run and are paid back before anything else runs.
//
// Autoscale scales instantly within [0.1×Tmax, Tmax], so a request can
// always use up to Tmax/N on its partition: the buckets use Tmax. The
// throughput it is scaled to, for reporting, is Throughput.Scaled: the
// busiest partition's consumption in a second times N, clamped to
// [0.1×Tmax, Tmax] (Cosmos scales on the most active partition, and every
// partition gets an even share).
//
// Server-side retry: the engine loops on Partition.TryChargeWithin, which
// says how long to sleep (rounded up to the millisecond) and gives up with
// ErrRetryLimit when the total wait would pass MaxRetryWait (60 s). ru
// never sleeps.
//
// # Statistics
//
// Each Partition keeps, at the precision of a charge (centi-RU, so sums are
// exact): the RU charged since it was created; per-second consumption over
// the last minute, where second s is [s, s+1) of Unix time and "the last n
// seconds" are the n ending with the current one (so LastSecondRU is the
// current second so far); Cosmos's Normalized RU Consumption, the largest
// percentage of the partition's RU/s consumed in one second of the last
// minute (a Pool reports the largest over its partitions); the number of
// refused charges; and the RU of its hottest logical partitions, found by
// the Space-Saving algorithm in a bounded number of counters
// (Options.HotKeys, default 32), whatever the number of keys.
//
// # Concurrency
//
// Model and Throughput are values. Bucket is a single-threaded core.
// Partition and Pool are safe for concurrent use: a request locks only its
// own Partition, for a few dozen nanoseconds; the Pool's lock guards
// membership and throughput and is taken by re-division and Stats, which
// then lock each Partition in turn (order: Pool, then Partition).
package ru
