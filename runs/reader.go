package runs

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// NewReader returns a store for a process that only shows runs (the HTTP
// edge's admin and signed run pages): Get and List read the Redis mirror
// and, when o.Dir exists on this host, its run directories. Unlike New it
// creates no directory, so it works on a read-only filesystem; Create and
// Open fail when o.Dir does not exist.
func NewReader(o Options) (*Store, error) {
	switch {
	case o.Dir == "" || o.Redis == nil:
		return nil, errors.New("run reader: Dir and Redis are required")
	case o.Retention <= 0:
		return nil, fmt.Errorf("run reader: retention must be positive, got %s", o.Retention)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("run reader: %w", err)
	}
	if o.MaxMirrorBytes <= 0 {
		o.MaxMirrorBytes = DefaultMaxMirrorBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{dir: dir, rdb: o.Redis, retention: o.Retention, maxMirror: o.MaxMirrorBytes, now: o.Now}, nil
}
