package workspace

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// testImageEnv is the test image's config environment: its PATH names no
// directory the host has programs in, so a prelude that looked mount(8) or
// ip(8) up on the sandbox's PATH would fail.
var testImageEnv = []string{"PATH=/usr/local/bin:/opt/busybox/bin", "GOPATH=/go", "IMAGE_ONLY=kept"}

// testImageRoot builds an image root from Debian's static busybox: the
// binary and a symlink per applet in /opt/busybox/bin, a marker file in
// /etc, and no bash.
func testImageRoot(t testing.TB) string {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("read /bin/busybox (Debian's busybox-static; make deps installs it): %v", err)
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	root := t.TempDir()
	bin := filepath.Join(root, "opt", "busybox", "bin")
	for _, dir := range []string{bin, filepath.Join(root, "etc"), filepath.Join(root, "usr", "share")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(string(list)) {
		if name == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "marker"), []byte("from the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// addHostBash copies the host's bash into root's /usr/local/bin with the
// shared libraries ldd names, at their paths.
func addHostBash(t testing.TB, root string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ldd", bash).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bash, err)
	}
	files := map[string]string{bash: "/usr/local/bin/bash"}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") {
			files[f] = f
		}
	}
	for src, dst := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst = filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// imageOptions returns sandbox options for root with the layer in a fresh
// job directory, which it also returns.
func imageOptions(t *testing.T, root string) (Options, string) {
	t.Helper()
	o := testOptions(t)
	job := t.TempDir()
	o.Image = &Image{Root: root, Env: testImageEnv, Layer: filepath.Join(job, "layer")}
	o.Slirp4netns = setupNAT(t)
	return o, job
}

// setupNAT returns the slirp4netns of the image tests' setup commands:
// the real one where this uid can open /dev/net/tun, else (a host whose
// /dev/net/tun is root's alone) a stand-in that reports the namespace
// ready and gives it no network, so that setup's other half, the image's
// writable layer, is tested as every uid. TestBwrapImageSetupNetwork
// tests the network in an image, as root.
func setupNAT(t *testing.T) string {
	t.Helper()
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err == nil {
		f.Close()
		return ""
	}
	t.Logf("slirp4netns cannot work as uid %d here (%v): setup runs without a network", os.Getuid(), err)
	stub := filepath.Join(t.TempDir(), "slirp4netns")
	// fd 3 is --ready-fd, fd 4 --exit-fd.
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nprintf 1 >&3\nexec /bin/cat <&4 >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return stub
}

// treeState describes every entry under dir, contents, modes, owners,
// times and link targets included, one line each.
func treeState(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v %d:%d %d %d", strings.TrimPrefix(path, dir), info.Mode(), st.Uid, st.Gid, info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			line += " -> " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return lines
}

// TestBwrapImage runs commands in an image built from busybox: its files
// are the root, none of the host's; setup runs as root and writes the
// layer, which later commands see read-only; the image's root is left as
// it was, and the job directory holding the layer is removable. TestBwrapImageAsUser
// runs it as an unprivileged worker too.
func TestBwrapImage(t *testing.T) {
	t.Parallel()
	root := testImageRoot(t)
	before := treeState(t, root)
	o, job := imageOptions(t, root)
	hostTool := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostTool, "readme"), []byte("a host toolchain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.ReadOnlyDirs = []string{hostTool}
	o.Env = map[string]string{"EXTRA_SETTING": "yes"}
	b := newTestBwrap(t, o)
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())

	hostOnly := []string{"/usr/bin/bwrap", "/bin/bash", "/etc/debian_version", "/etc/passwd"}
	if r := goRoot(); r != "" {
		hostOnly = append(hostOnly, r)
	}
	steps := []struct {
		name    string
		c       Command
		wantOut string
	}{
		{"the image's files are the root", Command{Script: "cat /etc/marker; ls /opt/busybox/bin/sh"}, "from the image\n/opt/busybox/bin/sh\n"},
		{"none of the host's system files", Command{Script: "for f in " + strings.Join(hostOnly, " ") + `; do [ -e "$f" ] && echo "$f"; done; true`}, ""},
		{"read-only dirs asked for are mounted", Command{Script: "cat " + hostTool + "/readme"}, "a host toolchain\n"},
		{"the worker's uid", Command{Script: "id -u; id -g"}, uid + "\n" + gid + "\n"},
		{"sh when the image has no bash", Command{Script: `readlink /proc/$$/exe; echo "$0"`}, "/opt/busybox/bin/busybox\nsh\n"},
		{"the image's PATH and environment", Command{Script: `echo "$PATH"; echo "$GOPATH $HOME $IMAGE_ONLY $EXTRA_SETTING"`},
			"/usr/local/bin:/opt/busybox/bin:/cache/go/bin:/cache/.local/bin:/cache/.cargo/bin\n/cache/go /cache kept yes\n"},
		{"the image is read-only", Command{Script: `for f in /new /usr/new /etc/marker /opt/busybox/bin/new; do touch "$f" 2>/dev/null || echo refused; done`},
			"refused\nrefused\nrefused\nrefused\n"},
		{"workspace, cache and tmp are writable", Command{Script: "echo w >/workspace/w && echo c >/cache/c && echo t >/tmp/t && cat /workspace/w /cache/c /tmp/t"}, "w\nc\nt\n"},
		{"setup runs as root and writes the layer", Command{Network: true, Script: `id -u; id -g
mkdir -p /usr/local/bin && printf '#!/opt/busybox/bin/sh\necho tool ran as $(id -u)\n' >/usr/local/bin/tool && chmod 755 /usr/local/bin/tool && rm /etc/marker`},
			"0\n0\n"},
		{"later commands run what setup installed", Command{Script: "tool; cat /etc/marker 2>/dev/null || echo deleted by setup"}, "tool ran as " + uid + "\ndeleted by setup\n"},
		{"but cannot write the layer", Command{Script: "touch /usr/local/bin/tool 2>/dev/null || echo refused; rm /usr/local/bin/tool 2>/dev/null || echo refused"}, "refused\nrefused\n"},
	}
	for _, s := range steps {
		res := mustRun(t, b, s.c)
		if res.Output != s.wantOut || res.ExitCode != 0 {
			t.Errorf("%s: %q: got output %q exit %d, want %q exit 0", s.name, s.c.Script, res.Output, res.ExitCode, s.wantOut)
		}
	}
	if _, err := os.Stat(filepath.Join(job, "layer", layerUpper, "usr", "local", "bin", "tool")); err != nil {
		t.Errorf("setup's tool is not in the layer: %v", err)
	}
	if diff := cmp.Diff(before, treeState(t, root)); diff != "" {
		t.Errorf("the image's root changed (-before +after):\n%s", diff)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(job); err != nil {
		t.Errorf("os.RemoveAll of the job directory with the layer: %v", err)
	}
}

// TestBwrapImageAsUser runs the image tests again as uid 10001, as a
// worker that is not root: the test binary is re-run with that uid.
func TestBwrapImageAsUser(t *testing.T) {
	t.Parallel()
	const uid = 10001
	if os.Geteuid() != 0 {
		t.Skipf("running as uid %d; it takes root to run the tests as uid %d", os.Geteuid(), uid)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	bin := filepath.Join(dir, "workspace.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir, home} {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run", "^(TestBwrapImage|TestNewBwrapImageErrors|TestCheckImageOverlay)", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the image tests as uid %d: %v\n%s", uid, err, out)
	}
	for _, name := range []string{"TestBwrapImage", "TestBwrapImageBash", "TestBwrapImageDisk", "TestNewBwrapImageErrors", "TestCheckImageOverlay"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as uid %d, %s did not pass:\n%s", uid, name, out)
		}
	}
}

// TestBwrapImageBash runs commands with bash when the image has it, and
// removes the job directory with RemoveJobDir.
func TestBwrapImageBash(t *testing.T) {
	t.Parallel()
	root := testImageRoot(t)
	addHostBash(t, root)
	o, job := imageOptions(t, root)
	b := newTestBwrap(t, o)
	for _, c := range []Command{{Script: "rm /etc/marker", Network: true}, {Script: "true"}} {
		c.Script += `; readlink /proc/$$/exe; [[ -n $BASH_VERSION ]] && echo "$0"`
		res := mustRun(t, b, c)
		if want := "/usr/local/bin/bash\nbash\n"; res.Output != want || res.ExitCode != 0 {
			t.Errorf("%q: got output %q exit %d, want %q exit 0", c.Script, res.Output, res.ExitCode, want)
		}
	}
	if err := RemoveJobDir(job); err != nil {
		t.Errorf("RemoveJobDir of the job directory with the layer: %v", err)
	}
}

// TestBwrapImageDisk counts the layer against the disk limit where there
// is no job disk.
func TestBwrapImageDisk(t *testing.T) {
	t.Parallel()
	o, _ := imageOptions(t, testImageRoot(t))
	o.Limits.DiskBytes = 1 << 20
	b := newTestBwrap(t, o)
	mustRun(t, b, Command{Script: "true"})
	_, err := b.Run(context.Background(), Command{Script: "head -c 2097152 /dev/zero >/usr/big", Network: true})
	if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "image layer use") {
		t.Errorf("setup writing 2 MiB into the layer with a 1 MiB limit: %v, want ErrSandboxDead saying the layer counts", err)
	}
}

