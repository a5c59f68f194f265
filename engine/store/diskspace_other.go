//go:build !linux && !darwin

package store

import "errors"

func statfs(string) (free, total int64, err error) {
	return 0, 0, errors.New("free space is not watched on this system")
}
