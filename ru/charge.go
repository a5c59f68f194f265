package ru

import (
	"math"
	"strconv"
)

// Kind says what sort of operation a Usage describes; it selects the
// pricing formula.
type Kind uint8

const (
	// KindCommand is a metadata or administrative command (listCollections,
	// createIndexes, …): a small fixed charge.
	KindCommand Kind = iota
	// KindPointRead reads one item by its full shard key and _id.
	KindPointRead
	// KindQuery is any other read: find, count, distinct, aggregate, and the
	// search phase of an update or delete with a filter.
	KindQuery
	// KindInsert writes one new item.
	KindInsert
	// KindReplace rewrites one existing item (replaceOne, and updateOne or
	// updateMany per modified item: Cosmos stores the whole new version).
	KindReplace
	// KindUpsert writes one item that may or may not have existed:
	// priced as an insert when it created the item (DocsExamined == 0),
	// as a replace when it replaced one (DocsExamined > 0).
	KindUpsert
	// KindDelete removes one item.
	KindDelete
)

var kindNames = [...]string{
	KindCommand:   "command",
	KindPointRead: "point-read",
	KindQuery:     "query",
	KindInsert:    "insert",
	KindReplace:   "replace",
	KindUpsert:    "upsert",
	KindDelete:    "delete",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Consistency is the consistency a read asked for. Cosmos charges reads at
// strong and bounded-staleness consistency twice the price of reads at the
// weaker levels.
type Consistency uint8

const (
	// ConsistencySession is the default: session, consistent prefix and
	// eventual consistency (readConcern absent, "local", "available",
	// "snapshot").
	ConsistencySession Consistency = iota
	// ConsistencyStrong is strong or bounded staleness (readConcern
	// "majority" or "linearizable"): reads cost StrongReadFactor times more.
	ConsistencyStrong
)

func (c Consistency) String() string {
	if c == ConsistencyStrong {
		return "strong"
	}
	return "session"
}

// Usage is what one operation did, as measured by the engine. Counters are
// totals over the whole operation; negative counters count as zero.
//
// A write Usage describes one item. A command that writes several items
// (insertMany, updateMany, deleteMany) charges one Usage per item, plus,
// when it found them with a filter that is not a point lookup, one
// KindQuery Usage for the search (DocsReturned 0), and sums the charges.
type Usage struct {
	Kind Kind

	// BytesRead is the size of the documents loaded from storage: the item
	// for a point read, every examined document for a query.
	BytesRead int64
	// BytesWritten is the size of the item a write stores: the new item
	// for an insert, replace or upsert, the removed item for a delete.
	BytesWritten int64
	// DocsExamined is the number of documents a query loaded and tested;
	// for an upsert, 1 if it found an item to replace.
	DocsExamined int64
	// DocsReturned is the number of documents a query returned.
	DocsReturned int64
	// IndexEntries is the number of index entries a write adds (or, for a
	// delete, removes). The _id index is one entry per item; a replace
	// counts the entries of the new version only, since the factor of two
	// already prices undoing the old one.
	IndexEntries int64
	// IndexBytes is the total size of those index entries.
	IndexBytes int64
	// Partitions is the number of physical partitions a query ran on;
	// 0 counts as 1. Point operations touch one.
	Partitions int
	// Consistency applies to reads (KindPointRead, KindQuery) only.
	Consistency Consistency
}

// Model holds the prices of the cost function. DefaultModel reproduces
// Cosmos DB's published reference charges; the table is in the package
// documentation. A Model is a plain value, safe to share read-only.
type Model struct {
	// ReadRU is a point read of an item of at most 1 KB (and of a missing
	// item).
	ReadRU float64
	// ReadRUPerKB is each KB a point read loads beyond the first.
	ReadRUPerKB float64

	// WriteRU is a write of an item of at most 1 KB, without index entries.
	WriteRU float64
	// WriteRUPerKB is each KB a write stores beyond the first, and each KB
	// of index entries.
	WriteRUPerKB float64
	// IndexEntryRU is each index entry a write adds or removes.
	IndexEntryRU float64
	// ReplaceFactor multiplies the price of writing an item for a replace.
	ReplaceFactor float64

	// QueryPartitionRU is charged per physical partition a query runs on:
	// the single-partition base price and the fan-out surcharge alike.
	QueryPartitionRU float64
	// QueryExaminedRU is each document a query loads and tests.
	QueryExaminedRU float64
	// QueryRUPerKB is each KB a query loads.
	QueryRUPerKB float64
	// QueryReturnedRU is each document a query returns.
	QueryReturnedRU float64

	// StrongReadFactor multiplies reads at ConsistencyStrong.
	StrongReadFactor float64
	// CommandRU is the fixed price of a KindCommand.
	CommandRU float64
}

// DefaultModel returns the model calibrated on Cosmos DB's published
// charges: writes cost five times reads, per item and per KB.
func DefaultModel() Model {
	return Model{
		ReadRU:      1,
		ReadRUPerKB: 1.0 / 11, // 100 KB: 1 + 99/11 = 10 RU

		WriteRU:       5,
		WriteRUPerKB:  5.0 / 11, // 100 KB: 5 + 99·5/11 = 50 RU
		IndexEntryRU:  0.5,      // 1 KB with the _id index: 5.5 RU
		ReplaceFactor: 2,

		QueryPartitionRU: 2.5,  // "+ 2–3 RU per physical partition"
		QueryExaminedRU:  0.02, // with QueryRUPerKB, 0.1 RU per 1 KB item scanned
		QueryRUPerKB:     0.08,
		QueryReturnedRU:  0.9, // 1,000 items of 1 KB: 2.5 + 100 + 900 = 1,002.5 RU

		StrongReadFactor: 2,
		CommandRU:        1,
	}
}

var defaultModel = DefaultModel()

// Charge prices u with DefaultModel.
func Charge(u Usage) float64 { return defaultModel.Charge(u) }

// Charge returns the request charge of u in RU, rounded to two decimals as
// Cosmos DB reports it. It is a pure function of m and u: the same usage
// always costs the same. It does not allocate.
func (m *Model) Charge(u Usage) float64 {
	var ru float64
	switch u.Kind {
	case KindPointRead:
		ru = m.ReadRU + m.ReadRUPerKB*beyondFirstKB(u.BytesRead)
		ru *= m.readFactor(u.Consistency)
	case KindQuery:
		ru = m.QueryPartitionRU*float64(max(u.Partitions, 1)) +
			m.QueryExaminedRU*pos(u.DocsExamined) +
			m.QueryRUPerKB*kb(u.BytesRead) +
			m.QueryReturnedRU*pos(u.DocsReturned)
		ru *= m.readFactor(u.Consistency)
	case KindInsert, KindDelete:
		ru = m.write(&u)
	case KindReplace:
		ru = m.ReplaceFactor * m.write(&u)
	case KindUpsert:
		ru = m.write(&u)
		if u.DocsExamined > 0 {
			ru *= m.ReplaceFactor
		}
	default:
		ru = m.CommandRU
	}
	return Round(ru)
}

// write is the price of storing (or removing) one item.
func (m *Model) write(u *Usage) float64 {
	return m.WriteRU + m.WriteRUPerKB*beyondFirstKB(u.BytesWritten) +
		m.IndexEntryRU*pos(u.IndexEntries) + m.WriteRUPerKB*kb(u.IndexBytes)
}

func (m *Model) readFactor(c Consistency) float64 {
	if c == ConsistencyStrong {
		return m.StrongReadFactor
	}
	return 1
}

// Round rounds ru to two decimals, half away from zero, as Cosmos DB
// reports request charges.
func Round(ru float64) float64 { return math.Round(ru*100) / 100 }

func pos(n int64) float64 { return float64(max(n, 0)) }

func kb(bytes int64) float64 { return pos(bytes) / 1024 }

// beyondFirstKB is the size in KB past the first KB, which the base price
// of an item covers.
func beyondFirstKB(bytes int64) float64 { return max(kb(bytes)-1, 0) }
