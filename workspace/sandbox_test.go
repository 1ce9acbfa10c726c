package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runner is what the tests call on every sandbox kind.
type runner interface {
	Run(ctx context.Context, c Command) (Result, error)
}

// testOptions returns options with a fresh working copy and cache.
func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{Workspace: t.TempDir(), Cache: t.TempDir()}
}

func newTestBwrap(t *testing.T, o Options) *Bwrap {
	t.Helper()
	b, err := NewBwrap(o)
	if err != nil {
		t.Fatalf("NewBwrap: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close the sandbox: %v", err)
		}
	})
	return b
}

func mustRun(t *testing.T, r runner, c Command) Result {
	t.Helper()
	res, err := r.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run(%q): %v", c.Script, err)
	}
	return res
}

func TestBwrapRunsInWorkspace(t *testing.T) {
	o := testOptions(t)
	if err := os.WriteFile(filepath.Join(o.Workspace, "hello.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newTestBwrap(t, o)
	tests := []struct {
		name, script string
		wantOut      string
		wantCode     int
	}{
		{"working directory", "pwd", "/workspace\n", 0},
		{"reads the working copy", "cat hello.txt", "from the host\n", 0},
		{"exit status", "exit 3", "", 3},
		{"stdout and stderr", "echo out; echo err >&2", "out\nerr\n", 0},
		{"private tmp is writable", "echo x > /tmp/f && cat /tmp/f", "x\n", 0},
		{"cache is home", `echo "$HOME" && touch ~/.warm && ls -A ~`, "/cache\n.warm\n", 0},
		{"system dirs are read-only", "touch /usr/agentfix 2>/dev/null || echo refused", "refused\n", 0},
		{"root is read-only", "mkdir /newdir 2>/dev/null || echo refused", "refused\n", 0},
		{"no capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n", 0},
		{"stdin is empty", "cat; echo done", "done\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, b, Command{Script: tt.script})
			if res.Output != tt.wantOut || res.ExitCode != tt.wantCode {
				t.Errorf("got output %q exit %d, want %q exit %d", res.Output, res.ExitCode, tt.wantOut, tt.wantCode)
			}
		})
	}
	t.Run("writes reach the host", func(t *testing.T) {
		mustRun(t, b, Command{Script: "echo new > new.txt"})
		got, err := os.ReadFile(filepath.Join(o.Workspace, "new.txt"))
		if err != nil || string(got) != "new\n" {
			t.Errorf("host sees %q, %v; want %q", got, err, "new\n")
		}
	})
}

func TestBwrapEnvironmentIsAllowListed(t *testing.T) {
	const token = "ghs_agentfixFakeInstallationToken0123456789"
	t.Setenv("AGENTFIX_TEST_GITHUB_TOKEN", token)
	t.Setenv("OPENAI_API_KEY", "sk-"+token)
	o := testOptions(t)
	o.Env = map[string]string{"EXTRA_SETTING": "yes"}
	b := newTestBwrap(t, o)

	res := mustRun(t, b, Command{Script: "env"})
	if strings.Contains(res.Output, token) {
		t.Errorf("sandbox environment contains the worker's token:\n%s", res.Output)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		got = append(got, strings.SplitN(line, "=", 2)[0])
	}
	var want []string
	for _, kv := range sandboxEnv(CacheDir, b.pathDir, true, o.Env) {
		want = append(want, strings.SplitN(kv, "=", 2)[0])
	}
	want = append(want, "PWD", "SHLVL", "_") // set by bash itself
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment variable names (-want +got):\n%s", diff)
	}

	// No process the sandbox can see carries the token either.
	res = mustRun(t, b, Command{Script: `cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -c 'agentfix[F]ake'; true`})
	if strings.TrimSpace(res.Output) != "0" {
		t.Errorf("token found in /proc inside the sandbox: %q", res.Output)
	}
	res = mustRun(t, b, Command{Script: `ls /proc | grep -c '^[0-9]'`})
	if n := strings.TrimSpace(res.Output); n == "0" || len(n) > 1 {
		t.Errorf("sandbox sees %s processes in /proc, want only its own few", n)
	}
}

