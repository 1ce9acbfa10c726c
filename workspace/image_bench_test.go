package workspace

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// childCPU is the user and system time of this process's reaped
// children: the sandbox's processes, less sensitive than wall time to
// the other work of a shared machine.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBwrapImage measures one warm command (`true`, the sandbox made
// before the loop) on the host's root and in an image (the overlay
// prelude's extra processes and mounts), both as an agent command and as
// setup (network namespace and slirp4netns on top; in the image, the
// writable overlay and the cleaning of its work directory). The image is
// busybox's, whose static sh starts faster than the host's bash, so it
// runs with the host's bash added too ("image-bash"), as on the host.
func BenchmarkBwrapImage(b *testing.B) {
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		image, bash bool
		network     bool
	}{
		{"agent/host", false, false, false},
		{"agent/image", true, false, false},
		{"agent/image-bash", true, true, false},
		{"setup/host", false, false, true},
		{"setup/image", true, false, true},
		{"setup/image-bash", true, true, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			o := Options{Workspace: b.TempDir(), Cache: b.TempDir()}
			if tt.image {
				root := testImageRoot(b)
				if tt.bash {
					addHostBash(b, root)
				}
				o.Image = &Image{Root: root, Env: testImageEnv, Layer: filepath.Join(b.TempDir(), "layer")}
			}
			bw, err := NewBwrap(o)
			if err != nil {
				b.Fatal(err)
			}
			defer bw.Close()
			c := Command{Script: "true", Network: tt.network}
			before := childCPU(b)
			for b.Loop() {
				if res, err := bw.Run(ctx, c); err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v, %v", res, err)
				}
			}
			b.ReportMetric(float64((childCPU(b)-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
