// Package expr compiles and evaluates MongoDB aggregation expressions
// over raw BSON documents: field paths ("$a.b"), system variables
// ($$ROOT, $$CURRENT, $$NOW, $$REMOVE) and user variables ($$name from
// let, $let, $map, $filter, $reduce), literals and $literal, and the
// operators registered in operators.go (comparison, boolean,
// arithmetic, conditional, array, string, type, object and date
// expressions).
//
// Contract:
//
//   - Compile(v, scope) parses an expression once, checking operator names,
//     arities and variable names; Expression.Eval evaluates it against a
//     Context (the document, variable values, the clock) and may be called
//     concurrently with distinct Contexts. Compiled expressions own their
//     bytes.
//   - Values are bsoncore.Value; a Value with Type 0 is "missing" (a path
//     that reaches nothing, $$REMOVE). Object expressions drop missing
//     fields; array expressions turn them into null.
//   - Semantics are MongoDB 7.0's: comparisons use the full BSON order
//     with missing below null (no type bracketing), truthiness is
//     false for false, null, missing, undefined and zero, arithmetic widens
//     int32 -> int64 -> double (decimal128 when any operand is one) and
//     overflows to the wider type. Decimal128 arithmetic is exact and then
//     rounded to 34 digits, keeping exponents as IEEE 754 decimal does
//     (1 + 0.1 is 1.1); doubles convert to decimal with 15 significant
//     digits. Date expressions work in UTC unless given a timezone: an
//     Olson name (the zone database is embedded) or a UTC offset.
//   - Sum and StdDev (accum.go) are the exact running totals $sum, $avg,
//     $stdDevPop and $stdDevSamp use, as expressions and as the
//     aggregation engine's accumulators; their states can be exported and
//     merged (partial results of partitions).
//   - Errors wrap one of the categories in errors.go and argforms.go (the
//     operators' argument checks, worded per operator as MongoDB words
//     them); the command layer maps them to MongoDB codes. This package knows no codes, imports only
//     engine/value, and must never import engine/query (engine/query and the
//     aggregation engine import it).
//   - Evaluation never panics on any well-formed BSON input.
package expr
