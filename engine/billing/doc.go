// Package billing charges Parsec's requests in request units: it admits
// each operation against its physical partition's bucket, charges what it
// did to the partitions it touched (and, for sharded collections, to the
// logical partition of each item), keeps one bucket per physical
// partition divided out of a pool per provisioned throughput, and reports
// the statistics and throttles of those partitions. Package ru prices
// usage and runs the buckets; billing is the glue between ru, the
// catalog and the command layer.
//
// # Contract
//
//  1. A charge is an amount of RU paid by a partition's bucket (nil
//     partition: by none) and added to the request's Meter. A request's
//     charge is the sum of its operations' charges, rounded as ru rounds;
//     a request that charged nothing and was refused nothing costs
//     CommandRU, charged to no partition.
//  2. Admission happens before an operation runs. An item whose price is
//     known in advance (an insert) pays it at admission, so a refused item
//     is refused before anything of it is written (PayItem). Anything else
//     is admitted while its partitions' balances are not negative
//     (ru.Bucket rule 5) and pays once it ran: reads batch by batch
//     (ChargeRead), writes once their transaction commits (ChargeWrite,
//     ChargeItems), so a transaction that reruns is charged once. A point
//     read pays the price of a small item at admission and the rest after.
//  3. A refusal is a *RateTooLarge error carrying the retry-after. With
//     server-side retry the operation waits instead (Config.Wait)
//     up to the retry limit, then fails with ErrRetryLimit. With rate
//     limiting off nothing is refused: what would have been is counted as
//     throttled and charged anyway. A nil Meter is an internal operation
//     (the writes of $out and $merge): charged to its partitions, never
//     refused. Billing speaks no MongoDB error codes: the command layer
//     turns its errors into 16500 TooManyRequests and 50
//     ExceededTimeLimit.
//  4. Exact: what an operation is charged and to which partitions, the
//     buckets' balances, and the per-partition totals (ruTotal,
//     requestCount, throttles). Estimated: how a fan-out's price is split
//     among its partitions (by documents examined), and the hot logical
//     partitions, an upper bound with its maximum error (ru's
//     Space-Saving summary).
//  5. Accounts follow the catalog lazily: a split, a throughput change or
//     a move between shared and own throughput re-divides the pool the
//     next time a request of the collection asks for its partitions; a
//     partition keeps its statistics when it moves.
//  6. Time comes from the clock Config.Now gives; billing reads no other.
//
// Package billing may import ru, engine/store (its data types),
// engine/storage (the seam), engine/value and shard (the hashed key a hot
// logical partition reports), never engine (layout_test.go).
package billing