// TestBwrapImageLayerOnJobDisk puts the layer on the job disk: a write
// past its size fails.
func TestBwrapImageLayerOnJobDisk(t *testing.T) {
	t.Parallel()
	d := testJobDisk(t, JobDiskOptions{Bytes: 16 << 20})
	o := Options{Workspace: filepath.Join(d.Dir(), "workspace"), Cache: filepath.Join(d.Dir(), "cache"), OnJobDisk: true}
	for _, dir := range []string{o.Workspace, o.Cache} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o.Image = &Image{Root: testImageRoot(t), Env: testImageEnv, Layer: filepath.Join(d.Dir(), "layer")}
	b := newTestBwrap(t, o)
	res := mustRun(t, b, Command{Script: "rm /etc/marker && dd if=/dev/zero of=/usr/big bs=1M count=32", Network: true})
	if res.ExitCode == 0 || !strings.Contains(res.Output, "No space left") {
		t.Errorf("setup writing 32 MiB into a layer on a 16 MiB job disk: exit %d, %q; want ENOSPC", res.ExitCode, res.Output)
	}
}

// TestBwrapImageSetupNetwork runs setup in an image against the netns
// tests' internet: it is reached by address and by name (the sandbox's
// resolv.conf and, with egress narrowed, its hosts file, bound over the
// image's), and this host's loopback is not.
func TestBwrapImageSetupNetwork(t *testing.T) {
	in := newInternet(t)
	dns := newTestDNS(t, map[string]netip.Addr{"internet.test.": in.public[0]})
	pub := in.listen(t, in.public[0])
	port := pub.Addr().(*net.TCPAddr).Port
	loop := listenHost(t, "tcp", "127.0.0.1:0")
	reachableFromHost(t, "tcp", loop.Addr().String())

	o, _ := imageOptions(t, testImageRoot(t))
	buildProbe(t, o.Workspace)
	o.Slirp4netns = dns.slirpWrapper(t)
	b := newTestBwrap(t, o)
	if ok, out := probeDial(t, b, "tcp", pub.Addr().String()); !ok {
		t.Errorf("setup in the image could not reach the internet at %s: %s", pub.Addr(), out)
	}
	if ok, out := probeDial(t, b, "tcp", fmt.Sprintf("internet.test:%d", port)); !ok {
		t.Errorf("setup in the image could not reach internet.test:%d: %s", port, out)
	}
	if ok, out := probeDial(t, b, "tcp", loop.Addr().String()); ok {
		t.Errorf("setup in the image reached the host's loopback %s: %s", loop.Addr(), out)
	}

	mirror := newTestDNS(t, map[string]netip.Addr{"mirror.test.": in.public[0]})
	o.SetupEgress = []string{fmt.Sprintf("mirror.test:%d", port)}
	o.SetupResolver = mirror.resolver()
	o.Slirp4netns = ""
	b = newTestBwrap(t, o)
	if ok, out := probeDial(t, b, "tcp", fmt.Sprintf("mirror.test:%d", port)); !ok {
		t.Errorf("setup in the image could not reach the allowed mirror.test: %s", out)
	}
	res := mustRun(t, b, Command{Script: "cat /etc/hosts"})
	if res.Output != "" {
		t.Errorf("a command after setup sees /etc/hosts %q; want the image's (none: empty)", res.Output)
	}
}

