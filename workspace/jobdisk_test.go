package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// testJobDisk makes a job disk of o's size under a test directory. A test
// that needs one is skipped where the worker could not make one either
// (not root) and fails as root.
func testJobDisk(t *testing.T, o JobDiskOptions) *JobDisk {
	t.Helper()
	d, err := NewJobDisk(context.Background(), filepath.Join(t.TempDir(), "disk"), o)
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("job disks need root (running as uid %d): %v", os.Geteuid(), err)
		}
		t.Fatalf("NewJobDisk as root: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close the job disk: %v", err)
		}
	})
	return d
}

// jobDiskSandbox returns a bwrap sandbox whose working copy and cache are
// on a fresh job disk of o's size.
func jobDiskSandbox(t *testing.T, o JobDiskOptions) (*Bwrap, *JobDisk) {
	t.Helper()
	d := testJobDisk(t, o)
	opts := Options{Workspace: filepath.Join(d.Dir(), "workspace"), Cache: filepath.Join(d.Dir(), "cache"), OnJobDisk: true}
	for _, dir := range []string{opts.Workspace, opts.Cache} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts.Limits.DiskBytes, opts.Limits.DiskInodes = o.Bytes, o.Inodes
	return newTestBwrap(t, opts), d
}

// isMounted reports whether dir is a mount point.
func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescapeMount(f[4]) == dir {
			return true
		}
	}
	return false
}

func TestJobDiskLimits(t *testing.T) {
	t.Parallel()
	t.Run("a write past the size fails at once", func(t *testing.T) {
		t.Parallel()
		b, d := jobDiskSandbox(t, JobDiskOptions{Bytes: 64 << 20})
		res, err := b.Run(context.Background(), Command{Script: "head -c 300M /dev/zero > big; echo \"exit $?\"; stat -c %s big"})
		if err != nil {
			t.Fatalf("Run: %v (a full job disk is the command's problem, not a dead sandbox)", err)
		}
		lines := strings.Split(res.Output, "\n")
		if len(lines) < 3 || !strings.Contains(lines[0], "No space left on device") || lines[1] != "exit 1" {
			t.Fatalf("writing 300 MiB on a 64 MiB disk: %q, want ENOSPC", res.Output)
		}
		if size, _ := strconv.ParseInt(lines[2], 10, 64); size > 64<<20 || size == 0 {
			t.Errorf("the file reached %d bytes, want at most the disk's 64 MiB", size)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(d.Dir(), &st); err != nil {
			t.Fatal(err)
		}
		if total := int64(st.Blocks) * st.Bsize; total > 64<<20 {
			t.Errorf("job disk holds %d bytes, more than its 64 MiB", total)
		}
		if res := mustRun(t, b, Command{Script: "rm big && echo 1 > small && cat small"}); res.Output != "1\n" {
			t.Errorf("after freeing the disk: %q, want it usable again", res.Output)
		}
	})
	t.Run("what a chmod 000 directory holds counts", func(t *testing.T) {
		t.Parallel()
		b, _ := jobDiskSandbox(t, JobDiskOptions{Bytes: 64 << 20})
		res := mustRun(t, b, Command{Script: "mkdir hidden && head -c 40M /dev/urandom > hidden/a && chmod 000 hidden && " +
			"head -c 40M /dev/urandom > /cache/b; echo \"exit $?\""})
		if !strings.Contains(res.Output, "No space left on device") || !strings.HasSuffix(res.Output, "exit 1\n") {
			t.Errorf("40 MiB more next to 40 MiB in a chmod 000 directory, on 64 MiB: %q, want ENOSPC", res.Output)
		}
	})
	t.Run("300k empty files hit the inode limit", func(t *testing.T) {
		t.Parallel()
		b, d := jobDiskSandbox(t, JobDiskOptions{Bytes: 256 << 20, Inodes: 50000})
		// Creates up to 300k empty files, stopping at the first failure.
		res := mustRun(t, b, Command{Script: `mkdir many && cd many && perl -e 'for (1..300000) { open(my $f, ">", $_) or do { print "$!\n"; last } }'; ls | wc -l`})
		lines := strings.Split(strings.TrimSpace(res.Output), "\n")
		if len(lines) != 2 || lines[0] != "No space left on device" {
			t.Fatalf("300k empty files with 50,000 inodes: %q, want ENOSPC", res.Output)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(d.Dir(), &st); err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(lines[1]); n == 0 || uint64(n) > st.Files {
			t.Errorf("%s files made, want some and at most the disk's %d inodes", lines[1], st.Files)
		}
	})
}

func TestWorkTreeOnJobDisk(t *testing.T) {
	t.Parallel()
	testJobDisk(t, JobDiskOptions{Bytes: 16 << 20}) // skips where job disks cannot be made
	src := t.TempDir()
	gitT(t, src, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, src, "add", "a.txt")
	gitT(t, src, "commit", "--quiet", "-m", "first")

	dir := filepath.Join(t.TempDir(), "job")
	wt, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: dir, Disk: &JobDiskOptions{Bytes: 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(dir, "disk")
	if !wt.OnJobDisk() || wt.Dir() != filepath.Join(disk, "workspace") || wt.CacheDir() != filepath.Join(disk, "cache") || !isMounted(t, disk) {
		t.Fatalf("work tree at %s, cache %s, on job disk %v; want both on the disk mounted at %s", wt.Dir(), wt.CacheDir(), wt.OnJobDisk(), disk)
	}
	var work, private syscall.Stat_t
	if err := syscall.Stat(wt.Dir(), &work); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(wt.GitDir(), &private); err != nil {
		t.Fatal(err)
	}
	if work.Dev == private.Dev {
		t.Errorf("the private git dir is on the job disk")
	}

	b := newTestBwrap(t, Options{Workspace: wt.Dir(), Cache: wt.CacheDir(), OnJobDisk: wt.OnJobDisk()})
	res := mustRun(t, b, Command{Script: "cat a.txt && echo b > b.txt && head -c 64M /dev/zero > /cache/fill 2>/dev/null; echo \"exit $?\""})
	if res.Output != "a\nexit 1\n" {
		t.Errorf("filling the job disk: %q, want the checkout and ENOSPC", res.Output)
	}
	if diff, err := wt.Diff(context.Background()); err != nil || !strings.Contains(diff, "+b") {
		t.Errorf("Diff with the job disk full: %v, %q; want the change", err, diff)
	}

	if err := wt.Remove(); err != nil {
		t.Fatal(err)
	}
	if isMounted(t, disk) {
		t.Errorf("job disk still mounted after Remove")
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job directory after Remove: %v, want it gone", err)
	}
}

func TestRemoveJobDirUnmountsALeftDisk(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "job")
	// A job disk its worker never closed, as after a crash.
	d, err := NewJobDisk(context.Background(), filepath.Join(dir, "disk"), JobDiskOptions{Bytes: 16 << 20})
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("job disks need root (running as uid %d): %v", os.Geteuid(), err)
		}
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Dir(), "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveJobDir(dir); err != nil {
		t.Fatalf("RemoveJobDir: %v", err)
	}
	if isMounted(t, d.Dir()) {
		t.Errorf("%s still mounted", d.Dir())
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job directory: %v, want it gone", err)
	}
	if err := RemoveJobDir(dir); err != nil {
		t.Errorf("RemoveJobDir of a missing dir: %v", err)
	}
}

func TestNewJobDiskRefusesNonEmptyDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewJobDisk(context.Background(), dir, JobDiskOptions{Bytes: 16 << 20}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("NewJobDisk on a non-empty dir: %v, want an error saying so", err)
	}
}

// asUser runs f on a thread whose file system uid and gid are uid's, as
// when the worker does not run as root: f sees permissions as that user.
// The thread gets root's back before it is unlocked. It must not end
// with the goroutine: a thread that ends sends its death signal to every
// child it once forked, and bwrap's --die-with-parent would kill the
// sandbox of a parallel test that this thread started earlier.
func asUser(t *testing.T, uid int, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		setfsids(uid)
		if fsuid() != uid {
			t.Errorf("setfsuid(%d) left the thread's fsuid at %d", uid, fsuid())
			return // the thread stays locked and ends: no one runs with a half identity
		}
		f()
		setfsids(0)
		if fsuid() != 0 {
			t.Errorf("the thread could not get root's fsuid back: %d", fsuid())
			return
		}
		runtime.UnlockOSThread()
	}()
	<-done
}

// setfsids sets the calling thread's file system gid and uid to id.
func setfsids(id int) {
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(id), 0, 0)
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(id), 0, 0)
}

// fsuid returns the calling thread's file system uid: setfsuid with an
// invalid id changes nothing and returns the current one.
func fsuid() int {
	prev, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, ^uintptr(0), 0, 0)
	return int(prev)
}

func TestDiskFallback(t *testing.T) {
	t.Parallel()
	t.Run("an unreadable directory counts as over the limit", func(t *testing.T) {
		t.Parallel()
		o := testOptions(t)
		o.Limits.DiskBytes = 1 << 30
		// The worker, when not root, walks as the user the sandbox writes
		// as; as root the test walks as nobody, so that a chmod 000
		// directory is one it cannot read.
		for _, dir := range []string{filepath.Dir(o.Workspace), o.Workspace, o.Cache} {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		b := newTestBwrap(t, o)
		mustRun(t, b, Command{Script: "mkdir hidden && head -c 3M /dev/zero > hidden/a && chmod 000 hidden"})
		var err error
		if os.Geteuid() == 0 {
			asUser(t, 65534, func() { err = b.opts.checkDisk() })
		} else {
			err = b.opts.checkDisk()
		}
		if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "cannot be measured") {
			t.Errorf("checkDisk with an unreadable directory: %v, want ErrSandboxDead saying it cannot be measured", err)
		}
	})
	t.Run("empty files are charged", func(t *testing.T) {
		t.Parallel()
		o := testOptions(t)
		o.Limits.DiskBytes = 64 << 20
		b := newTestBwrap(t, o)
		_, err := b.Run(context.Background(), Command{Script: "mkdir many && cd many && seq 30000 | xargs touch"})
		if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "over the limit of 67108864") {
			t.Errorf("30,000 empty files under a 64 MiB limit: %v, want ErrSandboxDead", err)
		}
	})
	t.Run("too many files", func(t *testing.T) {
		t.Parallel()
		o := testOptions(t)
		o.Limits.DiskInodes = 1000
		b := newTestBwrap(t, o)
		_, err := b.Run(context.Background(), Command{Script: "mkdir many && cd many && seq 2000 | xargs touch"})
		if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "files and directories, over the limit of 1000") {
			t.Errorf("2,000 files under a limit of 1,000: %v, want ErrSandboxDead", err)
		}
	})
	t.Run("not walked on a job disk", func(t *testing.T) {
		t.Parallel()
		o := testOptions(t)
		o.Limits.DiskBytes = 1 << 20
		o.OnJobDisk = true
		if _, err := newTestBwrap(t, o).Run(context.Background(), Command{Script: "head -c 3M /dev/zero > big"}); err != nil {
			t.Errorf("Run with OnJobDisk: %v, want no walk and no error", err)
		}
	})
}
