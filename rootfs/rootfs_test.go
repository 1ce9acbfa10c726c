package rootfs_test

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/agentfix/agentfix/rootfs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// emptyKeychain has no credentials: tests do not read the host's Docker
// config unless they mean to.
type emptyKeychain struct{}

func (emptyKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return authn.Anonymous, nil
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestGetBusybox(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	img := reg.push(t, "tools/busybox", "1", image{
		layers:  [][]byte{busyboxLayer(t, "hello from the image\n")},
		env:     []string{"FOO=1", "PATH=/bin:/usr/bin", "BAR=2"},
		workdir: "/src",
		user:    "1000:1000",
	})
	c := newCache(t, rootfs.Options{MountPoints: []string{"workspace", "cache/go"}})

	r := get(t, c, reg.ref("tools/busybox:1"))
	if got := readFile(t, filepath.Join(r.Dir, "marker")); got != "hello from the image\n" {
		t.Errorf("marker = %q", got)
	}
	want := rootfs.Root{
		Dir:        r.Dir,
		Image:      reg.ref("tools/busybox:1"),
		Repository: reg.host + "/tools/busybox",
		Digest:     img.digest.String(),
		Env:        []string{"PATH=/bin:/usr/bin", "FOO=1", "BAR=2"},
		WorkingDir: "/src",
		User:       "1000:1000",
		Bytes:      r.Bytes,
		Pulled:     true,
	}
	if diff := cmp.Diff(&want, r, cmpRoot); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	if r.Bytes < 1<<20 {
		t.Errorf("Bytes = %d; busybox alone is about 2 MB", r.Bytes)
	}
	if got, want := r.Pinned(), reg.host+"/tools/busybox@"+img.digest.String(); got != want {
		t.Errorf("Pinned() = %s, want %s", got, want)
	}
	for _, mp := range []string{"workspace", "cache/go", "proc"} {
		if fi, err := os.Stat(filepath.Join(r.Dir, mp)); err != nil || !fi.IsDir() {
			t.Errorf("mount point %s: %v", mp, err)
		}
	}
	fi, err := os.Stat(filepath.Join(r.Dir, "bin/busybox"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/busybox: %v %v, want mode 0755", fi, err)
	}
	if !fi.ModTime().Equal(epoch) {
		t.Errorf("bin/busybox modified %v, want the layer's %v", fi.ModTime(), epoch)
	}
	if target, err := os.Readlink(filepath.Join(r.Dir, "bin/cat")); err != nil || target != "/bin/busybox" {
		t.Errorf("bin/cat -> %q (%v), want /bin/busybox", target, err)
	}

	// Again by tag: from the cache, one manifest request, no blob.
	blobs := reg.blobCount(img.layers[0])
	again := get(t, c, reg.ref("tools/busybox:1"))
	if again.Pulled || again.Dir != r.Dir || reg.blobCount(img.layers[0]) != blobs {
		t.Errorf("second Get: Pulled %v, Dir %s (first %s), layer fetched %d times; want the cached root", again.Pulled, again.Dir, r.Dir, reg.blobCount(img.layers[0]))
	}
	// By digest: no request at all.
	manifests := reg.manifestCount()
	byDigest := get(t, c, reg.ref("tools/busybox@"+img.digest.String()))
	if byDigest.Pulled || byDigest.Dir != r.Dir || reg.manifestCount() != manifests {
		t.Errorf("Get by digest: Pulled %v, %d manifest requests; want the cached root without asking the registry", byDigest.Pulled, reg.manifestCount()-manifests)
	}
	// tag@digest: the digest wins.
	both := get(t, c, reg.ref("tools/busybox:other@"+img.digest.String()))
	if both.Digest != img.digest.String() {
		t.Errorf("Get tag@digest: digest %s, want %s", both.Digest, img.digest)
	}
}

var cmpRoot = cmp.Options{cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".lease", ".cache", ".once":
		return true
	}
	return false
}, cmp.Ignore())}

