package rootfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// defaultPath is the PATH of an image whose config sets none, Docker's.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxAttempts bounds how often Get pulls again a root that was evicted
// between its pull and its lease (a cache limit smaller than the roots
// in use).
const maxAttempts = 3

// Credentials are a user name and password (or token) for a registry's
// basic authentication.
type Credentials struct {
	Username, Password string
}

// Options configure a Cache.
type Options struct {
	// Dir holds the cache (under the data directory); it is made if
	// missing. Every process of the host that shares it shares the roots.
	Dir string
	// MaxBytes bounds the disk the roots take; past it the least recently
	// used roots no job holds are removed. Zero or less: no bound.
	MaxBytes int64
	// Keychain finds credentials for a registry; nil means
	// authn.DefaultKeychain (the Docker config, $DOCKER_CONFIG, and its
	// credential helpers).
	Keychain authn.Keychain
	// Basic holds explicit credentials by registry host ("ghcr.io",
	// "127.0.0.1:5000"); they win over Keychain.
	Basic map[string]Credentials
	// Transport is the HTTP transport to registries; nil means a clone of
	// http.DefaultTransport. Plain HTTP is refused to anything but
	// loopback addresses whatever the transport.
	Transport http.RoundTripper
	// Platform is chosen from indexes; zero means HostPlatform.
	Platform Platform
	// MountPoints are directories (relative to the root, e.g. "proc",
	// "workspace") every root has, made empty when the image lacks them,
	// so a sandbox can mount over them in a read-only root.
	MountPoints []string
	// Logger gets a line per pull; nil discards.
	Logger *slog.Logger
}

// Cache keeps image roots on disk, one per image manifest digest, shared
// by every job and every process that uses the same directory.
//
// Layout under Dir: roots/HEX holds a complete root (rootfs/ and
// image.json) and nothing else is ever there: a pull unpacks into tmp/
// and renames the whole directory into place. locks/HEX serialises the
// pulls of a digest across processes (flock). A job holds a root with a
// shared flock on its directory; eviction takes the exclusive lock
// without waiting, so a held root is never removed, and a crashed
// holder's lock goes with its process. index/ remembers which manifest an
// index digest gave for the platform.
type Cache struct {
	dir         string
	maxBytes    int64
	keychain    authn.Keychain
	transport   http.RoundTripper
	platform    Platform
	mountPoints []string
	log         *slog.Logger

	flights flights
	evictMu sync.Mutex
	// onWait, when set (tests), is called when a Get waits for a pull of
	// the same digest by another Get or another process.
	onWait func(digest string)
}

// Root is an unpacked image held for a job: while held it is not
// evicted. Release it when the job ends.
type Root struct {
	// Dir is the root filesystem, to mount read-only as "/".
	Dir string
	// Image is the reference as the caller gave it.
	Image string
	// Repository is the image's repository, fully qualified
	// ("index.docker.io/library/debian").
	Repository string
	// Digest is the digest of the image manifest unpacked ("sha256:…").
	Digest string
	// IndexDigest is the digest of the index it was chosen from, or "".
	IndexDigest string
	// Env is the image config's environment, PATH first (Docker's default
	// PATH when the config has none).
	Env []string
	// WorkingDir and User are the image config's, as written there.
	WorkingDir, User string
	// Bytes is the disk the root takes.
	Bytes int64
	// Skipped counts what unpacking left out or changed.
	Skipped Skipped
	// Pulled is true when this Get unpacked the root, false when it was
	// in the cache.
	Pulled bool

	lease *os.File
	cache *Cache
	once  sync.Once
}

// Pinned returns the image as repository@digest, the form that names
// exactly what ran.
func (r *Root) Pinned() string { return r.Repository + "@" + r.Digest }

// Release lets the root be evicted again; it may be called more than once.
// A Root that no Cache gave out holds nothing.
func (r *Root) Release() error {
	if r.cache == nil {
		return nil
	}
	var err error
	r.once.Do(func() {
		err = r.lease.Close()
		r.cache.evict()
	})
	return err
}

// ident is what a Root says of the reference it was asked by.
type ident struct {
	image, repository, indexDigest string
}

