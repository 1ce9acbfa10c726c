package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkJobLimits measures what the kernel limits add to a job: each
// iteration is one job's sandbox life, from its directories to their
// removal, with one command (`true`) in between, without limits, with the
// job's cgroup, with a job disk (the default 20 GiB, sparse) for the
// working copy and cache, and with both. BenchmarkBwrapCommand measures a
// command alone, with and without the job's cgroup.
//
//	go test -run '^$' -bench 'JobLimits|BwrapCommand' -count 5 ./workspace/
func BenchmarkJobLimits(b *testing.B) {
	cg, cgErr := OpenCgroups()
	for _, bc := range []struct {
		name           string
		cgroup, onDisk bool
	}{
		{"none", false, false},
		{"cgroup", true, false},
		{"disk", false, true},
		{"cgroup+disk", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.cgroup && cgErr != nil {
				b.Skipf("no cgroups: %v", cgErr)
			}
			root := b.TempDir()
			ctx := context.Background()
			for b.Loop() {
				dir := filepath.Join(root, "job")
				var disk *JobDisk
				if bc.onDisk {
					var err error
					if disk, err = NewJobDisk(ctx, dir, JobDiskOptions{}); err != nil {
						b.Skipf("no job disk: %v", err)
					}
				}
				o := Options{Workspace: filepath.Join(dir, "workspace"), Cache: filepath.Join(dir, "cache"), OnJobDisk: bc.onDisk}
				for _, d := range []string{o.Workspace, o.Cache} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						b.Fatal(err)
					}
				}
				if bc.cgroup {
					o.Cgroups = cg
				}
				sb, err := NewBwrap(o)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := sb.Run(ctx, Command{Script: "true"}); err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %+v, %v", res, err)
				}
				if err := sb.Close(); err != nil {
					b.Fatal(err)
				}
				if disk != nil {
					if err := disk.Close(); err != nil {
						b.Fatal(err)
					}
				}
				if err := RemoveJobDir(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBwrapCommand(b *testing.B) {
	cg, cgErr := OpenCgroups()
	for _, withCgroup := range []bool{false, true} {
		name := map[bool]string{false: "none", true: "cgroup"}[withCgroup]
		b.Run(name, func(b *testing.B) {
			o := Options{Workspace: b.TempDir(), Cache: b.TempDir()}
			if withCgroup {
				if cgErr != nil {
					b.Skipf("no cgroups: %v", cgErr)
				}
				o.Cgroups = cg
			}
			sb, err := NewBwrap(o)
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			for b.Loop() {
				if res, err := sb.Run(context.Background(), Command{Script: "true"}); err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkLimitsSetup measures making and removing a job's limits alone:
// its cgroup (in each hierarchy, with its limits written) and its job disk
// (a sparse image of the default 20 GiB: mkfs.ext4, loop device, mount,
// unmount, removal).
func BenchmarkLimitsSetup(b *testing.B) {
	b.Run("cgroup", func(b *testing.B) {
		cg, err := OpenCgroups()
		if err != nil {
			b.Skipf("no cgroups: %v", err)
		}
		for b.Loop() {
			j, err := cg.newJob(Limits{MemoryBytes: DefaultMemoryBytes, Processes: DefaultProcesses})
			if err != nil {
				b.Fatal(err)
			}
			if err := j.remove(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("disk", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "disk")
		for b.Loop() {
			d, err := NewJobDisk(context.Background(), dir, JobDiskOptions{})
			if err != nil {
				b.Skipf("no job disk: %v", err)
			}
			if err := d.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRemoveJob measures removing a job's directory holding 20,000
// small files (the working copy of a mid-sized repository): walked and
// deleted, or on a job disk, unmounted with its image.
func BenchmarkRemoveJob(b *testing.B) {
	fill := func(b *testing.B, dir string) {
		b.Helper()
		for i := range 1000 {
			sub := filepath.Join(dir, "workspace", strconv.Itoa(i))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			for j := range 20 {
				if err := os.WriteFile(filepath.Join(sub, strconv.Itoa(j)), []byte("package x\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, onDisk := range []bool{false, true} {
		b.Run(map[bool]string{false: "dir", true: "disk"}[onDisk], func(b *testing.B) {
			root := b.TempDir()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				job := filepath.Join(root, "job")
				dir := job
				if onDisk {
					d, err := NewJobDisk(context.Background(), filepath.Join(job, "disk"), JobDiskOptions{})
					if err != nil {
						b.Skipf("no job disk: %v", err)
					}
					dir = d.Dir()
				}
				fill(b, dir)
				b.StartTimer()
				if err := RemoveJobDir(job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
