package rootfs_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/agentfix/agentfix/rootfs"
)

// testRegistry is go-containerregistry's registry on 127.0.0.1 with a
// blob store the tests can corrupt, optional basic auth, counts of the
// requests it served, and an optional gate before each blob it serves.
type testRegistry struct {
	srv   *httptest.Server
	host  string // 127.0.0.1:PORT
	blobs *blobStore

	user, pass string // basic auth when user is set

	mu        sync.Mutex
	blobGets  map[string]int // digest → GETs
	manifests int            // manifest GETs
	// gate, when set, runs before a blob GET is served; it may write the
	// response itself and return true.
	// n counts this digest's GETs, this one included.
	gate func(w http.ResponseWriter, r *http.Request, digest string, n int) bool
	// rewrite, when set, changes manifest bodies as they are served
	// (the Docker-Content-Digest header stays the stored one's).
	rewrite func([]byte) []byte
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	r := &testRegistry{blobs: &blobStore{m: map[string][]byte{}}, blobGets: map[string]int{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(r.blobs))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
		}
		if req.Method == http.MethodGet {
			if i := strings.Index(req.URL.Path, "/blobs/sha256:"); i >= 0 {
				d := req.URL.Path[i+len("/blobs/"):]
				r.mu.Lock()
				r.blobGets[d]++
				n := r.blobGets[d]
				gate := r.gate
				r.mu.Unlock()
				if gate != nil && gate(w, req, d, n) {
					return
				}
			}
			if strings.Contains(req.URL.Path, "/manifests/") {
				r.mu.Lock()
				r.manifests++
				rewrite := r.rewrite
				r.mu.Unlock()
				if rewrite != nil {
					rec := httptest.NewRecorder()
					reg.ServeHTTP(rec, req)
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					body := rewrite(rec.Body.Bytes())
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
					w.WriteHeader(rec.Code)
					w.Write(body)
					return
				}
			}
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

func (r *testRegistry) blobCount(d v1.Hash) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobGets[d.String()]
}

func (r *testRegistry) manifestCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manifests
}

func (r *testRegistry) setGate(g func(w http.ResponseWriter, req *http.Request, digest string, n int) bool) {
	r.mu.Lock()
	r.gate = g
	r.mu.Unlock()
}

// ref names repo:tag (or repo@digest) at this registry.
func (r *testRegistry) ref(repoTag string) string { return r.host + "/" + repoTag }

// blobStore is the registry's blob storage, a map the tests may change.
type blobStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *blobStore) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[h.String()]
	if !ok {
		return nil, registry.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *blobStore) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[h.String()]
	if !ok {
		return 0, registry.ErrNotFound
	}
	return int64(len(b)), nil
}

func (s *blobStore) put(b []byte) v1.Hash {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	s.mu.Lock()
	s.m[h.String()] = b
	s.mu.Unlock()
	return h
}

func (s *blobStore) set(h v1.Hash, b []byte) {
	s.mu.Lock()
	s.m[h.String()] = b
	s.mu.Unlock()
}

func (s *blobStore) get(h v1.Hash) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[h.String()]
}

// entry is one file of a test layer.
type entry struct {
	hdr  tar.Header
	body []byte
}

// epoch is the modification time of every test entry, so images (and
// their digests) are the same on every run.
var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func dir(name string, mode int64) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch}}
}

func file(name string, mode int64, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, ModTime: epoch, Size: int64(len(body))}, body: []byte(body)}
}

func symlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: epoch}}
}

func hardlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644, ModTime: epoch}}
}

func device(name string, typ byte, major, minor int64) entry {
	return entry{hdr: tar.Header{Typeflag: typ, Name: name, Mode: 0o666, ModTime: epoch, Devmajor: major, Devminor: minor}}
}

