//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirLock is an exclusive lock on storage.data_dir. nats-server takes none,
// and two servers writing one store corrupt it: a second gateway started
// on the same data_dir fails at once instead. The kernel releases it when
// the process ends, however it ends.
type dirLock struct{ f *os.File }

// lockFile is the lock's file inside data_dir.
const lockFile = "shield.lock"

func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage.data_dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage.data_dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("storage.data_dir %s is in use by another process (another gateway?)", dir)
		}
		return nil, fmt.Errorf("storage.data_dir %s: lock: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
