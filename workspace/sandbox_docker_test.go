package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const fakeImage = "agentfix-test-image:1"

// fakeDocker writes an executable named docker into a directory it puts
// first on PATH. The fake records each invocation's arguments in logDir
// (run-N, NUL-separated; rm lines in rm) and runs the container's command
// locally: in the directory mounted at /workspace, with only the -e
// variables. With exit125 it fails like a Docker daemon that is down.
func fakeDocker(t *testing.T, exit125 bool) (logDir string) {
	t.Helper()
	bin := t.TempDir()
	logDir = t.TempDir()
	script := `#!/bin/bash
log=` + logDir + `
if [ "$1" = rm ]; then echo "$*" >> "$log/rm"; exit 0; fi
n=$(ls "$log" | grep -c '^run-')
printf '%s\0' "$@" > "$log/run-$n"
` + map[bool]string{true: "echo 'docker: Cannot connect to the Docker daemon.' >&2; exit 125\n", false: ""}[exit125] + `
ws=""; envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -v) case "$2" in *:/workspace) ws=${2%:/workspace};; esac; shift 2;;
    -e) envs+=("$2"); shift 2;;
    ` + fakeImage + `) shift; break;;
    *) shift;;
  esac
done
cd "$ws" && exec env -i "${envs[@]}" PATH=/usr/bin:/bin "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return logDir
}

// readRuns returns the recorded arguments of every docker run.
func readRuns(t *testing.T, logDir string) [][]string {
	t.Helper()
	var runs [][]string
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("run-%d", i)))
		if err != nil {
			return runs
		}
		runs = append(runs, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
	}
}

func newTestDocker(t *testing.T, o Options) *Docker {
	t.Helper()
	o.DockerImage = fakeImage
	d, err := NewDocker(o)
	if err != nil {
		t.Fatalf("NewDocker: %v", err)
	}
	return d
}

func TestDockerArgs(t *testing.T) {
	logDir := fakeDocker(t, false)
	o := testOptions(t)
	o.Limits = Limits{Processes: 64, MemoryBytes: 1 << 30, FileSizeBytes: 1 << 20}
	d := newTestDocker(t, o)

	res := mustRun(t, d, Command{Script: "echo hi > out.txt; cat out.txt; echo $HOME"})
	if res.Output != "hi\n/cache\n" || res.ExitCode != 0 {
		t.Errorf("got %q exit %d, want %q exit 0", res.Output, res.ExitCode, "hi\n/cache\n")
	}
	mustRun(t, d, Command{Script: "go mod download", Network: true})

	runs := readRuns(t, logDir)
	if len(runs) != 2 {
		t.Fatalf("docker ran %d times, want 2", len(runs))
	}
	var env []string
	for _, kv := range sandboxEnv(CacheDir, nil, false, nil) {
		env = append(env, "-e", kv)
	}
	want := func(network, name, script string) []string {
		args := []string{
			"run", "--rm", "--name", name, "--network=" + network, "--read-only", "--init",
			"--cap-drop=ALL", "--security-opt=no-new-privileges",
			"--pids-limit", "64", "--memory", "1073741824", "--memory-swap", "1073741824",
			"--ulimit", "fsize=1048576:1048576", "--ulimit", "core=0:0",
			"--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
			"--tmpfs", "/tmp:rw,exec,size=268435456",
			"-v", o.Workspace + ":/workspace", "-v", o.Cache + ":/cache", "-w", "/workspace",
		}
		args = append(args, env...)
		return append(args, fakeImage, "bash", "-c", script)
	}
	for i, tt := range []struct{ network, script string }{
		{"none", "echo hi > out.txt; cat out.txt; echo $HOME"},
		{"bridge", "go mod download"},
	} {
		got := runs[i]
		name := got[3]
		if !strings.HasPrefix(name, "agentfix-") {
			t.Errorf("run %d: container name %q, want agentfix-<random>", i, name)
		}
		if diff := cmp.Diff(want(tt.network, name, tt.script), got); diff != "" {
			t.Errorf("run %d: docker arguments (-want +got):\n%s", i, diff)
		}
	}
	if runs[0][3] == runs[1][3] {
		t.Errorf("two commands share container name %s", runs[0][3])
	}
	for _, arg := range runs[0] {
		if strings.HasPrefix(arg, "PATH=") {
			t.Errorf("docker sandbox overrides the image's PATH: %s", arg)
		}
	}
}

func TestDockerTimeoutRemovesContainer(t *testing.T) {
	logDir := fakeDocker(t, false)
	d := newTestDocker(t, testOptions(t))
	res := mustRun(t, d, Command{Script: "sleep 1000", Timeout: time.Second})
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true")
	}
	name := readRuns(t, logDir)[0][3]
	rm, err := os.ReadFile(filepath.Join(logDir, "rm"))
	if err != nil || string(rm) != "rm --force "+name+"\n" {
		t.Errorf("docker rm calls %q (%v), want %q", rm, err, "rm --force "+name+"\n")
	}
}

func TestDockerDead(t *testing.T) {
	fakeDocker(t, true)
	d := newTestDocker(t, testOptions(t))
	_, err := d.Run(context.Background(), Command{Script: "true"})
	if !errors.Is(err, ErrSandboxDead) || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Errorf("err = %v, want ErrSandboxDead with docker's message", err)
	}
}

func TestNewDockerValidation(t *testing.T) {
	fakeDocker(t, false)
	o := testOptions(t)
	if _, err := NewDocker(o); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("NewDocker without an image: err = %v, want one naming the image", err)
	}
	colon := filepath.Join(t.TempDir(), "a:b")
	os.Mkdir(colon, 0o755)
	o = Options{Workspace: colon, Cache: t.TempDir(), DockerImage: fakeImage}
	if _, err := NewDocker(o); err == nil {
		t.Errorf("NewDocker with ':' in the workspace path: want an error")
	}
}