// meta is image.json: what Root reports beyond the files.
type meta struct {
	Digest     string    `json:"digest"`
	Env        []string  `json:"env"`
	WorkingDir string    `json:"working_dir,omitempty"`
	User       string    `json:"user,omitempty"`
	Bytes      int64     `json:"bytes"`
	Skipped    Skipped   `json:"skipped"`
	Unpacked   time.Time `json:"unpacked"`
}

// New opens (or makes) the cache in opts.Dir and removes what crashed
// pulls and evictions left behind.
func New(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("rootfs cache: no directory")
	}
	c := &Cache{
		dir:         opts.Dir,
		maxBytes:    opts.MaxBytes,
		keychain:    opts.Keychain,
		transport:   opts.Transport,
		platform:    opts.Platform,
		mountPoints: opts.MountPoints,
		log:         opts.Logger,
		flights:     flights{m: map[string]*flight{}},
	}
	if c.keychain == nil {
		c.keychain = authn.DefaultKeychain
	}
	if len(opts.Basic) > 0 {
		c.keychain = authn.NewMultiKeychain(basicKeychain(opts.Basic), c.keychain)
	}
	if c.transport == nil {
		c.transport = transport.NewRetry(http.DefaultTransport.(*http.Transport).Clone())
	}
	if c.platform == (Platform{}) {
		c.platform = HostPlatform()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for _, mp := range c.mountPoints {
		if p, err := clean(mp); err != nil || p == "." {
			return nil, fmt.Errorf("rootfs cache: mount point %q: want a path inside the root", mp)
		}
	}
	for _, d := range []string{"roots", "tmp", "locks", "trash", "index"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("rootfs cache: %w", err)
		}
	}
	c.sweep()
	return c, nil
}

// sweep removes unpacks no process is doing (a crash left them) and
// evicted roots not yet removed.
func (c *Cache) sweep() {
	for _, d := range []string{"tmp", "trash"} {
		entries, _ := os.ReadDir(filepath.Join(c.dir, d))
		for _, e := range entries {
			p := filepath.Join(c.dir, d, e.Name())
			f, err := os.Open(p)
			if err != nil {
				continue
			}
			// A pull in progress holds its directory locked.
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				if err := removeTree(p); err != nil {
					c.log.Warn("rootfs: remove leftover", slog.String("dir", p), slog.Any("err", err))
				}
			}
			f.Close()
		}
	}
}

// Get returns the root of image (any reference: a tag, a digest, or
// both), pulling and unpacking it when the cache lacks its digest. Jobs
// of one host that ask for one digest at once share one pull. The root
// is held until Release. A failure of the image itself (not found,
// refused, a digest mismatch, an unsafe layer) is an *Error.
func (c *Cache) Get(ctx context.Context, image string) (*Root, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, &Error{Image: image, Kind: KindReference, Detail: err.Error(), Err: err}
	}
	base := ident{image: image, repository: ref.Context().Name()}
	// A digest already unpacked needs no registry.
	if d, ok := ref.(name.Digest); ok {
		digest, index := d.DigestStr(), ""
		if m, ok := c.indexed(digest); ok {
			digest, index = m, digest
		}
		if r, err := c.lease(base, digest); err != nil || r != nil {
			if r != nil {
				r.IndexDigest = index
			}
			return r, err
		}
	}
	p, err := connect(ctx, image, ref, c.keychain, c.transport)
	if err != nil {
		return nil, err
	}
	res, err := p.resolve(ctx, c.platform)
	if err != nil {
		return nil, err
	}
	if res.indexDigest != (v1.Hash{}) {
		c.remember(res.indexDigest.String(), res.digest.String())
		base.indexDigest = res.indexDigest.String()
	}
	digest := res.digest.String()
	for attempt := 0; attempt < maxAttempts; attempt++ {
		r, err := c.lease(base, digest)
		if err != nil || r != nil {
			return r, err
		}
		pulled := false
		release, err := c.flights.do(ctx, digest, func() (io.Closer, error) {
			hold, err := c.pull(ctx, p, res)
			pulled = hold != nil
			return hold, err
		}, func() { c.waiting(digest) })
		if err != nil {
			release()
			if ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				continue // the Get that pulled for us gave up; pull ourselves
			}
			return nil, err
		}
		// The pull's own hold keeps the new root until every Get that
		// waited for it holds it too.
		r, err = c.lease(base, digest)
		release()
		if err != nil || r != nil {
			if r != nil {
				r.Pulled = pulled
			}
			return r, err
		}
	}
	return nil, fmt.Errorf("image %s: root %s evicted %d times before use", image, digest, maxAttempts)
}

