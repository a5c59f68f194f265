//go:build !unix

package store

import "io/fs"

// allocated is the space a file takes on disk (its size, here).
func allocated(fi fs.FileInfo) int64 { return fi.Size() }
