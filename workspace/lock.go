package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock waiting: flock(2) cannot be interrupted by a context, so a waiter
// polls with LOCK_NB, backing off from lockPollMin to lockPollMax.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 200 * time.Millisecond
)

// fileLock is an flock(2) lock on a lock file. flock locks belong to the
// open file description, so two opens of the same file exclude each other
// within one process as across processes: the lock serializes goroutines
// and worker processes sharing a data directory on one host.
type fileLock struct {
	f *os.File
}

// lockFile takes an exclusive (or, with shared, a shared) lock on path,
// creating the file and its directory when missing, and waits until it is
// free or ctx is done.
func lockFile(ctx context.Context, path string, shared bool) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	wait := lockPollMin
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}

// Unlock releases the lock. Closing the file releases it too, even when
// the process dies.
func (l *fileLock) Unlock() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unlock %s: %w", l.f.Name(), err)
	}
	return nil
}