func (c *Cache) waiting(digest string) {
	if c.onWait != nil {
		c.onWait(digest)
	}
}

func (c *Cache) rootDir(digest string) string {
	return filepath.Join(c.dir, "roots", strings.TrimPrefix(digest, "sha256:"))
}

// lease holds the root of digest if the cache has it: a shared lock on
// its directory, taken only if the directory is still the one at its
// path (an eviction renames it away first). A nil Root and nil error
// mean the cache lacks it.
func (c *Cache) lease(base ident, digest string) (*Root, error) {
	dir := c.rootDir(digest)
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open image root: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock image root: %w", err)
	}
	held, err1 := f.Stat()
	now, err2 := os.Stat(dir)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, nil // evicted meanwhile
	}
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	var m meta
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image root %s: %w", digest, err)
	}
	// The directory's modification time is its last use.
	t := time.Now()
	if err := os.Chtimes(dir, t, t); err != nil {
		c.log.Warn("rootfs: mark root used", slog.String("dir", dir), slog.Any("err", err))
	}
	root := filepath.Join(dir, "rootfs")
	if err := c.ensureMountPoints(root); err != nil {
		f.Close()
		return nil, fmt.Errorf("image root %s: %w", digest, err)
	}
	r := &Root{
		Dir: root, Image: base.image, Repository: base.repository, Digest: m.Digest, IndexDigest: base.indexDigest,
		Env: m.Env, WorkingDir: m.WorkingDir, User: m.User, Bytes: m.Bytes, Skipped: m.Skipped,
		lease: f, cache: c,
	}
	return r, nil
}

// ensureMountPoints makes the mount points the image lacks. A root made
// before a mount point was configured gets it on its next use; making an
// empty directory changes nothing for the jobs using the root.
func (c *Cache) ensureMountPoints(root string) error {
	if len(c.mountPoints) == 0 {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, mp := range c.mountPoints {
		p, _ := clean(mp)
		if _, err := r.Lstat(p); err == nil {
			continue // there, as whatever the image made it
		}
		if err := r.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", mp, err)
		}
	}
	return nil
}