func TestBusyboxRootRunsUnderBwrap(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatalf("bwrap not found (Debian's bubblewrap; make deps installs it): %v", err)
	}
	reg := newTestRegistry(t)
	reg.push(t, "tools/busybox", "1", image{layers: [][]byte{busyboxLayer(t, "marker inside\n")}})
	c := newCache(t, rootfs.Options{})
	r := get(t, c, reg.ref("tools/busybox:1"))
	out, err := exec.Command(bwrap, "--unshare-all", "--die-with-parent",
		"--ro-bind", r.Dir, "/", "--proc", "/proc", "--dev", "/dev",
		"/bin/sh", "-c", "cat /marker && ls /dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap with the image as /: %v\n%s", err, out)
	}
	if got, want := string(out), "marker inside\n/dev/null\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// tree lists the files under dir as "path type [mode] [-> target]",
// sorted; hard links to one inode share a "#N".
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	inodes := map[uint64]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := rel
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " link -> " + target
		case fi.IsDir():
			line += " dir " + fi.Mode().String()
		default:
			body, _ := os.ReadFile(p)
			line += " file " + fi.Mode().String() + " " + strings.TrimSpace(string(body))
			st := fi.Sys().(*syscall.Stat_t)
			if st.Nlink > 1 {
				if _, ok := inodes[st.Ino]; !ok {
					inodes[st.Ino] = len(inodes) + 1
				}
				line += " #" + string(rune('0'+inodes[st.Ino]))
			}
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestWhiteoutsOpaqueDirectoriesAndLinks(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	lower := tarball(t,
		dir("a/", 0o755),
		file("a/keep", 0o644, "keep"),
		file("a/gone", 0o644, "gone"),
		dir("a/sub/", 0o755),
		file("a/sub/deep", 0o644, "deep"),
		dir("b/", 0o755),
		file("b/old", 0o644, "old"),
		dir("b/sub/", 0o755),
		file("b/sub/old", 0o644, "old"),
		dir("b/merged/", 0o755),
		file("b/merged/old", 0o644, "old"),
		file("data", 0o644, "shared"),
		file("to-dir", 0o644, "was a file"),
		dir("to-file/", 0o755),
		file("to-file/x", 0o644, "x"),
		dir("ro/", 0o555),
		file("ro/inside", 0o444, "ro"),
		symlink("usrlink", "a"),
	)
	upper := tarball(t,
		file("a/.wh.gone", 0o644, ""),
		file("a/.wh.sub", 0o644, ""),
		file("b/new", 0o644, "new before the marker"),
		dir("b/merged/", 0o755),
		file("b/merged/new", 0o644, "new"),
		file("b/.wh..wh..opq", 0o644, ""),
		file("b/after", 0o644, "after the marker"),
		file("b/.wh.new", 0o644, ""), // same layer: not hidden
		hardlink("link-lower", "data"),
		file("own", 0o644, "own"),
		hardlink("link-own", "own"),
		dir("to-dir/", 0o700),
		file("to-file", 0o600, "now a file"),
		file("ro/more", 0o644, "into a read-only directory"),
		file("usrlink/via-link", 0o644, "through a relative link"),
		file(".wh..wh.plnk", 0o644, ""),
	)
	reg.push(t, "t/layers", "1", image{layers: [][]byte{lower, upper}})
	r := get(t, newCache(t, rootfs.Options{}), reg.ref("t/layers:1"))
	want := []string{
		"a dir drwxr-xr-x",
		"a/keep file -rw-r--r-- keep",
		"a/via-link file -rw-r--r-- through a relative link",
		"b dir drwxr-xr-x",
		"b/after file -rw-r--r-- after the marker",
		"b/merged dir drwxr-xr-x",
		"b/merged/new file -rw-r--r-- new",
		"b/new file -rw-r--r-- new before the marker",
		"data file -rw-r--r-- shared #1",
		"link-lower file -rw-r--r-- shared #1",
		"link-own file -rw-r--r-- own #2",
		"own file -rw-r--r-- own #2",
		"ro dir drwxr-xr-x",
		"ro/inside file -r--r--r-- ro",
		"ro/more file -rw-r--r-- into a read-only directory",
		"to-dir dir drwx------",
		"to-file file -rw------- now a file",
		"usrlink link -> a",
	}
	if diff := cmp.Diff(want, tree(t, r.Dir)); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

// TestMaliciousLayers checks that no layer writes outside its root or
// keeps what it must not: each case is one image, and the host directory
// next to the cache must stay empty.
func TestMaliciousLayers(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	tests := []struct {
		name     string
		entries  func(host string) []entry
		wantKind rootfs.Kind // 0: the pull succeeds
		want     []string    // the root, when it does
		skipped  rootfs.Skipped
	}{
		{
			name:     "path traversal",
			entries:  func(host string) []entry { return []entry{file("../../../../../../.."+host+"/escaped", 0o644, "x")} },
			wantKind: rootfs.KindUnsafe,
		},
		{
			name:     "traversal inside the path",
			entries:  func(string) []entry { return []entry{dir("a/", 0o755), file("a/../../escaped", 0o644, "x")} },
			wantKind: rootfs.KindUnsafe,
		},
		{
			name: "hard link out of the root",
			entries: func(host string) []entry {
				return []entry{hardlink("passwd", "../../../../../../../etc/passwd")}
			},
			wantKind: rootfs.KindUnsafe,
		},
		{
			name: "absolute symlink to the host, then a write through it",
			entries: func(host string) []entry {
				return []entry{symlink("evil", host), file("evil/pwned", 0o644, "x"), dir("evil/d/", 0o755), file("evil/d/f", 0o644, "y")}
			},
			want: func() []string { return nil }(), // filled below: the write lands under the root
		},
		{
			name: "symlink to / then a write through it",
			entries: func(string) []entry {
				return []entry{symlink("slash", "/"), file("slash/etc/pwned", 0o644, "x")}
			},
			want: []string{"etc dir drwxr-xr-x", "etc/pwned file -rw-r--r-- x", "slash link -> /"},
		},
		{
			name: "relative symlink climbing out, then a write through it",
			entries: func(string) []entry {
				return []entry{dir("a/", 0o755), symlink("a/up", "../../../../../../../../tmp"), file("a/up/pwned", 0o644, "x")}
			},
			want: []string{"a dir drwxr-xr-x", "a/up link -> ../../../../../../../../tmp", "tmp dir drwxr-xr-x", "tmp/pwned file -rw-r--r-- x"},
		},
		{
			name: "a file over a symlink to the host replaces the link",
			entries: func(host string) []entry {
				return []entry{symlink("f", host+"/target"), file("f", 0o644, "replaced")}
			},
			want: []string{"f file -rw-r--r-- replaced"},
		},
		{
			name: "hard link through an absolute symlink stays inside",
			entries: func(host string) []entry {
				return []entry{symlink("h", host), hardlink("stolen", "h/target")}
			},
			wantKind: 0,
			want:     nil, // the link target does not exist inside the root: an error, not a host file
		},
		{
			name: "symlink loop",
			entries: func(string) []entry {
				return []entry{symlink("x", "y"), symlink("y", "x"), file("x/f", 0o644, "z")}
			},
		},
		{
			name: "device nodes and FIFOs are not made",
			entries: func(string) []entry {
				return []entry{dir("dev/", 0o755), device("dev/mem", '3', 1, 1), device("dev/sda", '4', 8, 0), device("fifo", '6', 0, 0), hardlink("mem-again", "dev/mem")}
			},
			want:    []string{"dev dir drwxr-xr-x"},
			skipped: rootfs.Skipped{Devices: 2, FIFOs: 1},
		},
		{
			name: "setuid and setgid bits are cleared",
			entries: func(string) []entry {
				return []entry{file("su", 0o4755, "root shell"), file("sg", 0o2755, "group"), dir("shared/", 0o2775), dir("tmp/", 0o1777)}
			},
			want:    []string{"sg file -rwxr-xr-x group", "shared dir drwxrwxr-x", "su file -rwxr-xr-x root shell", "tmp dir dtrwxrwxrwx"},
			skipped: rootfs.Skipped{SetID: 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := t.TempDir() // nothing may appear here
			if err := os.WriteFile(filepath.Join(host, "target"), []byte("host file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			repo := "evil/" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			repo = strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '/' {
					return r
				}
				return '-'
			}, repo)
			reg.push(t, repo, "1", image{layers: [][]byte{tarball(t, tc.entries(host)...)}})
			dir := filepath.Join(t.TempDir(), "images")
			c := newCache(t, rootfs.Options{Dir: dir})
			r, err := c.Get(context.Background(), reg.ref(repo+":1"))
			if r != nil {
				defer r.Release()
			}
			// The host directory holds what it held.
			if got := tree(t, host); !slices.Equal(got, []string{"target file -rw-r--r-- host file"}) {
				t.Errorf("host directory changed: %q", got)
			}
			switch {
			case tc.wantKind != 0:
				var e *rootfs.Error
				if !errors.As(err, &e) || e.Kind != tc.wantKind {
					t.Fatalf("Get: %v; want a %v error", err, tc.wantKind)
				}
				if roots, _ := os.ReadDir(filepath.Join(dir, "roots")); len(roots) != 0 {
					t.Errorf("an unsafe image left a root: %v", roots)
				}
			case tc.name == "absolute symlink to the host, then a write through it":
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				inside := strings.TrimPrefix(host, "/")
				got := tree(t, r.Dir)
				for _, w := range []string{"evil link -> " + host, inside + "/pwned file -rw-r--r-- x", inside + "/d/f file -rw-r--r-- y"} {
					if !slices.Contains(got, w) {
						t.Errorf("root lacks %q; it has %q", w, got)
					}
				}
			case tc.name == "hard link through an absolute symlink stays inside", tc.name == "symlink loop":
				var e *rootfs.Error
				if !errors.As(err, &e) || e.Kind != rootfs.KindInvalid {
					t.Fatalf("Get: %v; want an invalid-image error", err)
				}
			default:
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if diff := cmp.Diff(tc.want, tree(t, r.Dir)); diff != "" {
					t.Errorf("root (-want +got):\n%s", diff)
				}
				if got := r.Skipped; got != tc.skipped {
					t.Errorf("skipped %+v, want %+v", got, tc.skipped)
				}
			}
		})
	}
}

