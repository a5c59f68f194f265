// Package query compiles MongoDB query filters, sort specifications and
// find projections, and applies them to raw BSON documents; nothing is
// decoded into Go values.
//
// API for other packages (stable; engine/update and the command layer
// rely on it):
//
//	Compile(filter bsoncore.Document) (*Filter, error)
//	CompileWith(filter, Options{Let, Now, Collation}) (*Filter, error)  // $expr variables; strings by a collation
//	(*Filter).Match(doc) bool
//	(*Filter).MatchErr(doc) (bool, error)          // $expr run-time errors
//	(*Filter).MatchPosition(doc) (matched bool, pos int)
//	    pos: index of the matching element in the first array the filter
//	    traversed (MongoDB's elemMatchKey, for the positional $), -1 if none
//	(*Filter).IDEquality() (bsoncore.Value, bool)
//	CompileSort(spec bsoncore.Document) (*Sort, error)
//	(*Sort).WithCollation(c) *Sort                  // strings ordered by a collation
//	(*Sort).Compare(a, b bsoncore.Document) int    // MongoDB sort order
//	(*Sort).Keys(doc) / CompareKeys(ka, kb)          // sort many documents
//	CompileProjection(spec, filter, Options) (*Projection, error)
//	(*Projection).Apply(doc) (bsoncore.Document, error)
//	CompareValues(a, b) int                        // sort/index key order
//	CompareValuesWith(a, b, c) int                 // the same under a collation
//	DistinctValues(doc, path, fn)                  // the distinct command's values
//	Explain(filter, doc, ExplainOptions)           // why doc fails filter: a document
//	    validation failure's errInfo.details (explain.go)
//
// Contract: compiled filters, sorts and projections are immutable, own
// their bytes (they never alias the documents they were compiled from) and
// are safe for concurrent use. Matching never panics on any well-formed
// BSON document. Every error wraps one of the category errors of
// errors.go, so the command layer can give MongoDB's codes; this package
// knows no codes itself.
//
// Semantics are MongoDB 7.0's: path traversal through embedded documents
// and arrays (walk in path.go), null matching missing fields, type
// bracketing of comparisons, BSON comparison order (engine/value), NaN
// equal only to NaN, regular expressions in PCRE syntax as far as Go's
// RE2 allows. Aggregation expressions ($expr, computed projection fields)
// are evaluated by engine/expr.
package query