// pull unpacks the image res describes into the cache unless another
// process did it first. When it unpacked, it returns a shared lock on the
// new root (the lease of its birth), taken before the root appears, so no
// eviction removes it before the Gets that waited for it hold it.
func (c *Cache) pull(ctx context.Context, p *puller, res *resolved) (io.Closer, error) {
	digest := res.digest.String()
	hexd := strings.TrimPrefix(digest, "sha256:")
	lock, err := lockFile(ctx, filepath.Join(c.dir, "locks", hexd), func() { c.waiting(digest) })
	if err != nil {
		return nil, fmt.Errorf("image %s: wait for the pull of %s: %w", p.image, digest, err)
	}
	defer lock.Close()
	if _, err := os.Stat(c.rootDir(digest)); err == nil {
		return nil, nil
	}
	start := time.Now()
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), hexd+"-")
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", p.image, err)
	}
	// The lock on the directory tells sweep that a pull is in progress.
	tmpLock, err := os.Open(tmp)
	if err == nil {
		err = syscall.Flock(int(tmpLock.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		removeTree(tmp)
		return nil, fmt.Errorf("image %s: lock %s: %w", p.image, tmp, err)
	}
	done := false
	defer func() {
		if !done {
			tmpLock.Close()
			if err := removeTree(tmp); err != nil {
				c.log.Warn("rootfs: remove failed unpack", slog.String("dir", tmp), slog.Any("err", err))
			}
		}
	}()
	m, err := c.unpack(ctx, p, res, tmp)
	if err != nil {
		return nil, err
	}
	// Exclusive while unpacking (sweep leaves it alone), shared from now
	// on: the root's first lease. The lock follows the directory.
	if err := syscall.Flock(int(tmpLock.Fd()), syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("image %s: lock %s: %w", p.image, tmp, err)
	}
	if err := os.Rename(tmp, c.rootDir(digest)); err != nil {
		return nil, fmt.Errorf("image %s: %w", p.image, err)
	}
	done = true
	c.log.Info("rootfs: image unpacked", slog.String("image", p.image), slog.String("digest", digest),
		slog.Int64("bytes", m.Bytes), slog.Duration("duration", time.Since(start)),
		slog.Int("devices_skipped", m.Skipped.Devices), slog.Int("fifos_skipped", m.Skipped.FIFOs),
		slog.Int("setid_cleared", m.Skipped.SetID))
	c.evict()
	return tmpLock, nil
}

// unpack pulls the config and the layers of res into tmp/rootfs and
// writes tmp/image.json.
func (c *Cache) unpack(ctx context.Context, p *puller, res *resolved, tmp string) (*meta, error) {
	cfg, err := p.config(ctx, res.manifest)
	if err != nil {
		return nil, err
	}
	if a := cfg.Architecture; a != "" && (a != c.platform.Architecture || (cfg.OS != "" && cfg.OS != c.platform.OS)) {
		return nil, &Error{Image: p.image, Kind: KindPlatform, Detail: fmt.Sprintf("the image is for %s/%s; this host runs %s", cfg.OS, a, c.platform)}
	}
	rootDir := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(rootDir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	u := newUnpacker(root)
	defer u.close()
	for i, l := range res.manifest.Layers {
		if err := p.layer(ctx, u, i+1, l, cfg.RootFS.DiffIDs[i]); err != nil {
			return nil, err
		}
	}
	if err := c.ensureMountPoints(rootDir); err != nil {
		return nil, err
	}
	size, err := diskUsage(rootDir)
	if err != nil {
		return nil, err
	}
	m := &meta{
		Digest:     res.digest.String(),
		Env:        pathFirst(cfg.Config.Env),
		WorkingDir: cfg.Config.WorkingDir,
		User:       cfg.Config.User,
		Bytes:      size,
		Skipped:    u.skipped,
		Unpacked:   time.Now().UTC(),
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "image.json"), b, 0o600); err != nil {
		return nil, err
	}
	return m, nil
}

// pathFirst returns env with PATH first (Docker's default PATH when env
// has none), the rest in their order.
func pathFirst(env []string) []string {
	out := []string{defaultPath}
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			out[0] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// diskUsage sums the blocks of every file under dir, hard links once.
func diskUsage(dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total += fi.Size()
			return nil
		}
		k := inode{uint64(st.Dev), st.Ino}
		if seen[k] {
			return nil
		}
		seen[k] = true
		total += st.Blocks * 512
		return nil
	})
	return total, err
}

// indexed returns the manifest an index digest gave for the platform.
func (c *Cache) indexed(index string) (string, bool) {
	b, err := os.ReadFile(c.indexFile(index))
	if err != nil {
		return "", false
	}
	m := strings.TrimSpace(string(b))
	if _, err := v1.NewHash(m); err != nil {
		return "", false
	}
	return m, true
}

// remember records the manifest an index gave for the platform; an index
// digest names immutable content, so the record stays true.
func (c *Cache) remember(index, manifest string) {
	p := c.indexFile(index)
	tmp := p + ".tmp" + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, []byte(manifest+"\n"), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
	}
}

func (c *Cache) indexFile(index string) string {
	return filepath.Join(c.dir, "index", strings.ReplaceAll(index, ":", "-")+"-"+strings.ReplaceAll(c.platform.String(), "/", "-"))
}

