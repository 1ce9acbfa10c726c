package rootfs_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentfix/agentfix/rootfs"
)

// benchTrees are the host directories the benchmark image is made of, one
// layer each: about 120 MB in about 5,800 files, Python's library and the
// Go compiler's sources.
var benchTrees = []string{"/usr/lib/python3.11", "/usr/local/go/src/cmd"}

var (
	benchOnce   sync.Once
	benchLayers [][]byte
	benchBytes  int64
	benchErr    error
)

// treeLayer is the uncompressed layer of the files under dir, at their
// paths.
func treeLayer(dir string) ([]byte, int64, error) {
	var b bytes.Buffer
	var size int64
	tw := tar.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = strings.TrimPrefix(p, "/")
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			n, err := io.Copy(tw, f)
			f.Close()
			size += n
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	return b.Bytes(), size, err
}

// benchImage pushes the benchmark image (built once per process) to reg.
func benchImage(b *testing.B, reg *testRegistry) pushed {
	b.Helper()
	benchOnce.Do(func() {
		for _, d := range benchTrees {
			l, n, err := treeLayer(d)
			if err != nil {
				benchErr = err
				return
			}
			benchLayers = append(benchLayers, l)
			benchBytes += n
		}
	})
	if benchErr != nil {
		b.Fatalf("build the benchmark image from %v: %v", benchTrees, benchErr)
	}
	b.SetBytes(benchBytes)
	return reg.push(b, "bench/big", "1", image{layers: benchLayers, compressed: func(_ int, l []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out) // the default level, as image builders use
		zw.Write(l)
		zw.Close()
		return out.Bytes()
	}})
}

// crane builds go-containerregistry's own CLI, the reference.
func crane(b *testing.B) string {
	b.Helper()
	bin := b.TempDir()
	cmd := exec.Command("go", "install", "github.com/google/go-containerregistry/cmd/crane@v0.22.1")
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build crane v0.22.1 (the reference): %v\n%s", err, out)
	}
	return filepath.Join(bin, "crane")
}

// BenchmarkColdRoot pulls and unpacks the image into an empty cache,
// against `crane export IMAGE - | tar -x` of the same image from the same
// registry.
func BenchmarkColdRoot(b *testing.B) {
	reg := newTestRegistry(b)
	benchImage(b, reg)
	ref := reg.ref("bench/big:1")
	b.Run("rootfs", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "images")
			c := newCache(b, rootfs.Options{Dir: dir})
			b.StartTimer()
			r, err := c.Get(context.Background(), ref)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
	b.Run("crane-export-tar", func(b *testing.B) {
		bin := crane(b)
		b.SetBytes(benchBytes)
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			cmd := exec.Command("sh", "-c", `"$0" export "$1" - | tar -x -C "$2"`, bin, ref, dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("crane export | tar -x: %v\n%s", err, out)
			}
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
}

// BenchmarkWarmRoot gets the image once cached: by tag (one manifest
// request) and by digest (no request), to a held root.
func BenchmarkWarmRoot(b *testing.B) {
	reg := newTestRegistry(b)
	img := benchImage(b, reg)
	c := newCache(b, rootfs.Options{})
	get(b, c, reg.ref("bench/big:1"))
	for _, ref := range []string{"bench/big:1", "bench/big@" + img.digest.String()} {
		name := "tag"
		if strings.Contains(ref, "@") {
			name = "digest"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r, err := c.Get(context.Background(), reg.ref(ref))
				if err != nil {
					b.Fatal(err)
				}
				if r.Pulled {
					b.Fatal("pulled again")
				}
				r.Release()
			}
		})
	}
}
