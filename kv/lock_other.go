//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kv

import (
	"fmt"
	"os"
)

// dirLock would lock storage.data_dir (see lock_unix.go); here, where
// flock is not available, it only makes the folder. Run one gateway per
// data_dir.
type dirLock struct{}

func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage.data_dir: %w", err)
	}
	return &dirLock{}, nil
}

func (*dirLock) unlock() {}