func TestPlatformFromIndex(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	var entries []platformImage
	for _, p := range []v1.Platform{
		{OS: "linux", Architecture: "arm64", Variant: "v8"},
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "riscv64"},
	} {
		img := reg.push(t, "multi/app", p.Architecture, image{arch: p.Architecture, layers: [][]byte{tarball(t, file("arch", 0o644, p.Architecture))}})
		entries = append(entries, platformImage{platform: p, image: img})
	}
	attest := reg.push(t, "multi/app", "attestation", image{arch: "unknown", os: "unknown", layers: [][]byte{tarball(t, file("arch", 0o644, "attestation"))}})
	entries = append([]platformImage{{platform: v1.Platform{OS: "unknown", Architecture: "unknown"}, image: attest}}, entries...)
	index := reg.pushIndex(t, "multi/app", "latest", entries...)

	for _, tc := range []struct {
		platform rootfs.Platform
		want     string
	}{
		{rootfs.Platform{}, runtime.GOARCH},
		{rootfs.Platform{OS: "linux", Architecture: "arm64"}, "arm64"},
		{rootfs.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, "arm64"},
		{rootfs.Platform{OS: "linux", Architecture: "amd64"}, "amd64"},
		{rootfs.Platform{OS: "linux", Architecture: "riscv64"}, "riscv64"},
	} {
		t.Run(tc.platform.String(), func(t *testing.T) {
			t.Parallel()
			c := newCache(t, rootfs.Options{Platform: tc.platform})
			for _, ref := range []string{"multi/app:latest", "multi/app@" + index.String()} {
				r := get(t, c, reg.ref(ref))
				if got := readFile(t, filepath.Join(r.Dir, "arch")); got != tc.want {
					t.Errorf("%s: got the %s image, want %s", ref, got, tc.want)
				}
				if r.IndexDigest != index.String() {
					t.Errorf("%s: IndexDigest %q, want %s", ref, r.IndexDigest, index)
				}
			}
		})
	}
	t.Run("no image for the platform", func(t *testing.T) {
		t.Parallel()
		c := newCache(t, rootfs.Options{Platform: rootfs.Platform{OS: "linux", Architecture: "s390x"}})
		_, err := c.Get(context.Background(), reg.ref("multi/app:latest"))
		var e *rootfs.Error
		if !errors.As(err, &e) || e.Kind != rootfs.KindPlatform {
			t.Fatalf("Get: %v; want a platform error", err)
		}
		if want := "it offers linux/arm64/v8, linux/amd64, linux/riscv64"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	})
	t.Run("single image of another architecture", func(t *testing.T) {
		t.Parallel()
		c := newCache(t, rootfs.Options{Platform: rootfs.Platform{OS: "linux", Architecture: "amd64"}})
		_, err := c.Get(context.Background(), reg.ref("multi/app:riscv64"))
		var e *rootfs.Error
		if !errors.As(err, &e) || e.Kind != rootfs.KindPlatform {
			t.Fatalf("Get: %v; want a platform error", err)
		}
	})
}
