package worker

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentfix/agentfix/rootfs"
)

// imageRegistry is go-containerregistry's registry on 127.0.0.1; it
// returns its host:port.
func imageRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// imageStage is a root filesystem assembled from the host's files, to push
// as a one-layer image.
type imageStage struct {
	t   *testing.T
	dir string
}

func newImageStage(t *testing.T) *imageStage {
	return &imageStage{t: t, dir: t.TempDir()}
}

// file copies the host file src (its target, when a link) to dst in the
// image, with its mode.
func (s *imageStage) file(src, dst string) {
	s.t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		s.t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		s.t.Fatal(err)
	}
	s.write(dst, b, fi.Mode().Perm())
}

func (s *imageStage) write(dst string, b []byte, mode fs.FileMode) {
	s.t.Helper()
	p := filepath.Join(s.dir, dst)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		s.t.Fatal(err)
	}
}

// lddPath matches the absolute paths in ldd's output.
var lddPath = regexp.MustCompile(`(/[^\s]+)\s+\(0x`)

// binary copies a host executable or shared object to dst, with the
// shared libraries ldd names at their paths.
func (s *imageStage) binary(src, dst string) {
	s.t.Helper()
	s.file(src, dst)
	out, err := exec.Command("ldd", src).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "not a dynamic executable") {
		s.t.Fatalf("ldd %s: %v\n%s", src, err, out)
	}
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		if _, err := os.Stat(filepath.Join(s.dir, m[1])); err != nil {
			s.file(m[1], m[1])
		}
	}
}

// tree copies the regular files under the host directory src that keep
// accepts (rel is slash-separated, relative to src) to dst.
func (s *imageStage) tree(src, dst string, keep func(rel string, d fs.DirEntry) bool) {
	s.t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && !keep(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			s.file(p, filepath.Join(dst, rel))
		}
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// push writes the stage as a one-layer image with env to the registry at
// host, and returns its reference.
func (s *imageStage) push(host, repo string, env []string) string {
	s.t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == s.dir {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		s.t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err == nil {
		img, err = mutate.Config(img, v1.Config{Env: env})
	}
	if err != nil {
		s.t.Fatal(err)
	}
	ref := host + "/" + repo
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		s.t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// withShell puts bash (also as sh) and cat in the image, and a marker
// file naming it.
func (s *imageStage) withShell(marker string) {
	s.t.Helper()
	s.binary("/bin/bash", "/bin/bash")
	s.binary("/bin/cat", "/bin/cat")
	if err := os.Symlink("bash", filepath.Join(s.dir, "bin", "sh")); err != nil {
		s.t.Fatal(err)
	}
	s.write("/etc/image-marker", []byte(marker+"\n"), 0o644)
}

// goImage is an image with bash and the Go toolchain the tests run with,
// cut to what `go test` of a module importing only testing needs, at
// /usr/local/go.
func goImage(t *testing.T, host string) string {
	t.Helper()
	s := newImageStage(t)
	s.withShell("inside the go image")
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	const dst = "/usr/local/go"
	for _, f := range []string{"bin/go", "go.env", "VERSION", "src/go.mod", "src/go.sum", "src/vendor/modules.txt"} {
		if _, err := os.Stat(filepath.Join(goroot, f)); err == nil {
			s.file(filepath.Join(goroot, f), filepath.Join(dst, f))
		}
	}
	tool := filepath.Join("pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
	for _, f := range []string{"compile", "link", "asm", "buildid", "cgo", "pack", "vet"} {
		if _, err := os.Stat(filepath.Join(goroot, tool, f)); err == nil {
			s.file(filepath.Join(goroot, tool, f), filepath.Join(dst, tool, f))
		}
	}
	s.tree(filepath.Join(goroot, "pkg", "include"), filepath.Join(dst, "pkg", "include"), func(string, fs.DirEntry) bool { return true })
	// The assembler's headers, also of packages not built (runtime/cgo's).
	s.tree(filepath.Join(goroot, "src"), filepath.Join(dst, "src"), func(rel string, d fs.DirEntry) bool {
		if d.IsDir() {
			return d.Name() != "testdata" && rel != "cmd"
		}
		return strings.HasSuffix(rel, ".h")
	})
	// The standard packages a module's tests build with.
	mod := t.TempDir()
	for p, body := range map[string]string{"go.mod": "module example.com/m\n", "m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{if .Standard}}{{.Dir}}{{end}}", "./...")
	cmd.Dir, cmd.Env = mod, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(goroot, dir)
		if err != nil {
			t.Fatal(err)
		}
		s.tree(dir, filepath.Join(dst, rel), func(rel string, d fs.DirEntry) bool {
			return !d.IsDir() && !strings.HasSuffix(rel, "_test.go")
		})
	}
	return s.push(host, "env/go:1", []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOPROXY=off"})
}

// pythonImage is an image with bash and Debian's Python 3 (its standard
// library without tests and GUI modules).
func pythonImage(t *testing.T, host string) string {
	t.Helper()
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skipf("no Debian python3 here: %v (make test installs python3-minimal)", err)
	}
	s := newImageStage(t)
	s.withShell("inside the python image")
	s.binary(py, "/usr/bin/python3")
	lib := filepath.Join("/usr/lib", filepath.Base(py)) // /usr/lib/python3.11
	skip := map[string]bool{"test": true, "idlelib": true, "tkinter": true, "turtledemo": true, "ensurepip": true,
		"lib2to3": true, "site-packages": true, "dist-packages": true, "__pycache__": true, "pydoc_data": true}
	s.tree(lib, lib, func(rel string, d fs.DirEntry) bool { return !skip[d.Name()] })
	dynload, _ := filepath.Glob(filepath.Join(lib, "lib-dynload", "*.so"))
	for _, so := range dynload {
		s.binary(so, so)
	}
	return s.push(host, "env/python:1", []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"})
}

// imageWorker gives the harness's worker the images of the registry: a
// cache of unpacked roots under its data directory, with the harness's
// sandboxes.
func (h *harness) imageWorker(o *Options) {
	c, err := rootfs.New(rootfs.Options{Dir: filepath.Join(h.data, "images"), Logger: h.logger()})
	if err != nil {
		h.t.Fatal(err)
	}
	o.Images, o.Sandbox = c, h.sandbox
}

// images gives a pipeline-world worker the images of the registry: a
// cache of unpacked roots under the world's data directory, with the
// world's sandboxes.
func (p *pipeWorld) images(o *Options) {
	c, err := rootfs.New(rootfs.Options{Dir: filepath.Join(p.cfg.DataDir, "images"), Logger: p.logger()})
	if err != nil {
		p.t.Fatal(err)
	}
	o.Images = c
}