func TestBwrapCannotReadOutside(t *testing.T) {
	o := testOptions(t)
	dataDir := t.TempDir()
	secret := filepath.Join(dataDir, "runs", "secret.txt")
	if err := os.MkdirAll(filepath.Dir(secret), 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	homeSecret := filepath.Join(home, fmt.Sprintf(".agentfix-test-secret-%d", os.Getpid()))
	for _, f := range []string{secret, homeSecret, filepath.Join(o.Workspace, "inside.txt")} {
		if err := os.WriteFile(f, []byte("SECRET-CONTENT\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Remove(homeSecret) })
	b := newTestBwrap(t, o)

	tests := []struct {
		name, path string
		readable   bool
	}{
		{"planted in the working copy", "/workspace/inside.txt", true},
		{"worker data dir", secret, false},
		{"worker home", homeSecret, false},
		{"shadow passwords", "/etc/shadow", false},
		{"through /proc/1/root", "/proc/1/root" + secret, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, b, Command{Script: "cat " + tt.path})
			got := strings.Contains(res.Output, "SECRET-CONTENT") || (res.ExitCode == 0 && tt.path == "/etc/shadow")
			if got != tt.readable {
				t.Errorf("cat %s: readable = %v, want %v (output %q)", tt.path, got, tt.readable, res.Output)
			}
		})
	}
}

func TestBwrapNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	interfaces := `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '`

	b := newTestBwrap(t, testOptions(t))
	t.Run("off: host loopback unreachable", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: connect})
		if res.ExitCode == 0 || strings.Contains(res.Output, "connected") {
			t.Errorf("connected to the host's listener without network: exit %d, %q", res.ExitCode, res.Output)
		}
	})
	t.Run("off: only loopback interface", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: interfaces})
		if res.Output != "lo " {
			t.Errorf("interfaces %q, want %q", res.Output, "lo ")
		}
	})
	t.Run("off: no DNS", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: "getent hosts example.com"})
		if res.ExitCode == 0 {
			t.Errorf("resolved example.com without network: %q", res.Output)
		}
	})
	t.Run("on for setup: host loopback still unreachable", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: connect, Network: true})
		if res.ExitCode == 0 || strings.Contains(res.Output, "connected") {
			t.Errorf("setup command reached the host's loopback: exit %d, %q", res.ExitCode, res.Output)
		}
	})
	t.Run("on for setup: own namespace with the NAT's tap", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: interfaces, Network: true})
		if res.Output != "lo tap0 " {
			t.Errorf("interfaces %q, want %q", res.Output, "lo tap0 ")
		}
	})
}

func TestBwrapLimits(t *testing.T) {
	o := testOptions(t)
	o.Limits = Limits{Processes: 321, MemoryBytes: 3 << 30, FileSizeBytes: 1 << 20}
	b := newTestBwrap(t, o)
	res := mustRun(t, b, Command{Script: `grep -E '^Max (processes|data size|file size|core file size) ' /proc/self/limits | tr -s ' '`})
	want := "Max file size 1048576 1048576 bytes \n" +
		"Max data size 3221225472 3221225472 bytes \n" +
		"Max core file size 0 0 bytes \n" +
		"Max processes 321 321 processes \n"
	if diff := cmp.Diff(want, res.Output); diff != "" {
		t.Errorf("limits inside the sandbox (-want +got):\n%s", diff)
	}

	res = mustRun(t, b, Command{Script: "head -c 2000000 /dev/zero > big"})
	if res.ExitCode != 128+25 {
		t.Errorf("writing past the file size limit: exit %d, want %d (SIGXFSZ)", res.ExitCode, 128+25)
	}
	fi, err := os.Stat(filepath.Join(o.Workspace, "big"))
	if err != nil || fi.Size() != 1<<20 {
		t.Errorf("big file: %v, %v; want size %d", fi, err, 1<<20)
	}
}

func TestBwrapDiskLimit(t *testing.T) {
	o := testOptions(t)
	o.Limits.DiskBytes = 1 << 20
	b := newTestBwrap(t, o)
	if _, err := b.Run(context.Background(), Command{Script: "echo small > a"}); err != nil {
		t.Fatalf("small write: %v", err)
	}
	_, err := b.Run(context.Background(), Command{Script: "head -c 3000000 /dev/urandom > big"})
	if !errors.Is(err, ErrSandboxDead) {
		t.Errorf("over the disk limit: err = %v, want ErrSandboxDead", err)
	}
}

func TestBwrapOutputCap(t *testing.T) {
	o := testOptions(t)
	o.OutputLimit = 1000
	b := newTestBwrap(t, o)
	res := mustRun(t, b, Command{Script: "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"})
	total := int64(len("BEGIN\n") + 100000 + len("\nEND\n"))
	if res.Elided != total-1000 {
		t.Errorf("elided %d bytes, want %d", res.Elided, total-1000)
	}
	if !strings.HasPrefix(res.Output, "BEGIN\naaa") || !strings.HasSuffix(res.Output, "aaa\nEND\n") ||
		!strings.Contains(res.Output, fmt.Sprintf("[... %d bytes elided ...]", total-1000)) {
		t.Errorf("capped output does not keep head, tail and the elided count:\n%s", res.Output)
	}
}

