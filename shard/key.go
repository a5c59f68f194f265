package shard

import (
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Spec is a collection's shard key: one field, by dotted path, hashed.
// Range (non-hashed) and compound keys are refused by ParseSpec.
type Spec struct {
	Path string
}

// Errors of shard-key specs and extraction. Callers test with errors.Is
// and read the detail from *KeyError.
var (
	// ErrRangeKey: a range (1 or -1) shard key, which Parsec does not
	// support: documents are placed by hash only.
	ErrRangeKey = errors.New("range shard keys are not supported")
	// ErrCompoundKey: more than one field in the key.
	ErrCompoundKey = errors.New("compound shard keys are not supported")
	// ErrBadSpec: the key spec is malformed (empty, bad path, bad value).
	ErrBadSpec = errors.New("invalid shard key")
	// ErrMissing: a document has no value at the shard key's path.
	ErrMissing = errors.New("document does not contain shard key")
	// ErrArray: the value at (or a field along) the path is an array.
	ErrArray = errors.New("shard key cannot contain array values or array descendants")
	// ErrRegex: the value is a regular expression, which equality
	// filters could not target.
	ErrRegex = errors.New("shard key cannot be a regular expression")
)

// KeyError is a shard-key error with the path it concerns.
type KeyError struct {
	Err  error // one of the Err* values
	Path string
	Msg  string // detail, may be empty
}

func (e *KeyError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("%v at '%s'", e.Err, e.Path)
}

func (e *KeyError) Unwrap() error { return e.Err }

// ParseSpec reads a shardCollection key document: exactly one field
// whose value is "hashed".
func ParseSpec(key bsoncore.Document) (Spec, error) {
	elems, err := key.Elements()
	if err != nil {
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: fmt.Sprintf("invalid shard key document: %v", err)}
	}
	switch {
	case len(elems) == 0:
		return Spec{}, &KeyError{Err: ErrBadSpec, Msg: "Shard key cannot be empty"}
	case len(elems) > 1:
		return Spec{}, &KeyError{Err: ErrCompoundKey, Msg: "compound shard keys are not supported by Parsec: shard by one hashed field, e.g. {region: \"hashed\"}"}
	}
	path := elems[0].Key()
	if err := checkPath(path); err != nil {
		return Spec{}, err
	}
	v := elems[0].Value()
	if s, ok := v.StringValueOK(); ok {
		if s == "hashed" {
			return Spec{Path: path}, nil
		}
		return Spec{}, &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("Unsupported shard key pattern {%s: %q}: a shard key field must be \"hashed\"", path, s)}
	}
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return Spec{}, &KeyError{Err: ErrRangeKey, Path: path, Msg: fmt.Sprintf(
			"range shard keys are not supported by Parsec, which places documents by hash as Azure Cosmos DB does: use {%s: \"hashed\"}", path)}
	}
	return Spec{}, &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("Unsupported shard key pattern for field '%s': the value must be \"hashed\"", path)}
}

// ParsePath reads a Cosmos DB shardKey: a dotted path string.
func ParsePath(path string) (Spec, error) {
	if err := checkPath(path); err != nil {
		return Spec{}, err
	}
	return Spec{Path: path}, nil
}

func checkPath(path string) error {
	if path == "" {
		return &KeyError{Err: ErrBadSpec, Msg: "shard key path cannot be empty"}
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("shard key path '%s' has an empty field name", path)}
		}
		if part[0] == '$' {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: fmt.Sprintf("shard key path '%s' has a field name starting with '$'", path)}
		}
		if strings.IndexByte(part, 0) >= 0 {
			return &KeyError{Err: ErrBadSpec, Path: path, Msg: "shard key path contains a NUL byte"}
		}
	}
	return nil
}

// Extract returns the shard-key value of doc: the value at the key's
// path. A missing value is ErrMissing; an array at or along the path is
// ErrArray; a regular expression is ErrRegex. The value aliases doc.
func (s Spec) Extract(doc bsoncore.Document) (bsoncore.Value, error) {
	cur := doc
	rest := s.Path
	for {
		name, tail, more := strings.Cut(rest, ".")
		v, err := cur.LookupErr(name)
		if err != nil {
			return bsoncore.Value{}, &KeyError{Err: ErrMissing, Path: s.Path,
				Msg: fmt.Sprintf("document does not contain shard key at '%s'", s.Path)}
		}
		if v.Type == bsoncore.TypeArray {
			return bsoncore.Value{}, &KeyError{Err: ErrArray, Path: s.Path,
				Msg: fmt.Sprintf("Shard key cannot contain array values or array descendants (at '%s')", s.Path)}
		}
		if !more {
			if v.Type == bsoncore.TypeRegex {
				return bsoncore.Value{}, &KeyError{Err: ErrRegex, Path: s.Path,
					Msg: fmt.Sprintf("Shard key cannot be a regular expression (at '%s')", s.Path)}
			}
			return v, nil
		}
		sub, ok := v.DocumentOK()
		if !ok {
			return bsoncore.Value{}, &KeyError{Err: ErrMissing, Path: s.Path,
				Msg: fmt.Sprintf("document does not contain shard key at '%s'", s.Path)}
		}
		cur, rest = sub, tail
	}
}

// Doc is the key as shardCollection takes it: {<path>: "hashed"}.
func (s Spec) Doc() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString(s.Path, "hashed").Build()
}