// tarball is the uncompressed layer of entries.
func tarball(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := e.hdr
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %s: %v", h.Name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatalf("tar body %s: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// image is a test image: its layers as uncompressed tar archives, and
// what its config says.
type image struct {
	layers  [][]byte
	env     []string
	workdir string
	user    string
	os      string // "" means linux
	arch    string // "" means the host's
	// compressed, when set, gives layer i's blob (default: gzip of the
	// tar); the manifest names the blob's digest, the config the tar's.
	compressed func(i int, tar []byte) []byte
	// edit, when set, changes the config before it is stored.
	edit func(*v1.ConfigFile)
}

// pushed is an image in the registry.
type pushed struct {
	digest v1.Hash // of the manifest
	size   int64
	layers []v1.Hash
	config v1.Hash
}

// push stores img's blobs and puts its manifest as repo:tag.
func (r *testRegistry) push(t testing.TB, repo, tag string, img image) pushed {
	t.Helper()
	cfg := v1.ConfigFile{
		OS:           img.os,
		Architecture: img.arch,
		Config:       v1.Config{Env: img.env, WorkingDir: img.workdir, User: img.user},
		RootFS:       v1.RootFS{Type: "layers"},
	}
	if cfg.OS == "" {
		cfg.OS = "linux"
	}
	if cfg.Architecture == "" {
		cfg.Architecture = runtime.GOARCH
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1}
	var p pushed
	for i, l := range img.layers {
		diffID, _, _ := v1.SHA256(bytes.NewReader(l))
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
		blob := gzipped(t, l)
		if img.compressed != nil {
			blob = img.compressed(i, l)
		}
		d := r.blobs.put(blob)
		p.layers = append(p.layers, d)
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: int64(len(blob)), Digest: d})
	}
	if img.edit != nil {
		img.edit(&cfg)
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.config = r.blobs.put(cb)
	m.Config = v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(cb)), Digest: p.config}
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p.digest = r.putManifest(t, repo, tag, types.OCIManifestSchema1, mb)
	p.size = int64(len(mb))
	return p
}

// platformImage is one entry of an index.
type platformImage struct {
	platform v1.Platform
	image    pushed
}

// pushIndex puts an index of the entries as repo:tag.
func (r *testRegistry) pushIndex(t testing.TB, repo, tag string, entries ...platformImage) v1.Hash {
	t.Helper()
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for _, e := range entries {
		pl := e.platform
		idx.Manifests = append(idx.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: e.image.size, Digest: e.image.digest, Platform: &pl})
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return r.putManifest(t, repo, tag, types.OCIImageIndex, b)
}

func (r *testRegistry) putManifest(t testing.TB, repo, tag string, mt types.MediaType, b []byte) v1.Hash {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, r.srv.URL+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", string(mt))
	if r.user != "" {
		req.SetBasicAuth(r.user, r.pass)
	}
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("put manifest %s:%s: %s %s", repo, tag, resp.Status, body)
	}
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h
}

// busyboxLayer is a small root: Debian's static busybox, a shell and cat
// through it, the mount points bwrap needs, and a marker file.
func busyboxLayer(t testing.TB, marker string) []byte {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("read /bin/busybox (Debian's busybox-static; make deps installs it): %v", err)
	}
	return tarball(t,
		dir("bin/", 0o755),
		entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, ModTime: epoch, Size: int64(len(bb))}, body: bb},
		symlink("bin/sh", "busybox"),
		symlink("bin/cat", "/bin/busybox"),
		dir("proc/", 0o555),
		dir("dev/", 0o755),
		dir("tmp/", 0o1777),
		file("marker", 0o644, marker),
	)
}

// newCache opens a cache in a fresh directory for tests.
func newCache(t testing.TB, o rootfs.Options) *rootfs.Cache {
	t.Helper()
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), "images")
	}
	if o.Keychain == nil {
		o.Keychain = emptyKeychain{}
	}
	c, err := rootfs.New(o)
	if err != nil {
		t.Fatalf("rootfs.New: %v", err)
	}
	return c
}

// get is Get that fails the test on error; the root is released at the
// test's end.
func get(t testing.TB, c *rootfs.Cache, ref string) *rootfs.Root {
	t.Helper()
	r, err := c.Get(context.Background(), ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref, err)
	}
	t.Cleanup(func() { r.Release() })
	return r
}
