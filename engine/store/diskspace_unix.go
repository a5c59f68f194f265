//go:build linux || darwin

package store

import "syscall"

// statfs reports the bytes an unprivileged writer may still use on dir's
// filesystem and its size.
func statfs(dir string) (free, total int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
