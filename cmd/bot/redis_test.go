package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// fakeClock is a clock the test moves; it counts the times it is read and
// lets the test wait for a number of reads (each a dial of Redis that
// failed, for the outage).
type fakeClock struct {
	mu    sync.Mutex
	cond  *sync.Cond
	t     time.Time
	reads int
}

func newFakeClock() *fakeClock {
	c := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	c.cond.Broadcast()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// waitReads waits until the clock was read n times in all, failing the
// test at its deadline.
func (c *fakeClock) waitReads(t *testing.T, n int) {
	t.Helper()
	if d, ok := t.Deadline(); ok {
		stop := time.AfterFunc(time.Until(d)-30*time.Second, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.reads = -1 << 30 // wakes the waiter, which gives up
			c.cond.Broadcast()
		})
		defer stop.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.reads >= 0 && c.reads < n {
		c.cond.Wait()
	}
	if c.reads < 0 {
		t.Fatalf("timed out waiting for %d failed dials of Redis (the test's deadline is near)", n)
	}
}

// tripwire is a go-redis logger that records what reaches it.
type tripwire struct {
	mu    sync.Mutex
	lines []string
}

func (w *tripwire) Printf(_ context.Context, format string, v ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, fmt.Sprintf(format, v...))
}

// stderrRedisLog is go-redis's logger as it was before the test.
type stderrRedisLog struct{ l *log.Logger }

func (s stderrRedisLog) Printf(_ context.Context, format string, v ...any) { s.l.Printf(format, v...) }

// TestRedisUnreachableIsOneLine runs `bot worker` with AGENTFIX_REDIS_URL
// pointing at a closed port, go-redis's logger set as main sets it: however
// many dials fail (asynq's loops, go-redis's pool, the sweep), the log has
// one line about it, naming AGENTFIX_REDIS_URL and the address, and one
// more once the clock passes a minute. It changes go-redis's logger, which
// is one per process, so it does not run in parallel.
func TestRedisUnreachableIsOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	before := &tripwire{}
	redis.SetLogger(before)
	t.Cleanup(func() { redis.SetLogger(stderrRedisLog{log.New(os.Stderr, "redis: ", log.LstdFlags)}) })

	clock := newFakeClock()
	stderr := &syncBuffer{}
	listening := make(chan string, 1)
	m := &Main{
		Args: []string{"worker"}, WorkDir: t.TempDir(), Stdout: &syncBuffer{}, Stderr: stderr, now: clock.now,
		Environ:   append([]string{"AGENTFIX_LISTEN_ADDR=127.0.0.1:0", "AGENTFIX_LOG_FORMAT=text"}, botEnv(t, ghfake.New(t), newFakeOpenAI(t), "redis://"+addr+"/0")...),
		Listening: func(addr string) { listening <- addr },
	}
	redis.SetLogger(&m.redisLog) // as main does
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("bot worker ended before listening: %v\n%s", err, stderr.String())
	}

	said := regexp.MustCompile(`(?m)^.*msg="redis at ` + regexp.QuoteMeta(addr) + ` does not answer: check AGENTFIX_REDIS_URL; retrying, and saying so at most once a minute( \(\d+ lines about it left out since\))?" err="dial tcp ` + regexp.QuoteMeta(addr) + `: connect: connection refused"$`)
	check := func(want int) {
		t.Helper()
		logs := stderr.String()
		if n := len(said.FindAllString(logs, -1)); n != want {
			t.Errorf("%d lines say Redis does not answer, want %d:\n%s", n, want, logs)
		}
		if n := strings.Count(logs, "connection refused"); n != want {
			t.Errorf("%d lines mention the refused connection, want %d:\n%s", n, want, logs)
		}
	}
	clock.waitReads(t, 40)
	check(1)
	clock.advance(time.Minute)
	clock.waitReads(t, clock.count()+2) // the first of them said it again
	check(2)
	if !regexp.MustCompile(`\(\d+ lines about it left out since\)`).MatchString(stderr.String()) {
		t.Errorf("the second line does not say how many lines were left out:\n%s", stderr.String())
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	check(2)
	before.mu.Lock()
	defer before.mu.Unlock()
	if len(before.lines) > 0 {
		t.Errorf("go-redis logged %d lines past the bot's logger, the first: %s", len(before.lines), before.lines[0])
	}
}
