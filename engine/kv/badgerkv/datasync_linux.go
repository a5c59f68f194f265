package badgerkv

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync writes f's dirty pages back (data, and metadata only as far
// as reading the data needs it).
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
