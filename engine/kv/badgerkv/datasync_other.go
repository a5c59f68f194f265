//go:build !linux

package badgerkv

import "os"

// datasync writes f's dirty pages back.
func datasync(f *os.File) error { return f.Sync() }
