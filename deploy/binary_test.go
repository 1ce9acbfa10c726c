package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/agentfix/agentfix/internal/redistest"
)

// TestDeployedCommandsAnswerTheirProbes builds the bot and runs each
// subcommand the deployments start, with the environment a Kubernetes pod
// gets (the image's default command: with the image's own), against a real
// Redis; the image's health check must find the paths of the probes and of
// the Prometheus scrape annotation (of HEALTHCHECK) answering 200, and
// SIGTERM must end the process cleanly.
func TestDeployedCommandsAnswerTheirProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot")
	}
	bot := buildBot(t)
	usage := runBot(t, bot, "help")
	c := loadCluster(t)
	tmpl := loadSecretTemplate(t)
	df := parseDockerfile(t, "Dockerfile")
	rt := df.stages[len(df.stages)-1]
	imageCmd, err := jsonStrings(lastArgs(t, rt, "CMD"))
	if err != nil {
		t.Fatal(err)
	}
	healthcheck, err := jsonStrings(strings.TrimPrefix(lastArgs(t, rt, "HEALTHCHECK"), "CMD "))
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		name  string
		args  []string
		env   map[string]string
		paths []string // what the health checks or probes ask
	}
	runs := []run{{"image default", imageCmd, dockerfileEnv(t, rt), healthcheck[1:]}}
	for _, name := range []string{webhookName, workerName} {
		tmplSpec := c.deployments[name].Spec.Template
		ctr := onlyContainer(t, tmplSpec.Spec)
		runs = append(runs, run{name, ctr.Args, containerEnv(t, c, tmpl, ctr), []string{
			probePath(t, ctr.LivenessProbe), probePath(t, ctr.ReadinessProbe),
			tmplSpec.Annotations["prometheus.io/path"],
		}})
	}

	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(usage, "\n  "+tc.args[0]+" ") {
				// The worker subcommand arrives with the worker pipeline;
				// this case runs from then on.
				t.Skipf("bot has no %q subcommand yet:\n%s", tc.args[0], usage)
			}
			dir := t.TempDir()
			env := map[string]string{}
			for k, v := range tc.env {
				if tv, ok := testValues[k]; ok && v == placeholder {
					v = tv
				}
				env[k] = v
			}
			if _, ok := env["AGENTFIX_REDIS_URL"]; ok {
				env["AGENTFIX_REDIS_URL"] = redistest.Start(t).URL()
			}
			if _, ok := env["AGENTFIX_PRIVATE_KEY_FILE"]; ok {
				env["AGENTFIX_PRIVATE_KEY_FILE"] = writeTestKey(t, dir)
			}
			env["AGENTFIX_DATA_DIR"] = filepath.Join(dir, "data")
			env["AGENTFIX_LISTEN_ADDR"] = "127.0.0.1:0"
			addr := startBot(t, bot, dir, env, tc.args)
			for _, path := range tc.paths {
				if code, stderr := runHealthcheck(t, addr, path); code != 0 {
					t.Errorf("agentfix-healthcheck %s: exit code %d (%s)", path, code, stderr)
				}
			}
		})
	}
}

func probePath(t *testing.T, p *corev1.Probe) string {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Fatalf("probe %+v: want an httpGet probe", p)
	}
	return p.HTTPGet.Path
}

// buildBot builds cmd/bot as the Dockerfile does and returns its path.
//
// The build has no timeout of its own: on a cold build cache and a loaded
// machine it takes minutes, and go test's own deadline bounds it.
func buildBot(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bot")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", out, "./cmd/bot")
	cmd.Dir = repoRoot
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	setProcessGroup(cmd)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bot: %v\n%s", err, b)
	}
	return out
}

// runBot runs bot with args to its end and returns its standard output.
func runBot(t *testing.T, bot string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bot, args...)
	setProcessGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bot %q: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// startBot starts bot with args in dir with exactly env, waits until it
// logs its listen address and returns it. When the test ends it sends
// SIGTERM and expects a clean exit.
func startBot(t *testing.T, bot, dir string, env map[string]string, args []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, bot, args...)
	cmd.Dir = dir
	cmd.Env = append(environ(env), "PATH=/usr/local/bin:/usr/bin:/bin")
	setProcessGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bot %q: %v", args, err)
	}
	var logs bytes.Buffer
	addrs := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addrs <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-scanned
		return cmd.Wait()
	}
	select {
	case addr := <-addrs:
		t.Cleanup(func() {
			defer cancel()
			if err := stop(); err != nil {
				t.Errorf("bot %q after SIGTERM: %v (want exit code 0)\n%s", args, err, logs.String())
			}
		})
		return addr
	case <-scanned:
		err := cmd.Wait()
		cancel()
		t.Fatalf("bot %q ended before listening: %v\n%s", args, err, logs.String())
	case <-ctx.Done():
		cancel()
		err := stop()
		t.Fatalf("bot %q did not listen: %v\n%s", args, errors.Join(ctx.Err(), err), logs.String())
	}
	return ""
}

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}

// jsonStrings decodes an exec-form instruction argument like ["serve"].
func jsonStrings(s string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	if len(out) == 0 || slices.Contains(out, "") {
		return nil, errors.New("empty command in " + s)
	}
	return out, nil
}
