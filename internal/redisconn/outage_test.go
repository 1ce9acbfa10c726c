package redisconn

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// checkGolden compares got with testdata/name (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// textLog is a text logger into b without times, as a golden file needs.
func textLog(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// TestOutageLines plays an outage through the hook and the filter: the
// first failed dial says it in one line naming AGENTFIX_REDIS_URL and the
// address; the lines of asynq, go-redis and other callers carrying the
// dial error are left out; a minute later the line comes again with their
// number; a dial that works ends the outage, and other lines pass all
// along (testdata/redis_outage.golden).
func TestOutageLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	base := textLog(&out)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := NewOutage(base, func() time.Time { return now })
	filtered := slog.New(o.Filter(base.Handler()))
	asynqLog := filtered.With("queue", "agent")
	goRedis := &Log{}
	goRedis.Use(filtered)

	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	dialErr := refused
	dial := o.DialHook(func(context.Context, string, string) (net.Conn, error) { return nil, dialErr })
	ctx := context.Background()
	noise := func() {
		asynqLog.Error("Dequeue error: UNKNOWN: redis eval error: " + refused.Error())
		asynqLog.Error("Failed to write server state data: UNKNOWN: redis command error: SADD failed: " + refused.Error())
		filtered.Warn("take the lead of the sweep", "err", fmt.Errorf("take lock agentfix:redeliver:1:leader: %w", refused))
		goRedis.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 5, refused)
	}

	filtered.Info("worker started")
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	noise()
	filtered.Warn("a GitHub API call failed", "err", "502 Bad Gateway")
	dialErr = context.DeadlineExceeded // too plain to leave lines out for
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	filtered.Warn("a GitHub API call failed", "err", context.DeadlineExceeded)
	dialErr = refused
	now = now.Add(59 * time.Second)
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	noise()
	now = now.Add(time.Second)
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	noise()
	dialErr = context.Canceled // a dial given up on shutdown says nothing
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	dialErr = nil
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	_, _ = dial(ctx, "tcp", "127.0.0.1:1")
	asynqLog.Error("Dequeue error: UNKNOWN: redis eval error: " + refused.Error())

	checkGolden(t, "redis_outage.golden", out.String())
}

// TestLog: go-redis's lines become warnings of the logger in use, and go
// nowhere before there is one.
func TestLog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	g := &Log{}
	g.Printf(context.Background(), "redis: lost %d", 1)
	g.Use(textLog(&out))
	g.Printf(context.Background(), "redis: discarding bad PubSub connection: %v\n", errors.New("EOF"))
	if got, want := out.String(), "level=WARN msg=\"redis: discarding bad PubSub connection: EOF\"\n"; got != want {
		t.Errorf("go-redis line logged as %q, want %q", got, want)
	}
}
