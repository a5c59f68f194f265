package engine

import (
	"errors"
	"fmt"

	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// diskFullError answers a write the store refused for want of free disk
// space with 14031 OutOfDiskSpace, naming the data directory and what is
// free. The store keeps a reserve for its own flushes and compactions
// (store.badgerSizes); the message says so, since df shows space left.
func diskFullError(err error) *CommandError {
	var full *store.DiskFullError
	if !errors.As(err, &full) {
		return errorf(ErrOutOfDiskSpace, "Out of disk space: %v", err)
	}
	return errorf(ErrOutOfDiskSpace,
		"Out of disk space: the data directory %s has %s free, and this write needs %s (with the space kept free for the storage engine's flushes and compactions); reads, deletes and drops still work, and writes resume once space is freed",
		full.Dir, mibString(full.Free), mibString(full.Need))
}

// mibString writes n bytes in MiB with one decimal.
func mibString(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// diskSection is serverStatus.parsec.disk: the data directory's free
// space, in MiB, what is kept free, and whether writes are being refused.
func diskSection(st store.DiskStatus) bson.D {
	if !st.Watched {
		return bson.D{{Key: "watched", Value: false}}
	}
	mib := func(n int64) int64 { return n >> 20 }
	return bson.D{
		{Key: "watched", Value: true},
		{Key: "freeMB", Value: mib(st.Free)},
		{Key: "totalMB", Value: mib(st.Total)},
		{Key: "reserveMB", Value: mib(st.Reserve)},
		{Key: "deleteReserveMB", Value: mib(st.DeleteReserve)},
		{Key: "writesRefused", Value: st.Full},
	}
}
