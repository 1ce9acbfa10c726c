package runs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Run is the open record of one run. Its methods are safe for concurrent
// use.
type Run struct {
	store *Store
	dir   string
	id    string

	mu   sync.Mutex
	meta Meta
	traj *os.File
}

// ID returns the run id.
func (r *Run) ID() string { return r.id }

// Dir returns the run's directory on this host.
func (r *Run) Dir() string { return r.dir }

// Meta returns a copy of the run's metadata.
func (r *Run) Meta() Meta {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta
}

// Trajectory returns the writer of trajectory.jsonl, for the agent: each
// Write is appended to the file at once.
func (r *Run) Trajectory() io.Writer { return trajectoryWriter{r} }

type trajectoryWriter struct{ r *Run }

func (w trajectoryWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	if w.r.traj == nil {
		return 0, fmt.Errorf("run %s: trajectory written after Close", w.r.id)
	}
	return w.r.traj.Write(p)
}

// Update changes the metadata with edit and writes meta.json; Save mirrors
// it.
func (r *Run) Update(edit func(*Meta)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	edit(&r.meta)
	r.meta.RunID, r.meta.V = r.id, MetaVersion
	return r.writeMetaLocked()
}

// SetPatch writes patch.diff.
func (r *Run) SetPatch(patch string) error {
	if err := writeFileAtomic(filepath.Join(r.dir, PatchFile), []byte(patch)); err != nil {
		return fmt.Errorf("run %s: %w", r.id, err)
	}
	return nil
}

// Save mirrors the record — metadata, trajectory and patch as they are on
// disk now — to Redis, where it expires after the retention period.
func (r *Run) Save(ctx context.Context) error {
	r.mu.Lock()
	meta, err := json.Marshal(r.meta)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.id, err)
	}
	traj, err := readOptional(filepath.Join(r.dir, TrajectoryFile))
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.id, err)
	}
	traj = cutAtRecord(traj, r.store.maxMirror)
	patch, err := readOptional(filepath.Join(r.dir, PatchFile))
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.id, err)
	}
	key := runPrefix + r.id
	_, err = r.store.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "meta", meta, "trajectory", gz(traj), "patch", gz(patch))
		p.Expire(ctx, key, r.store.retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.id, err)
	}
	return nil
}

// Close closes the trajectory file. It does not Save.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.traj == nil {
		return nil
	}
	err := r.traj.Close()
	r.traj = nil
	if err != nil {
		return fmt.Errorf("close run %s: %w", r.id, err)
	}
	return nil
}

func (r *Run) writeMeta() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeMetaLocked()
}

func (r *Run) writeMetaLocked() error {
	b, err := json.MarshalIndent(r.meta, "", "  ")
	if err != nil {
		return fmt.Errorf("run %s: %w", r.id, err)
	}
	if err := writeFileAtomic(filepath.Join(r.dir, MetaFile), append(b, '\n')); err != nil {
		return fmt.Errorf("run %s: %w", r.id, err)
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file, so a
// reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// cutAtRecord returns b, or when it is longer than limit its longest
// prefix of whole lines within limit.
func cutAtRecord(b []byte, limit int64) []byte {
	if int64(len(b)) <= limit {
		return b
	}
	b = b[:limit]
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[:i+1]
	}
	return nil
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	return buf.Bytes()
}
