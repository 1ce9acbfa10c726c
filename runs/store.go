package runs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// File names inside a run's directory.
const (
	MetaFile       = "meta.json"
	TrajectoryFile = "trajectory.jsonl"
	PatchFile      = "patch.diff"
)

// Redis keys.
const (
	indexKey  = "agentfix:runs"
	runPrefix = "agentfix:run:"
)

// DefaultMaxMirrorBytes bounds the trajectory mirrored to Redis; a longer
// one is mirrored up to its last whole record within the bound.
const DefaultMaxMirrorBytes = 64 << 20

// ErrNotFound is returned by Get for a run that does not exist or expired.
var ErrNotFound = errors.New("run not found")

// Options configure a Store.
type Options struct {
	// Dir holds the run directories, AGENTFIX_DATA_DIR/runs. Required.
	Dir string
	// Redis receives the mirror. Required.
	Redis redis.UniversalClient
	// Retention is how long records are kept (AGENTFIX_RUN_RETENTION).
	// Required.
	Retention time.Duration
	// MaxMirrorBytes bounds the trajectory mirrored to Redis
	// (DefaultMaxMirrorBytes when 0).
	MaxMirrorBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Store keeps run records on disk and mirrors them to Redis. It is safe for
// concurrent use.
type Store struct {
	dir       string
	rdb       redis.UniversalClient
	retention time.Duration
	maxMirror int64
	now       func() time.Time
}

// New returns the store in o.Dir, creating the directory (0700: records
// hold code and conversations of private repositories).
func New(o Options) (*Store, error) {
	switch {
	case o.Dir == "" || o.Redis == nil:
		return nil, errors.New("run store: Dir and Redis are required")
	case o.Retention <= 0:
		return nil, fmt.Errorf("run store: retention must be positive, got %s", o.Retention)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("run store: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run store: %w", err)
	}
	if o.MaxMirrorBytes <= 0 {
		o.MaxMirrorBytes = DefaultMaxMirrorBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{dir: dir, rdb: o.Redis, retention: o.Retention, maxMirror: o.MaxMirrorBytes, now: o.Now}, nil
}

// Retention returns how long records are kept.
func (s *Store) Retention() time.Duration { return s.retention }

// Create starts the record of a new run: m.RunID (a fresh id when empty),
// V and, when zero, Started and Status are filled in; the directory, meta.json
// and an empty trajectory are written, and the record is mirrored. Close the
// Run when the job is done with it.
func (s *Store) Create(ctx context.Context, m Meta) (*Run, error) {
	now := s.now()
	if m.RunID == "" {
		m.RunID = NewID(now)
	}
	if err := checkID(m.RunID); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	m.V = MetaVersion
	if m.Started.IsZero() {
		m.Started = now
	}
	if m.Status == "" {
		m.Status = StatusRunning
	}
	dir := filepath.Join(s.dir, m.RunID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create run %s: %w", m.RunID, err)
	}
	return s.open(ctx, dir, m)
}

// Open reopens the record of run id to go on with it (a retried job whose
// agent already ran). When this host's disk lacks it (the retry landed on
// another worker), the directory is restored from the Redis mirror, or,
// when Redis lacks it too, created from m.
func (s *Store) Open(ctx context.Context, id string, m Meta) (*Run, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	dir := filepath.Join(s.dir, id)
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s.restore(ctx, id, m)
	}
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", id, err)
	}
	var old Meta
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, fmt.Errorf("open run %s: %s: %w", id, MetaFile, err)
	}
	return s.open(ctx, dir, old)
}

// restore recreates run id's directory from Redis, or from m.
func (s *Store) restore(ctx context.Context, id string, m Meta) (*Run, error) {
	rec, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		m.RunID = id
		return s.Create(ctx, m)
	}
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", id, err)
	}
	dir := filepath.Join(s.dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open run %s: %w", id, err)
	}
	for name, data := range map[string][]byte{TrajectoryFile: rec.Trajectory, PatchFile: []byte(rec.Patch)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("open run %s: %w", id, err)
		}
	}
	return s.open(ctx, dir, rec.Meta)
}

