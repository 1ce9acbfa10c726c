// Package setupcache keeps what a job's setup put in its caches (HOME, and
// under it the Go module and build caches, npm, pnpm, yarn, pip, uv,
// cargo, Maven and Gradle) for the next job of the same repository, keyed
// by what decides their contents: the image digest, the setup commands and
// the hashes of the lockfiles in the tree. The next job gets a copy
// (reflinked where the file system can), never the saved directory, so
// jobs never share anything writable; setup still runs and finds its
// caches warm. Nothing crosses repositories: each has its own directory.
//
// Entries are evicted least recently used past a byte limit, and when they
// are older than a maximum age. A per-repository flock lets saves and
// restores of every process of the host share a directory.
package setupcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentfix/agentfix/internal/copytree"
	"github.com/agentfix/agentfix/internal/logattr"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 10 << 30
	DefaultMaxAge   = 7 * 24 * time.Hour
)

// Options configure a Cache.
type Options struct {
	// Dir holds the cache; it is made if missing.
	Dir string
	// MaxBytes bounds the disk the entries take (DefaultMaxBytes when 0).
	MaxBytes int64
	// MaxAge removes entries not used for longer (DefaultMaxAge when 0).
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// Cache keeps setup caches on disk. Layout under Dir: repos/R/K is the
// entry of key K of repository R (both hashed), tmp/ holds saves in
// progress, locks/R serialises a repository's saves against its restores.
type Cache struct {
	dir      string
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// New opens the cache at o.Dir, removing what crashed saves left.
func New(o Options) (*Cache, error) {
	if o.Dir == "" {
		return nil, errors.New("setup cache: a directory is required")
	}
	c := &Cache{dir: o.Dir, maxBytes: o.MaxBytes, maxAge: o.MaxAge, now: o.Now, log: o.Logger}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if c.maxAge <= 0 {
		c.maxAge = DefaultMaxAge
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{"repos", "locks"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("setup cache: %w", err)
		}
	}
	if err := copytree.Remove(filepath.Join(o.Dir, "tmp")); err != nil {
		return nil, fmt.Errorf("setup cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("setup cache: %w", err)
	}
	return c, nil
}

// Key names the caches of one environment: the image digest (or "" for
// the worker's own root), the setup commands in order, and the lockfiles
// (Lockfiles) by path.
func Key(digest string, setup []string, lockfiles map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "digest %q\n", digest)
	for _, c := range setup {
		fmt.Fprintf(h, "setup %q\n", c)
	}
	paths := make([]string, 0, len(lockfiles))
	for p := range lockfiles {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "lock %q %s\n", p, lockfiles[p])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Restore copies the caches saved for repo and key into dst, an existing
// directory (the job's HOME). It reports whether there were any.
func (c *Cache) Restore(ctx context.Context, repo, key, dst string) (bool, error) {
	unlock, err := c.lock(repo, syscall.LOCK_SH)
	if err != nil {
		return false, err
	}
	defer unlock()
	entry := c.entry(repo, key)
	if _, err := os.Stat(entry); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := copytree.Into(ctx, entry, dst); err != nil {
		return false, fmt.Errorf("setup cache: restore: %w", err)
	}
	now := c.now()
	if err := os.Chtimes(entry, now, now); err != nil {
		c.log.Warn("setup cache: mark an entry used", logattr.Err, err)
	}
	return true, nil
}

// Save keeps a copy of src (the job's HOME after setup) as the caches of
// repo and key, replacing what was saved for them, then evicts.
func (c *Cache) Save(ctx context.Context, repo, key, src string) error {
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), "save-")
	if err != nil {
		return fmt.Errorf("setup cache: save: %w", err)
	}
	defer func() {
		if err := copytree.Remove(tmp); err != nil {
			c.log.Warn("setup cache: remove a replaced entry", logattr.Err, err)
		}
	}()
	copied := filepath.Join(tmp, "entry")
	if err := copytree.Copy(ctx, src, copied); err != nil {
		return fmt.Errorf("setup cache: save: %w", err)
	}
	unlock, err := c.lock(repo, syscall.LOCK_EX)
	if err != nil {
		return err
	}
	entry := c.entry(repo, key)
	err = os.MkdirAll(filepath.Dir(entry), 0o700)
	if err == nil {
		err = os.Rename(entry, filepath.Join(tmp, "old"))
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err == nil {
		err = os.Rename(copied, entry)
	}
	unlock()
	if err != nil {
		return fmt.Errorf("setup cache: save: %w", err)
	}
	now := c.now()
	if err := os.Chtimes(entry, now, now); err != nil {
		c.log.Warn("setup cache: mark an entry used", logattr.Err, err)
	}
	// The entry's size, measured once here, so eviction does not walk
	// every entry after every save.
	if err := os.WriteFile(entry+sizeSuffix, []byte(strconv.FormatInt(treeBytes(entry), 10)), 0o600); err != nil {
		c.log.Warn("setup cache: record an entry's size", logattr.Err, err)
	}
	c.evict()
	return nil
}

// sizeSuffix names the file next to an entry that holds its size.
const sizeSuffix = ".size"

// entryBytes is an entry's recorded size, measured when none is.
func entryBytes(dir string) int64 {
	if b, err := os.ReadFile(dir + sizeSuffix); err == nil {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return n
		}
	}
	return treeBytes(dir)
}

// entry is the directory of repo's key.
func (c *Cache) entry(repo, key string) string {
	return filepath.Join(c.dir, "repos", hashName(repo), hashName(key))
}

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// lock takes repo's flock (shared or exclusive) and returns its release.
func (c *Cache) lock(repo string, how int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(c.dir, "locks", hashName(repo)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("setup cache: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("setup cache: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// stored is one entry found by evict.
type stored struct {
	repo, dir string
	used      time.Time
	bytes     int64
}

// evict removes entries older than the maximum age, then the least
// recently used past the byte limit.
func (c *Cache) evict() {
	var all []stored
	var total int64
	repos, _ := os.ReadDir(filepath.Join(c.dir, "repos"))
	for _, r := range repos {
		keys, _ := os.ReadDir(filepath.Join(c.dir, "repos", r.Name()))
		for _, k := range keys {
			if !k.IsDir() {
				continue // a size file
			}
			dir := filepath.Join(c.dir, "repos", r.Name(), k.Name())
			fi, err := os.Stat(dir)
			if err != nil {
				continue
			}
			s := stored{repo: r.Name(), dir: dir, used: fi.ModTime(), bytes: entryBytes(dir)}
			all = append(all, s)
			total += s.bytes
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	cutoff := c.now().Add(-c.maxAge)
	for _, s := range all {
		if !s.used.Before(cutoff) && total <= c.maxBytes {
			break // the rest are newer
		}
		if c.remove(s) {
			total -= s.bytes
		}
	}
}

// remove deletes an entry under its repository's exclusive lock.
func (c *Cache) remove(s stored) bool {
	f, err := os.OpenFile(filepath.Join(c.dir, "locks", s.repo), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return false
	}
	if err := copytree.Remove(s.dir); err != nil {
		c.log.Warn("setup cache: evict an entry", logattr.Err, err)
		return false
	}
	os.Remove(s.dir + sizeSuffix)
	c.log.Info("setup cache: evicted an entry", "bytes", s.bytes, "last_used", s.used)
	return true
}

// treeBytes is the disk a tree takes (blocks allocated).
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// lockfileNames are the files whose contents decide what setup puts in
// the caches.
var lockfileNames = []string{
	"go.sum", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lockb",
	"poetry.lock", "uv.lock", "Pipfile.lock", "Cargo.lock", "Gemfile.lock", "pom.xml", "composer.lock",
}

// isLockfile reports whether a file name is one of the lockfiles:
// lockfileNames, requirements*.txt and build.gradle*.
func isLockfile(name string) bool {
	return slices.Contains(lockfileNames, name) ||
		strings.HasPrefix(name, "requirements") && strings.HasSuffix(name, ".txt") ||
		strings.HasPrefix(name, "build.gradle")
}

// maxLockfileDepth is how deep under the tree's root lockfiles are looked
// for (a monorepo's packages/web/package-lock.json is at depth 3).
const maxLockfileDepth = 3

// skipDirs are never searched for lockfiles.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "target": true, ".venv": true}

// Lockfiles returns the SHA-256 of each lockfile in the tree at dir, by
// its slash path, looking maxLockfileDepth directories deep; symbolic
// links are not followed.
func Lockfiles(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if p != dir && (skipDirs[d.Name()] || strings.Count(rel, string(filepath.Separator)) >= maxLockfileDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isLockfile(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("setup cache: lockfiles: %w", err)
	}
	return out, nil
}
