// Package agg compiles and runs MongoDB aggregation pipelines over
// streams of raw BSON documents.
//
// API (the engine's command layer is the only caller):
//
//	Parse(pipeline bsoncore.Document, opts Options) (*Pipeline, error)
//	(*Pipeline).Run(in Iterator) Iterator           // whole pipeline, one stream
//	(*Pipeline).Split() *Split                        // per-partition part + merge part
//	(*Split).Run(partitions []Iterator, parallel int) Iterator
//	(*Pipeline).Explain() / (*Split).Explain()        // stages as explain shows them
//	(*Pipeline).LeadingMatch() bsoncore.Document      // for routing to partitions
//
// Contract:
//
//   - agg is pure apart from spill files: documents come in through
//     Iterator, and everything else a stage needs from outside (other
//     collections for $lookup, $graphLookup and $unionWith; writes for
//     $out and $merge; statistics for $collStats and $indexStats) comes
//     through the Collections interface, which the engine implements.
//     agg imports only engine/value, engine/expr and engine/query.
//   - A compiled Pipeline is immutable and may be run any number of
//     times, concurrently (each Run has its own state). It owns its
//     bytes.
//   - A document an Iterator returns is valid until the next call to
//     Next or Close on that Iterator; stages that keep documents copy
//     them.
//   - Split divides a pipeline as a router does: the longest prefix of
//     partition-local stages ($match, $project, $addFields/$set,
//     $unset, $unwind, $replaceRoot/$replaceWith, $redact) runs once
//     per physical partition, followed, when the next stage is a
//     $group (or a stage made of one: $count, $sortByCount, $bucket),
//     by that group in partial mode (accumulator states, not results);
//     the rest runs once on the union of the partitions' streams, a
//     partial group becoming its final merge. With one partition the
//     result is the same as Run's, in the same order.
//   - Blocking stages ($group, $sort, $bucketAuto, $facet,
//     $setWindowFields, $sample) account the memory they hold against
//     Options.MemoryLimit (100 MB by default). Past it, $sort and
//     $group spill to temporary files when Options.AllowDiskUse is set
//     ($bucketAuto sorts through the same external sorter and $facet
//     buffers its input in a spill file); otherwise, and always for
//     $setWindowFields and $sample, they fail with ErrMemoryLimit.
//   - Errors wrap one of the categories of errors.go (or those of
//     engine/query and engine/expr); the engine maps them to MongoDB's
//     codes. This package knows no codes.
//   - Semantics are MongoDB 7.0's; messages follow MongoDB's wording.
package agg