func (s *Store) open(ctx context.Context, dir string, m Meta) (*Run, error) {
	traj, err := os.OpenFile(filepath.Join(dir, TrajectoryFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", m.RunID, err)
	}
	r := &Run{store: s, dir: dir, id: m.RunID, meta: m, traj: traj}
	if err := r.writeMeta(); err != nil {
		traj.Close()
		return nil, err
	}
	if err := s.index(ctx, m); err != nil {
		traj.Close()
		return nil, err
	}
	if err := r.Save(ctx); err != nil {
		traj.Close()
		return nil, err
	}
	return r, nil
}

// index adds the run to the sorted set of runs and trims what expired.
func (s *Store) index(ctx context.Context, m Meta) error {
	cutoff := s.now().Add(-s.retention).UnixMilli()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, indexKey, redis.Z{Score: float64(m.Started.UnixMilli()), Member: m.RunID})
		p.ZRemRangeByScore(ctx, indexKey, "-inf", "("+strconv.FormatInt(cutoff, 10))
		p.Expire(ctx, indexKey, s.retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("index run %s: %w", m.RunID, err)
	}
	return nil
}

// Record is a run as Get returns it.
type Record struct {
	Meta Meta
	// Trajectory is the JSONL trajectory (possibly cut after a whole record
	// when it was longer than the mirror bound).
	Trajectory []byte
	Patch      string
}

// Get returns run id from Redis, or from this host's disk when Redis does
// not have it; ErrNotFound when neither does.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	if err := checkID(id); err != nil {
		return Record{}, fmt.Errorf("get run: %w (%w)", ErrNotFound, err)
	}
	vals, err := s.rdb.HMGet(ctx, runPrefix+id, "meta", "trajectory", "patch").Result()
	if err != nil {
		return Record{}, fmt.Errorf("get run %s: %w", id, err)
	}
	if meta, ok := vals[0].(string); ok {
		var rec Record
		if err := json.Unmarshal([]byte(meta), &rec.Meta); err != nil {
			return Record{}, fmt.Errorf("get run %s: meta: %w", id, err)
		}
		if rec.Trajectory, err = gunzipField(vals[1]); err != nil {
			return Record{}, fmt.Errorf("get run %s: trajectory: %w", id, err)
		}
		patch, err := gunzipField(vals[2])
		if err != nil {
			return Record{}, fmt.Errorf("get run %s: patch: %w", id, err)
		}
		rec.Patch = string(patch)
		return rec, nil
	}
	return s.getFromDisk(id)
}

func (s *Store) getFromDisk(id string) (Record, error) {
	dir := filepath.Join(s.dir, id)
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("get run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("get run %s: %w", id, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec.Meta); err != nil {
		return Record{}, fmt.Errorf("get run %s: %s: %w", id, MetaFile, err)
	}
	if s.now().Sub(rec.Meta.Started) > s.retention {
		return Record{}, fmt.Errorf("get run %s: %w (expired)", id, ErrNotFound)
	}
	if rec.Trajectory, err = readOptional(filepath.Join(dir, TrajectoryFile)); err != nil {
		return Record{}, fmt.Errorf("get run %s: %w", id, err)
	}
	patch, err := readOptional(filepath.Join(dir, PatchFile))
	if err != nil {
		return Record{}, fmt.Errorf("get run %s: %w", id, err)
	}
	rec.Patch = string(patch)
	return rec, nil
}

// List returns the metadata of the most recent runs, newest first, at most
// limit of them.
func (s *Store) List(ctx context.Context, limit int) ([]Meta, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list runs: limit must be positive, got %d", limit)
	}
	cutoff := s.now().Add(-s.retention).UnixMilli()
	ids, err := s.rdb.ZRevRangeByScore(ctx, indexKey, &redis.ZRangeBy{
		Min: strconv.FormatInt(cutoff, 10), Max: "+inf", Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	cmds := make([]*redis.StringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, runPrefix+id, "meta")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]Meta, 0, len(ids))
	for i, cmd := range cmds {
		b, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired between the two reads
		}
		if err != nil {
			return nil, fmt.Errorf("list runs: %s: %w", ids[i], err)
		}
		var m Meta
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("list runs: %s: %w", ids[i], err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Prune removes the run directories of this host older than the retention
// period (Redis expires its copies by itself) and returns how many it
// removed.
func (s *Store) Prune() (int, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("prune runs: %w", err)
	}
	cutoff := s.now().Add(-s.retention)
	n := 0
	var errs []error
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || !ValidID(id) {
			continue
		}
		started, err := time.Parse(idFormat, id[:len(idFormat)])
		if err != nil || !started.Before(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.dir, id)); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("prune runs: %w", err)
	}
	return n, nil
}

func gunzipField(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(s)))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
