package rootfs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/agentfix/agentfix/rootfs"
)

// TestConcurrentGetsPullOnce runs two Gets of one digest at once, in one
// Cache (one process) and in two Caches on one directory (two processes
// share a directory the same way: flock locks belong to the open file).
// The registry holds every blob until one Get waits for the other, so the
// two really overlap; then each blob must have been fetched once.
func TestConcurrentGetsPullOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		twoCaches bool
	}{
		{"one process", false},
		{"two processes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := newTestRegistry(t)
			img := reg.push(t, "shared/app", "1", image{layers: [][]byte{smallLayer(t, "one"), smallLayer(t, "two")}})
			dir := filepath.Join(t.TempDir(), "images")
			c1 := newCache(t, rootfs.Options{Dir: dir})
			c2 := c1
			if tc.twoCaches {
				c2 = newCache(t, rootfs.Options{Dir: dir})
			}
			waited, duplicate := make(chan struct{}), make(chan struct{})
			var waitOnce, dupOnce sync.Once
			for _, c := range []*rootfs.Cache{c1, c2} {
				rootfs.SetWaitHook(c, func(string) { waitOnce.Do(func() { close(waited) }) })
			}
			reg.setGate(func(w http.ResponseWriter, r *http.Request, d string, n int) bool {
				if n > 1 {
					dupOnce.Do(func() { close(duplicate) })
				}
				select {
				case <-waited:
				case <-duplicate: // both pull: let them, the counts below fail
				case <-r.Context().Done():
				}
				return false
			})
			var wg sync.WaitGroup
			roots := make([]*rootfs.Root, 2)
			errs := make([]error, 2)
			for i, c := range []*rootfs.Cache{c1, c2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					roots[i], errs[i] = c.Get(context.Background(), reg.ref("shared/app:1"))
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("Get %d: %v", i, err)
				}
				defer roots[i].Release()
			}
			for _, d := range append([]v1.Hash{img.config}, img.layers...) {
				if n := reg.blobCount(d); n != 1 {
					t.Errorf("blob %s fetched %d times, want once", d, n)
				}
			}
			if roots[0].Dir != roots[1].Dir || roots[0].Pulled == roots[1].Pulled {
				t.Errorf("roots %s (pulled %v) and %s (pulled %v); want one root, pulled by one Get", roots[0].Dir, roots[0].Pulled, roots[1].Dir, roots[1].Pulled)
			}
		})
	}
}

