//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// allocated is the space a file takes on disk: Badger's value-log files
// are created at their full size but sparse until written.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
