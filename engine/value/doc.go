// Package value holds what Parsec knows about single BSON values: MongoDB's
// comparison order across types, numeric conversion, and EncodeKey, the
// order-preserving encoding used in storage keys. It is pure and imports
// none of Parsec's packages.
package value
