package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
)

// BenchmarkWorkerIdleRSS measures the resident memory of an idle `bot
// worker` (DESIGN.md §11: idle < 60 MB RSS): the real binary, built as the
// Dockerfile builds it, with both asynq servers, the health listener, the
// budgets and the redelivery sweep running against a real redis-server and
// the fake GitHub, read from /proc after it has idled. It reports the idle
// RSS and the process's peak (VmHWM) in MB; the peak during a clone is
// BenchmarkRepositoryCache's (workspace).
func BenchmarkWorkerIdleRSS(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "bot")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	f := ghfake.New(b)
	srv := redistest.Start(b)
	key := filepath.Join(b.TempDir(), "app.pem")
	if err := os.WriteFile(key, f.PrivateKeyPEM(), 0o600); err != nil {
		b.Fatal(err)
	}
	var rss, peak []float64
	for range b.N {
		r, p := idleWorkerRSS(b, bin, []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(),
			"AGENTFIX_APP_ID=" + jsonNumber(f.AppID()), "AGENTFIX_PRIVATE_KEY_FILE=" + key,
			"AGENTFIX_WEBHOOK_SECRET=s3cret", "AGENTFIX_GITHUB_API_URL=" + f.APIURL(),
			"AGENTFIX_REDIS_URL=" + srv.URL(), "AGENTFIX_DATA_DIR=" + b.TempDir(),
			"AGENTFIX_MODEL=openai/gpt-5", "OPENAI_API_KEY=unused", "OPENAI_BASE_URL=http://127.0.0.1:1/v1",
		})
		rss, peak = append(rss, r), append(peak, p)
	}
	b.ReportMetric(median(rss), "idle-RSS-MB")
	b.ReportMetric(median(peak), "peak-RSS-MB")
}

// idleWorkerRSS starts `bot worker`, waits for /readyz, lets it idle and
// returns its VmRSS and VmHWM in MB.
func idleWorkerRSS(b *testing.B, bin string, env []string) (rss, peak float64) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "worker")
	cmd.Env = append(env, "AGENTFIX_LISTEN_ADDR="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			b.Fatalf("worker not ready: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // idle: servers polling Redis, the sweep done
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	if rss == 0 {
		b.Fatalf("no VmRSS in /proc/%d/status", cmd.Process.Pid)
	}
	return rss, peak
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