// pushDistinct pushes n images of about the same size, each its own
// digest, as repo:0 … repo:n-1.
func pushDistinct(t *testing.T, reg *testRegistry, repo string, n int) []string {
	var refs []string
	for i := range n {
		noise := make([]byte, 96<<10)
		rand.Read(noise)
		reg.push(t, repo, fmt.Sprint(i), image{layers: [][]byte{tarball(t, file("marker", 0o644, fmt.Sprint(i)), file("noise", 0o644, string(noise)))}})
		refs = append(refs, reg.ref(fmt.Sprintf("%s:%d", repo, i)))
	}
	return refs
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestEvictionKeepsHeldRoots(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	refs := pushDistinct(t, reg, "evict/app", 3)
	probe := get(t, newCache(t, rootfs.Options{}), refs[0])
	dir := filepath.Join(t.TempDir(), "images")
	// Room for one root and a half.
	c := newCache(t, rootfs.Options{Dir: dir, MaxBytes: probe.Bytes * 3 / 2})

	a, err := c.Get(context.Background(), refs[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Get(context.Background(), refs[1])
	if err != nil {
		t.Fatal(err)
	}
	if !exists(a.Dir) || !exists(b.Dir) {
		t.Fatalf("two held roots over the limit: a %v, b %v; want both kept", exists(a.Dir), exists(b.Dir))
	}
	b.Release()
	if exists(b.Dir) {
		t.Errorf("released root b is still there over the limit")
	}
	if got := readFile(t, filepath.Join(a.Dir, "marker")); got != "0" {
		t.Errorf("held root a: marker %q", got)
	}

	// Another process holds c; releasing a makes a the one to go.
	other := newCache(t, rootfs.Options{Dir: dir, MaxBytes: probe.Bytes * 3 / 2})
	held, err := other.Get(context.Background(), refs[2])
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if !exists(a.Dir) {
		t.Fatalf("root a evicted while held")
	}
	a.Release()
	if exists(a.Dir) || !exists(held.Dir) {
		t.Errorf("after releasing a: a there %v, the other process's root there %v; want a gone, the other kept", exists(a.Dir), exists(held.Dir))
	}
	if roots, _ := os.ReadDir(filepath.Join(dir, "roots")); len(roots) != 1 {
		t.Errorf("%d roots, want 1", len(roots))
	}
	if trash, _ := os.ReadDir(filepath.Join(dir, "trash")); len(trash) != 0 {
		t.Errorf("trash holds %d entries after eviction", len(trash))
	}
}

func TestEvictionLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	refs := pushDistinct(t, reg, "lru/app", 4)
	probe := get(t, newCache(t, rootfs.Options{}), refs[0])
	// Room for two roots and a half.
	c := newCache(t, rootfs.Options{MaxBytes: probe.Bytes * 5 / 2})
	use := func(i int) string {
		r, err := c.Get(context.Background(), refs[i])
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
		return r.Dir
	}
	dirs := []string{use(0), use(1), use(2)} // 0 goes: the oldest
	if exists(dirs[0]) || !exists(dirs[1]) || !exists(dirs[2]) {
		t.Fatalf("after three: %v %v %v; want the first evicted", exists(dirs[0]), exists(dirs[1]), exists(dirs[2]))
	}
	use(1) // 1 is now newer than 2
	d3 := use(3)
	if !exists(dirs[1]) || exists(dirs[2]) || !exists(d3) {
		t.Errorf("after using 1 again and pulling 3: 1 %v, 2 %v, 3 %v; want 2 evicted", exists(dirs[1]), exists(dirs[2]), exists(d3))
	}
}

// TestCrashDuringUnpack kills a process in the middle of unpacking (a
// child test process that pulls from this test's registry, which sends
// half of the layer and waits), then opens the cache again: no root is
// there, the leftover unpack is removed, and the next Get pulls again.
func TestCrashDuringUnpack(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	var files []entry
	for i := range 32 {
		noise := make([]byte, 16<<10)
		rand.Read(noise)
		files = append(files, file(fmt.Sprintf("data/%02d", i), 0o644, string(noise)))
	}
	files = append(files, file("marker", 0o644, "complete"))
	img := reg.push(t, "crash/app", "1", image{layers: [][]byte{tarball(t, files...)}})
	layer := img.layers[0]
	blob := reg.blobs.get(layer)
	halfSent := make(chan struct{})
	var once sync.Once
	reg.setGate(func(w http.ResponseWriter, r *http.Request, d string, n int) bool {
		if d != layer.String() || n > 1 {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		w.WriteHeader(http.StatusOK)
		w.Write(blob[:len(blob)/2])
		w.(http.Flusher).Flush()
		once.Do(func() { close(halfSent) })
		<-r.Context().Done() // until the child dies
		return true
	})

	dir := filepath.Join(t.TempDir(), "images")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), "ROOTFS_CRASH_DIR="+dir, "ROOTFS_CRASH_IMAGE="+reg.ref("crash/app:1"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-halfSent:
	case err := <-exited:
		t.Fatalf("child exited before the layer was half sent: %v\n%s", err, out.String())
	}
	// The child is unpacking what it got; files are in its tmp directory.
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	tmp, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(tmp) != 1 {
		t.Fatalf("tmp holds %d entries after the crash, want the one half-done unpack", len(tmp))
	}
	if roots, _ := os.ReadDir(filepath.Join(dir, "roots")); len(roots) != 0 {
		t.Fatalf("a crashed unpack left a root")
	}

	c := newCache(t, rootfs.Options{Dir: dir})
	if tmp, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(tmp) != 0 {
		t.Errorf("opening the cache left the crashed unpack in tmp")
	}
	r := get(t, c, reg.ref("crash/app:1"))
	if !r.Pulled || reg.blobCount(layer) != 2 {
		t.Errorf("Get after the crash: Pulled %v, layer fetched %d times; want a fresh pull", r.Pulled, reg.blobCount(layer))
	}
	if got := readFile(t, filepath.Join(r.Dir, "marker")); got != "complete" {
		t.Errorf("marker %q", got)
	}
}

// TestCrashHelper is the child of TestCrashDuringUnpack; it does nothing
// in a normal run.
func TestCrashHelper(t *testing.T) {
	dir, ref := os.Getenv("ROOTFS_CRASH_DIR"), os.Getenv("ROOTFS_CRASH_IMAGE")
	if dir == "" {
		t.Skip("only runs as the child of TestCrashDuringUnpack")
	}
	c, err := rootfs.New(rootfs.Options{Dir: dir, Keychain: emptyKeychain{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(context.Background(), ref)
	t.Fatalf("Get returned (%v); the parent should have killed this process", err)
}

// TestSweepKeepsALiveUnpack opens a cache while another holds an unpack
// in progress: the unpack's directory is locked, so it stays.
func TestSweepKeepsALiveUnpack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "images")
	newCache(t, rootfs.Options{Dir: dir})
	live := filepath.Join(dir, "tmp", "live")
	dead := filepath.Join(dir, "tmp", "dead")
	for _, d := range []string{live, dead} {
		if err := os.MkdirAll(filepath.Join(d, "rootfs", "ro"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(d, "rootfs", "ro"), 0o555)
	}
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	newCache(t, rootfs.Options{Dir: dir})
	if !exists(live) || exists(dead) {
		t.Errorf("after opening: live unpack there %v, dead one there %v; want live kept, dead removed", exists(live), exists(dead))
	}
}

func TestCanceledLeaderLetsTheOtherPull(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	img := reg.push(t, "cancel/app", "1", image{layers: [][]byte{smallLayer(t, "cancel")}})
	c := newCache(t, rootfs.Options{})
	leaderCtx, cancel := context.WithCancel(context.Background())
	atConfig, waiting := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rootfs.SetWaitHook(c, func(string) { once.Do(func() { close(waiting) }) })
	reg.setGate(func(w http.ResponseWriter, r *http.Request, d string, n int) bool {
		if d == img.config.String() && n == 1 {
			// The first pull stops here until the second Get waits for
			// it; then the first Get's caller gives up.
			close(atConfig)
			<-waiting
			cancel()
			<-r.Context().Done()
			return true
		}
		return false
	})
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Get(leaderCtx, reg.ref("cancel/app:1"))
		leaderErr <- err
	}()
	select {
	case <-atConfig:
	case err := <-leaderErr:
		t.Fatalf("first Get ended before fetching the config: %v", err)
	}
	r := get(t, c, reg.ref("cancel/app:1"))
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Errorf("first Get: %v, want context.Canceled", err)
	}
	if !r.Pulled || !strings.HasSuffix(readFile(t, filepath.Join(r.Dir, "etc/marker")), "cancel\n") {
		t.Errorf("second Get: Pulled %v; want it to pull itself", r.Pulled)
	}
}