// hostOverlay mounts an overlay on the host (root only) and returns its
// merged directory: a file system overlayfs refuses as an upper layer.
func hostOverlay(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount an overlay on the host")
	}
	dir := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(dir, "merged")
	opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", dir, dir, dir)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount an overlay: %v", err)
	}
	t.Cleanup(func() {
		// Detached: a sandbox process of the test may still be on its way
		// out on a loaded machine, and a plain unmount is then EBUSY.
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the test's overlay: %v", err)
		}
	})
	return merged
}

// TestBwrapImageOverlayRefused puts the layer on an overlay: setup's
// overlay cannot be mounted, which kills the sandbox with an error naming
// the layer and mount's message, and CheckImageOverlay says so at once.
func TestBwrapImageOverlayRefused(t *testing.T) {
	t.Parallel()
	merged := hostOverlay(t)
	o := testOptions(t)
	layer := filepath.Join(merged, "layer")
	o.Image = &Image{Root: testImageRoot(t), Env: testImageEnv, Layer: layer}
	b := newTestBwrap(t, o)
	_, err := b.Run(context.Background(), Command{Script: "echo ran", Network: true})
	if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "overlay of the image's layer "+layer) || !strings.Contains(err.Error(), "mount: ") {
		t.Errorf("setup with the layer on an overlay: %v, want ErrSandboxDead naming the layer and mount's message", err)
	}
	if err := CheckImageOverlay(merged); err == nil || !strings.Contains(err.Error(), "mount: ") {
		t.Errorf("CheckImageOverlay(%s) on an overlay: %v, want mount's refusal", merged, err)
	}
}