// processWithMarker reports whether a live (non-zombie) process has marker
// in its command line.
func processWithMarker(t *testing.T, marker string) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && !isZombie(string(stat)) {
			return true
		}
	}
	return false
}

// isZombie reads the state field of /proc/PID/stat.
func isZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

// treeScript starts a background process named marker that would outlive
// the command, with the FIFO "held" open (from its fork on), then writes a
// line to the FIFO "ready" and prints started.
func treeScript(marker string) string {
	return fmt.Sprintf("exec 3>held; (exec -a %s sleep 1000) & exec 3>&-; echo started > ready; echo started", marker)
}

// processTree is the test's end of treeScript's FIFOs in dir.
type processTree struct {
	ready, held *os.File
}

func newProcessTree(t *testing.T, dir string) processTree {
	t.Helper()
	tr := processTree{ready: makeFIFO(t, dir, "ready")}
	held := filepath.Join(dir, "held")
	if err := syscall.Mkfifo(held, 0o666); err != nil {
		t.Fatal(err)
	}
	// Open before the command, so the command's open for writing does not
	// wait; non-blocking, so reads wait in the poller and honour a
	// deadline.
	f, err := os.OpenFile(held, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tr.held = f
	return tr
}

// started reports whether the command wrote to "ready" already, without
// waiting.
func (tr processTree) started(t *testing.T) bool {
	t.Helper()
	raw, err := tr.ready.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := raw.Read(func(fd uintptr) bool {
		n, _ = syscall.Read(int(fd), make([]byte, 64))
		return true // one attempt: a FIFO with nothing in it says EAGAIN
	}); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// waitGone waits until the background process has exited: its end of
// "held" closes with it.
func (tr processTree) waitGone(t *testing.T, marker string) {
	t.Helper()
	if err := tr.held.SetReadDeadline(time.Now().Add(eventTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.held.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("waiting for process %s to exit: %v", marker, err)
	}
	if processWithMarker(t, marker) {
		t.Errorf("process %s runs after it closed its files", marker)
	}
}

func TestKillProcessTree(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name string
		make func(t *testing.T, o Options) runner
	}{
		{"bwrap", func(t *testing.T, o Options) runner { return newTestBwrap(t, o) }},
		{"none", func(t *testing.T, o Options) runner {
			o.AllowUnsandboxed = true
			n, err := NewNone(o)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name+"/background process ends with the command", func(t *testing.T) {
			t.Parallel()
			marker := fmt.Sprintf("agentfix-bg-%s-%d", kind.name, time.Now().UnixNano())
			o := testOptions(t)
			tr := newProcessTree(t, o.Workspace)
			res := mustRun(t, kind.make(t, o), Command{Script: treeScript(marker)})
			if res.TimedOut || res.ExitCode != 0 || res.Output != "started\n" {
				t.Errorf("got %+v, want a normal exit with output %q", res, "started\n")
			}
			readLine(t, tr.ready, "the background process to start")
			tr.waitGone(t, marker)
		})
		t.Run(kind.name+"/timeout kills the tree", func(t *testing.T) {
			t.Parallel()
			// The timeout must end the command after it started its
			// background process; on a loaded machine the sandbox may take
			// longer than the first timeout to start, so it doubles until
			// the process started in time.
			for timeout := time.Second; ; timeout *= 2 {
				marker := fmt.Sprintf("agentfix-timeout-%s-%d", kind.name, time.Now().UnixNano())
				o := testOptions(t)
				tr := newProcessTree(t, o.Workspace)
				res := mustRun(t, kind.make(t, o), Command{Script: treeScript(marker) + "; wait", Timeout: timeout})
				if !res.TimedOut || res.ExitCode != -1 {
					t.Fatalf("got TimedOut %v exit %d, want true -1", res.TimedOut, res.ExitCode)
				}
				if !tr.started(t) {
					if timeout > time.Minute {
						t.Fatalf("the command did not start its background process within %s", timeout)
					}
					t.Logf("the command did not start its background process within %s; again with %s", timeout, 2*timeout)
					continue
				}
				if !strings.Contains(res.Output, "started") {
					t.Errorf("output before the timeout lost: %q", res.Output)
				}
				tr.waitGone(t, marker)
				return
			}
		})
		t.Run(kind.name+"/cancel kills the tree", func(t *testing.T) {
			t.Parallel()
			marker := fmt.Sprintf("agentfix-cancel-%s-%d", kind.name, time.Now().UnixNano())
			o := testOptions(t)
			tr := newProcessTree(t, o.Workspace)
			r := kind.make(t, o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := r.Run(ctx, Command{Script: treeScript(marker) + "; wait"})
				done <- err
			}()
			readLine(t, tr.ready, "the background process to start")
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run after cancel: err = %v, want context.Canceled", err)
			}
			tr.waitGone(t, marker)
		})
	}
}

func TestBwrapWarmCache(t *testing.T) {
	o := testOptions(t)
	files := map[string]string{
		"go.mod":       "module example.com/warm\n\ngo 1.22\n",
		"warm.go":      "package warm\n\nfunc Double(n int) int { return 2 * n }\n",
		"warm_test.go": "package warm\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(o.Workspace, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := newTestBwrap(t, o)
	first := mustRun(t, b, Command{Script: "go test ./..."})
	if first.ExitCode != 0 || strings.Contains(first.Output, "(cached)") {
		t.Fatalf("first go test: exit %d, output %q; want a fresh passing run", first.ExitCode, first.Output)
	}
	second := mustRun(t, b, Command{Script: "go test ./..."})
	if second.ExitCode != 0 || !strings.Contains(second.Output, "(cached)") {
		t.Errorf("second go test: exit %d, output %q; want a cached result", second.ExitCode, second.Output)
	}
	if _, err := os.Stat(filepath.Join(o.Cache, ".cache", "go-build")); err != nil {
		t.Errorf("build cache not in the job's cache dir: %v", err)
	}
}

func TestBwrapDead(t *testing.T) {
	t.Run("missing binary", func(t *testing.T) {
		o := testOptions(t)
		o.Binary = filepath.Join(t.TempDir(), "no-bwrap")
		if _, err := NewBwrap(o); err == nil {
			t.Errorf("NewBwrap with a missing binary: want an error")
		}
	})
	t.Run("binary removed after construction", func(t *testing.T) {
		o := testOptions(t)
		o.Binary = filepath.Join(t.TempDir(), "bwrap")
		if err := os.WriteFile(o.Binary, []byte("#!/bin/sh\nexec bwrap \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		b := newTestBwrap(t, o)
		mustRun(t, b, Command{Script: "true"})
		os.Remove(o.Binary)
		if _, err := b.Run(context.Background(), Command{Script: "true"}); !errors.Is(err, ErrSandboxDead) {
			t.Errorf("err = %v, want ErrSandboxDead", err)
		}
	})
	t.Run("working copy deleted", func(t *testing.T) {
		o := testOptions(t)
		b := newTestBwrap(t, o)
		os.RemoveAll(o.Workspace)
		if _, err := b.Run(context.Background(), Command{Script: "true"}); !errors.Is(err, ErrSandboxDead) {
			t.Errorf("err = %v, want ErrSandboxDead", err)
		}
	})
	t.Run("bwrap cannot set up", func(t *testing.T) {
		o := testOptions(t)
		o.ReadOnlyDirs = []string{filepath.Join(t.TempDir(), "vanished-toolchain")}
		b := newTestBwrap(t, o)
		_, err := b.Run(context.Background(), Command{Script: "true"})
		if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "vanished-toolchain") {
			t.Errorf("err = %v, want ErrSandboxDead naming the missing mount", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		b := newTestBwrap(t, testOptions(t))
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Run(context.Background(), Command{Script: "true"}); !errors.Is(err, ErrSandboxDead) {
			t.Errorf("Run after Close: err = %v, want ErrSandboxDead", err)
		}
	})
	t.Run("command exit 1 is not dead", func(t *testing.T) {
		b := newTestBwrap(t, testOptions(t))
		res, err := b.Run(context.Background(), Command{Script: "echo no >&2; exit 1"})
		if err != nil || res.ExitCode != 1 {
			t.Errorf("got %+v, %v; want exit 1 and no error", res, err)
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, "file")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		o    Options
	}{
		{"no workspace", Options{Cache: ws}},
		{"no cache", Options{Workspace: ws}},
		{"workspace missing", Options{Workspace: filepath.Join(ws, "missing"), Cache: ws}},
		{"cache is a file", Options{Workspace: ws, Cache: file}},
		{"bad env name", Options{Workspace: ws, Cache: ws, Env: map[string]string{"A=B": "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewBwrap(tt.o); err == nil {
				t.Errorf("NewBwrap(%+v): want an error", tt.o)
			}
		})
	}
}

func TestBwrapFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		res  Result
		want string
	}{
		{"its message", Result{Output: "bwrap: Can't mkdir /x: Permission denied\n", ExitCode: 1}, "bwrap: Can't mkdir /x: Permission denied"},
		{"killed", Result{ExitCode: 137}, "it was killed by SIGKILL and printed nothing"},
		{"silent exit", Result{ExitCode: 1}, "it exited with status 1 and printed nothing"},
	} {
		if got := bwrapFailure(tc.res); got != tc.want {
			t.Errorf("%s: bwrapFailure = %q, want %q", tc.name, got, tc.want)
		}
	}
}