// evict removes the least recently used roots no job holds until the
// cache fits MaxBytes. A root held by any process is skipped: the limit
// is exceeded rather than a job losing its root.
func (c *Cache) evict() {
	if c.maxBytes <= 0 {
		return
	}
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	type entry struct {
		hex   string
		used  time.Time
		bytes int64
	}
	dirents, err := os.ReadDir(filepath.Join(c.dir, "roots"))
	if err != nil {
		c.log.Warn("rootfs: list roots", slog.Any("err", err))
		return
	}
	var entries []entry
	var total int64
	for _, d := range dirents {
		dir := filepath.Join(c.dir, "roots", d.Name())
		fi, err := os.Stat(dir)
		if err != nil {
			continue
		}
		var m meta
		if b, err := os.ReadFile(filepath.Join(dir, "image.json")); err == nil {
			json.Unmarshal(b, &m)
		}
		entries = append(entries, entry{hex: d.Name(), used: fi.ModTime(), bytes: m.Bytes})
		total += m.Bytes
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= c.maxBytes {
			return
		}
		if c.evictOne(e.hex) {
			total -= e.bytes
		}
	}
	if total > c.maxBytes {
		c.log.Info("rootfs: cache over its limit; the rest is in use", slog.Int64("bytes", total), slog.Int64("max_bytes", c.maxBytes))
	}
}

// evictOne removes the root hex unless some job holds it.
func (c *Cache) evictOne(hex string) bool {
	dir := filepath.Join(c.dir, "roots", hex)
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // held
	}
	held, err1 := f.Stat()
	now, err2 := os.Stat(dir)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		return false
	}
	trash, err := os.MkdirTemp(filepath.Join(c.dir, "trash"), hex+"-")
	if err != nil {
		return false
	}
	gone := filepath.Join(trash, "root")
	if err := os.Rename(dir, gone); err != nil {
		os.Remove(trash)
		return false
	}
	f.Close()
	if err := removeTree(trash); err != nil {
		c.log.Warn("rootfs: remove evicted root", slog.String("dir", trash), slog.Any("err", err))
	}
	c.log.Info("rootfs: root evicted", slog.String("digest", "sha256:"+hex))
	return true
}

// removeTree removes dir and everything in it, first letting its owner
// write every directory (an image may have made some read-only).
func removeTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// lockFile takes an exclusive flock on path, waiting for ctx at most;
// onWait is called when another holds it. Closing the file releases it.
func lockFile(ctx context.Context, path string, onWait func()) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, err
	}
	onWait()
	got := make(chan error, 1)
	// flock cannot be interrupted: if ctx ends first, this goroutine
	// releases the lock as soon as it comes (when the other pull ends).
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	case <-ctx.Done():
		go func() {
			<-got
			f.Close()
		}()
		return nil, ctx.Err()
	}
}

// flights runs one pull per digest in this process; the others wait for
// it.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one pull and the Gets that wait for it. hold, the pull's
// result, is closed when the last of them has released it.
type flight struct {
	done chan struct{}
	err  error
	hold io.Closer
	refs int
}

// do runs fn unless a call for key is running; then it waits for that
// call's result (onWait is told) or for ctx. The caller must call
// release, on success and on error, once it no longer needs what fn
// returned held.
func (fs *flights) do(ctx context.Context, key string, fn func() (io.Closer, error), onWait func()) (release func(), err error) {
	fs.mu.Lock()
	if f, ok := fs.m[key]; ok {
		f.refs++
		fs.mu.Unlock()
		release = func() { fs.unref(f) }
		onWait()
		select {
		case <-f.done:
			return release, f.err
		case <-ctx.Done():
			return release, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{}), err: errors.New("pull panicked"), refs: 1}
	fs.m[key] = f
	fs.mu.Unlock()
	defer func() {
		fs.mu.Lock()
		delete(fs.m, key)
		fs.mu.Unlock()
		close(f.done)
	}()
	f.hold, f.err = fn()
	return func() { fs.unref(f) }, f.err
}

// unref drops one reference to f's hold, closing it with the last.
func (fs *flights) unref(f *flight) {
	fs.mu.Lock()
	f.refs--
	last := f.refs == 0
	fs.mu.Unlock()
	if last {
		<-f.done // the pull has ended: its last waiter may leave early
		if f.hold != nil {
			f.hold.Close()
		}
	}
}

// basicKeychain hands out explicit credentials by registry host.
type basicKeychain map[string]Credentials

// Resolve implements authn.Keychain.
func (k basicKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if c, ok := k[r.RegistryStr()]; ok {
		return &authn.Basic{Username: c.Username, Password: c.Password}, nil
	}
	return authn.Anonymous, nil
}
