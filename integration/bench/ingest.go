package main

import (
	"encoding/binary"
	"os"
	"time"

	"github.com/parsecdb/parsec/engine/kv/badgerkv"
)

// ingestShape is a bulk write of documents into Badger: docs values of
// docBytes, each with extra small records (index entries, change-log
// markers) of extraBytes; keys in key order (a snapshot's restore) or
// scattered (a copy into another key order).
type ingestShape struct {
	docs, docBytes, extra, extraBytes int
	scattered                         bool
}

// badgerIngest writes shape straight into a Badger database of its own,
// sized as a server's, through Badger's write batch (the only bulk path
// a database that keeps serving has), and returns the time it took: a
// floor for whatever writes the same records through Badger on this
// machine now.
func badgerIngest(shape ingestShape) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "parsec-bench-ingest-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	db, err := badgerkv.Open(badgerkv.Options{Dir: dir})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	doc, small := make([]byte, shape.docBytes), make([]byte, shape.extraBytes)
	for i := range doc {
		doc[i] = 'x'
	}
	start := time.Now()
	wb := db.Badger().NewWriteBatch()
	defer wb.Cancel()
	for i := range shape.docs {
		id := uint64(i)
		if shape.scattered {
			id *= 0x9E3779B97F4A7C15
		}
		key := binary.BigEndian.AppendUint64([]byte("d\x00\x00\x00\x01"), id)
		if err := wb.Set(key, doc); err != nil {
			return 0, err
		}
		for j := range shape.extra {
			key := binary.BigEndian.AppendUint64([]byte{'i', byte(j), 0, 0, 1}, id)
			if err := wb.Set(key, small); err != nil {
				return 0, err
			}
		}
	}
	if err := wb.Flush(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
