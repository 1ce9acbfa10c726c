package workspace

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// eventTimeout bounds how long a test waits for a sandboxed command to
// report an event; it is there only so that a hang fails with a message.
const eventTimeout = 2 * time.Minute

// testCgroups returns the host's cgroups for jobs, with every controller
// in want. A test that needs them is skipped where the worker could not
// have them either (not root) and fails as root.
func testCgroups(t *testing.T, want ...string) *Cgroups {
	t.Helper()
	cg, err := OpenCgroups()
	if err == nil {
		for _, ctrl := range want {
			if !cg.has(ctrl) {
				err = fmt.Errorf("no %s controller: %s", ctrl, cg.why[ctrl])
			}
		}
	}
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("job cgroups need root here (running as uid %d): %v", os.Geteuid(), err)
		}
		t.Fatalf("job cgroups as root: %v", err)
	}
	return cg
}

// makeFIFO makes a named pipe in dir through which a sandboxed command
// tells the test that something happened, and opens it read-write: the
// open never blocks, and a read waits for a line.
func makeFIFO(t *testing.T, dir, name string) *os.File {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readLine reads one line from f, failing the test when none comes within
// eventTimeout; what names the event awaited.
func readLine(t *testing.T, f *os.File, what string) string {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(eventTimeout)); err != nil {
		t.Fatal(err)
	}
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := f.Read(b); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if b[0] == '\n' {
			return string(line)
		}
		line = append(line, b[0])
	}
}

func TestBwrapTmpfsIsSized(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	o.Limits.TmpfsBytes = 1 << 20
	b := newTestBwrap(t, o)
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		t.Run(dir, func(t *testing.T) {
			res := mustRun(t, b, Command{Script: "head -c 3000000 /dev/zero > " + dir + "/fill; echo \"exit $?\"; stat -c %s " + dir + "/fill"})
			want := "head: error writing 'standard output': No space left on device\nexit 1\n1048576\n"
			if res.Output != want {
				t.Errorf("filling %s past its size: got %q, want %q", dir, res.Output, want)
			}
		})
	}
	t.Run("/dev is read-only", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: "touch /dev/fill 2>&1; echo hi > /dev/null && echo null works"})
		want := "touch: cannot touch '/dev/fill': Read-only file system\nnull works\n"
		if res.Output != want {
			t.Errorf("got %q, want %q", res.Output, want)
		}
	})
	t.Run("default is a quarter of the memory limit", func(t *testing.T) {
		o := testOptions(t)
		o.Limits.MemoryBytes = 256 << 20
		res := mustRun(t, newTestBwrap(t, o), Command{Script: "df -B1 --output=size /tmp /var/tmp /dev/shm | tail -n +2 | tr -d ' '"})
		if want := strings.Repeat(strconv.Itoa(64<<20)+"\n", 3); res.Output != want {
			t.Errorf("tmpfs sizes %q, want %q", res.Output, want)
		}
	})
}

func TestBwrapMemoryLimit(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	o.Cgroups = testCgroups(t, ctrlMemory)
	o.Limits = Limits{MemoryBytes: 64 << 20, TmpfsBytes: 512 << 20}
	b := newTestBwrap(t, o)
	const note = "killed: out of memory (limit 64 MiB)\n"
	t.Run("a process past the limit is killed and reported", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: `echo start; perl -e '$x = "a" x (256 << 20); print "survived\n"'`})
		if !res.OOMKilled || res.Output != "start\n"+note || res.ExitCode != 128+9 {
			t.Errorf("got OOMKilled %v, exit %d, output %q; want true, %d, %q", res.OOMKilled, res.ExitCode, res.Output, 128+9, "start\n"+note)
		}
	})
	t.Run("tmpfs pages count", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: "head -c 200M /dev/zero > /tmp/fill; echo done"})
		if !res.OOMKilled || !strings.HasSuffix(res.Output, note) {
			t.Errorf("filling /tmp past the memory limit: OOMKilled %v, output %q; want true and the note", res.OOMKilled, res.Output)
		}
	})
	t.Run("the job goes on", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: `perl -e '$x = "a" x (16 << 20); print "fits\n"'`})
		if res.OOMKilled || res.Output != "fits\n" || res.ExitCode != 0 {
			t.Errorf("got %+v, want a normal run printing fits", res)
		}
	})
	t.Run("the job is the OOM killer's first choice, never the worker", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: "cat /proc/self/oom_score_adj"})
		own, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != "1000\n" || string(own) == "1000\n" {
			t.Errorf("oom_score_adj: sandbox %q, worker %q; want 1000 for the sandbox only", res.Output, own)
		}
	})
}