// TestCheckImageOverlay checks a directory the kernel takes an overlay's
// layer in, and leaves it empty.
func TestCheckImageOverlay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckImageOverlay(dir); err != nil {
		t.Fatalf("CheckImageOverlay: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("CheckImageOverlay left %v in %s", left, dir)
	}
	if err := CheckImageOverlay(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("CheckImageOverlay of a missing directory: want an error")
	}
}

// TestNewBwrapImageErrors gives NewBwrap images it must refuse.
func TestNewBwrapImageErrors(t *testing.T) {
	t.Parallel()
	root := testImageRoot(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(t.TempDir(), "layer")
	tests := []struct {
		name string
		img  Image
		want string
	}{
		{"missing root", Image{Root: filepath.Join(root, "missing"), Layer: layer}, "image root: stat " + filepath.Join(root, "missing")},
		{"root is a file", Image{Root: file, Layer: layer}, "image root " + file + " is not a directory"},
		{"no layer", Image{Root: root}, "Root and Layer are required"},
		{"layer in the root", Image{Root: root, Layer: filepath.Join(root, "layer")}, "must not contain each other"},
		{"colon in the layer", Image{Root: root, Layer: layer + ":x"}, "cannot be an overlay layer"},
		{"comma in the root", Image{Root: root + ",x", Layer: layer}, "cannot be an overlay layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t)
			img := tt.img
			o.Image = &img
			if b, err := NewBwrap(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				if b != nil {
					b.Close()
				}
				t.Errorf("NewBwrap: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestImageEnv(t *testing.T) {
	t.Parallel()
	base := sandboxEnv(CacheDir, nil, false, nil)
	tests := []struct {
		name     string
		image    []string
		pathDirs []string
		extra    map[string]string
		want     map[string]string // over base
	}{
		{"the image's PATH and variables", []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "GOLANG_VERSION=1.26", "GOPATH=/go", "HOME=/root"}, nil, nil,
			map[string]string{"PATH": "/usr/local/go/bin:/usr/bin:/bin:/cache/go/bin:/cache/.local/bin:/cache/.cargo/bin", "GOLANG_VERSION": "1.26"}},
		{"Docker's PATH when the image has none", []string{"LANG=de_DE.UTF-8"}, nil, nil,
			map[string]string{"PATH": defaultImagePath + ":/cache/go/bin:/cache/.local/bin:/cache/.cargo/bin"}},
		{"extra path in front, duplicates and empty entries dropped", []string{"PATH=/bin::/usr/bin:/bin"}, []string{"/opt/tool/bin", "/bin"}, nil,
			map[string]string{"PATH": "/opt/tool/bin:/bin:/usr/bin:/cache/go/bin:/cache/.local/bin:/cache/.cargo/bin"}},
		{"the last of a name wins, entries without = are dropped", []string{"PATH=/bin", "A=1", "A=2", "JUNK", "=x"}, nil, nil,
			map[string]string{"PATH": "/bin:/cache/go/bin:/cache/.local/bin:/cache/.cargo/bin", "A": "2"}},
		{"Options.Env last", []string{"PATH=/bin", "A=1"}, nil, map[string]string{"A": "3", "PATH": "/mine", "GOPATH": "/gp"},
			map[string]string{"PATH": "/mine", "A": "3", "GOPATH": "/gp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]string{}
			for _, kv := range base {
				k, v, _ := strings.Cut(kv, "=")
				want[k] = v
			}
			for k, v := range tt.want {
				want[k] = v
			}
			got := map[string]string{}
			for _, kv := range imageEnv(tt.image, CacheDir, tt.pathDirs, tt.extra) {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}
