package rootfs_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
func benchImage(b testing.TB, reg *testRegistry) pushed {
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

// cpuTime is the user and system time of this process and of its ended
// children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		syscall.Getrusage(who, &ru)
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// benchRegistry serves the benchmark image from a process of its own (this
// test binary, as TestBenchRegistryHelper), so the registry's work does
// not compete for this process's threads with the client measured, as
// it does not with crane. It returns the image's reference, its
// uncompressed size and its digest.
func benchRegistry(b *testing.B) (ref string, size int64, digest string) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchRegistryHelper$")
	cmd.Env = append(os.Environ(), "ROOTFS_BENCH_REGISTRY=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // the helper ends when its input does
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "REGISTRY %s %d %s", &ref, &size, &digest); err == nil {
			go io.Copy(io.Discard, stdout)
			return ref, size, digest
		}
	}
	b.Fatalf("the registry helper ended without naming its image: %v", sc.Err())
	return "", 0, ""
}

// TestBenchRegistryHelper is the registry of the benchmarks; it does
// nothing in a normal run.
func TestBenchRegistryHelper(t *testing.T) {
	if os.Getenv("ROOTFS_BENCH_REGISTRY") == "" {
		t.Skip("only runs as the registry of BenchmarkColdRoot and BenchmarkWarmRoot")
	}
	reg := newTestRegistry(t)
	p := benchImage(t, reg)
	fmt.Printf("REGISTRY %s %d %s\n", reg.ref("bench/big:1"), benchBytes, p.digest)
	io.Copy(io.Discard, os.Stdin)
}

// BenchmarkColdRoot pulls and unpacks the image into an empty cache,
// against `crane export IMAGE - | tar -x` of the same image from the same
// registry.
func BenchmarkColdRoot(b *testing.B) {
	ref, size, _ := benchRegistry(b)
	benchBytes = size
	b.Run("rootfs", func(b *testing.B) {
		b.SetBytes(benchBytes)
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "images")
			c := newCache(b, rootfs.Options{Dir: dir})
			b.StartTimer()
			start := cpuTime()
			r, err := c.Get(context.Background(), ref)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
			cpu += cpuTime() - start
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
	b.Run("crane-export-tar", func(b *testing.B) {
		bin := crane(b)
		b.SetBytes(benchBytes)
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			start := cpuTime()
			cmd := exec.Command("sh", "-c", `"$0" export "$1" - | tar -x -C "$2"`, bin, ref, dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("crane export | tar -x: %v\n%s", err, out)
			}
			cpu += cpuTime() - start
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
}

// BenchmarkWarmRoot gets the image once cached: by tag (one manifest
// request) and by digest (no request), to a held root.
func BenchmarkWarmRoot(b *testing.B) {
	tagRef, _, digest := benchRegistry(b)
	c := newCache(b, rootfs.Options{})
	get(b, c, tagRef)
	repo := strings.TrimSuffix(tagRef, ":1")
	for _, ref := range []string{tagRef, repo + "@" + digest} {
		name := "tag"
		if strings.Contains(ref, "@") {
			name = "digest"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r, err := c.Get(context.Background(), ref)
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