func TestBwrapProcessLimit(t *testing.T) {
	t.Parallel()
	cg := testCgroups(t, ctrlPids)
	o := testOptions(t)
	o.Cgroups = cg
	o.Limits.Processes = 64
	bomb := newTestBwrap(t, o)
	capped := makeFIFO(t, o.Workspace, "capped")
	resume := makeFIFO(t, o.Workspace, "resume")
	// Forks sleeping children until fork fails, says so, and holds them
	// until the test lets it go.
	script := `perl -e '
		my $n = 0;
		while ($n < 2000) { my $pid = fork; last unless defined $pid; if (!$pid) { sleep 1000; exit } $n++ }
		print "forked $n: $!\n";
		open my $c, ">", "capped" or die; print $c "capped\n"; close $c;
		open my $r, "<", "resume" or die; my $line = <$r>;'`
	done := make(chan Result, 1)
	go func() {
		res, err := bomb.Run(context.Background(), Command{Script: script})
		if err != nil {
			t.Errorf("fork bomb: %v", err)
		}
		done <- res
	}()
	readLine(t, capped, "the fork bomb to reach its cap")

	other := testOptions(t)
	other.Cgroups = cg
	other.Limits.Processes = 64
	res := mustRun(t, newTestBwrap(t, other), Command{Script: "sh -c 'echo another job runs'"})
	if res.Output != "another job runs\n" || res.ExitCode != 0 {
		t.Errorf("another job's sandbox while the fork bomb holds its processes: %+v", res)
	}

	fmt.Fprintln(resume, "go")
	res = <-done
	var n int
	if _, err := fmt.Sscanf(res.Output, "forked %d: Resource temporarily unavailable", &n); err != nil || n >= 64 {
		t.Errorf("fork bomb output %q: want it stopped below 64 processes by EAGAIN", res.Output)
	}
}

func TestBwrapCgroupEndsEveryProcess(t *testing.T) {
	t.Parallel()
	cg := testCgroups(t)
	t.Run("a process that left bwrap's session", func(t *testing.T) {
		marker := fmt.Sprintf("agentfix-escaped-%d", time.Now().UnixNano())
		o := testOptions(t)
		o.Cgroups = cg
		// A bwrap that first starts a process in a session of its own, as
		// bwrap's own child does (--new-session), but with no tie to
		// bwrap's life (as when bwrap is killed before it sets one up).
		o.Binary = filepath.Join(t.TempDir(), "bwrap")
		script := "#!/bin/bash\nsetsid -f bash -c 'exec -a " + marker + " sleep 1000' </dev/null >/dev/null 2>&1\nexec bwrap \"$@\"\n"
		if err := os.WriteFile(o.Binary, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		mustRun(t, newTestBwrap(t, o), Command{Script: "true"})
		if processWithMarker(t, marker) {
			t.Errorf("process %s outlived its command", marker)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		marker := fmt.Sprintf("agentfix-cancel-cgroup-%d", time.Now().UnixNano())
		o := testOptions(t)
		o.Cgroups = cg
		b := newTestBwrap(t, o)
		ready := makeFIFO(t, o.Workspace, "ready")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := b.Run(ctx, Command{Script: "(exec -a " + marker + " sleep 1000) & echo started > ready; wait"})
			done <- err
		}()
		readLine(t, ready, "the command to start its background process")
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel: err = %v, want context.Canceled", err)
		}
		if processWithMarker(t, marker) {
			t.Errorf("process %s still runs when Run returned after the cancel", marker)
		}
	})
}

func TestCheckLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := CheckLimits(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("CheckLimits of a missing data dir: want an error")
	}
	dataDir := t.TempDir()
	r, err := CheckLimits(ctx, dataDir)
	if err != nil {
		t.Fatalf("CheckLimits: %v", err)
	}
	t.Logf("limits here:\n%s", r)
	if !r.Tmpfs.Enforced {
		t.Errorf("tmpfs: %s; want enforced by bwrap 0.8", r.Tmpfs.Detail)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("CheckLimits left %d entries in the data dir", len(entries))
	}
	if os.Geteuid() != 0 {
		if r.Disk.Enforced || r.Err() == nil {
			t.Errorf("as uid %d: disk %+v, Err %v; want the disk not enforced", os.Geteuid(), r.Disk, r.Err())
		}
		t.Skipf("the rest needs root (running as uid %d)", os.Geteuid())
	}
	if err := r.Err(); err != nil || r.Cgroups == nil {
		t.Fatalf("as root: Err() = %v, Cgroups %v; want every limit enforced", err, r.Cgroups)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	version := "cgroup v2 "
	if strings.Contains(string(self), ":memory:") {
		version = "cgroup v1 "
	}
	for name, c := range map[string]LimitCheck{"memory": r.Memory, "processes": r.Processes} {
		if !strings.HasPrefix(c.Detail, version) {
			t.Errorf("%s: %q, want it to name %s", name, c.Detail, version)
		}
	}

	t.Run("a data dir that cannot hold a job disk", func(t *testing.T) {
		ro := t.TempDir()
		if err := syscall.Mount(ro, ro, "", syscall.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		defer syscall.Unmount(ro, syscall.MNT_DETACH)
		if err := syscall.Mount("", ro, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
		r, err := CheckLimits(ctx, ro)
		if err != nil {
			t.Fatal(err)
		}
		if r.Disk.Enforced || !strings.Contains(r.Disk.Detail, "read-only file system") || !strings.Contains(r.Err().Error(), "disk (") {
			t.Errorf("read-only data dir: disk %+v, Err %v; want not enforced, saying why", r.Disk, r.Err())
		}
	})
}

func TestLimitsReportText(t *testing.T) {
	t.Parallel()
	r := LimitsReport{
		Tmpfs:     LimitCheck{Enforced: true, Detail: "bwrap --size for /tmp, /var/tmp and /dev/shm"},
		Memory:    LimitCheck{Enforced: true, Detail: "cgroup v2 memory controller, one cgroup per job under /sys/fs/cgroup/agentfix"},
		Processes: LimitCheck{Detail: "the cgroup v2 /sys/fs/cgroup has no pids controller (its parent does not delegate it)"},
		Disk:      LimitCheck{Detail: "job disk /data/limits-check-1: loop devices: open /dev/loop-control: permission denied; the working copy is measured after each command instead"},
	}
	got := r.String() + "\n" + r.Err().Error() + "\n"
	golden := filepath.Join("testdata", "limits_report.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("report text (-want +got):\n%s", diff)
	}
	if err := (LimitsReport{Tmpfs: r.Tmpfs, Memory: r.Memory, Processes: r.Memory, Disk: r.Memory}).Err(); err != nil {
		t.Errorf("all enforced: Err() = %v, want nil", err)
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{4 << 30, "4 GiB"},
		{64 << 20, "64 MiB"},
		{1536 << 20, "1536 MiB"},
		{3<<30 + 1, "3.0 GiB"},
		{(5 << 20) + 3, "5.0 MiB"},
		{512 << 10, "512 KiB"},
		{1000, "1000 bytes"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestPrlimitArgs(t *testing.T) {
	t.Parallel()
	l := Limits{Processes: 10, MemoryBytes: 1 << 30, FileSizeBytes: 1 << 20}
	tests := []struct {
		name string
		cg   *jobCgroup
		want []string
	}{
		{"no cgroup: per user and per process", nil, []string{"prlimit", "--nproc=10", "--data=1073741824", "--fsize=1048576", "--core=0", "--"}},
		// RLIMIT_NPROC counts every process of the worker's uid: with the
		// job's pids.max it would only let one job starve another.
		{"cgroup with memory and pids", &jobCgroup{oomFile: "memory.events", pids: true}, []string{"prlimit", "--fsize=1048576", "--core=0", "--"}},
		{"cgroup with memory only", &jobCgroup{oomFile: "memory.events"}, []string{"prlimit", "--nproc=10", "--fsize=1048576", "--core=0", "--"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, prlimitArgs("prlimit", l, tt.cg)); diff != "" {
				t.Errorf("prlimit arguments (-want +got):\n%s", diff)
			}
		})
	}
}
