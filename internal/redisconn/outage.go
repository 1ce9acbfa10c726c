package redisconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/logattr"
)

// outageEvery is how often an unreachable Redis is said again.
const outageEvery = time.Minute

// maxOutageCauses bounds the dial errors an outage remembers (one per
// address the client tried, in practice).
const maxOutageCauses = 8

// Outage turns the many log lines of an unreachable Redis — go-redis's
// pool, asynq's every loop, each caller's error — into one line that names
// AGENTFIX_REDIS_URL and the address, said again at most once a minute
// with the number of lines left out, and one line when Redis answers
// again. It is a go-redis hook, which sees every dial and its error, and a
// filter of the process's log (Filter), which leaves out the records
// carrying the text of a dial error seen during the outage.
type Outage struct {
	log *slog.Logger // where its own lines go (not through the filter)
	now func() time.Time

	mu      sync.Mutex
	causes  []string  // the dial errors of this outage, newest last
	said    time.Time // when the line was last said; zero: not yet
	dropped int       // lines left out since
}

// NewOutage returns an Outage that says its lines to log, reading the
// time from now.
func NewOutage(log *slog.Logger, now func() time.Time) *Outage {
	return &Outage{log: log, now: now}
}

// DialHook watches every connection go-redis opens.
func (o *Outage) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		switch {
		case err == nil:
			o.dialed(addr)
		case !errors.Is(err, context.Canceled):
			o.dialFailed(addr, err)
		}
		return conn, err
	}
}

// ProcessHook passes commands through.
func (o *Outage) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (o *Outage) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// dialFailed notes the cause and says the outage unless it said so less
// than a minute ago. A bare context deadline says nothing about Redis that
// other lines would not also say, so it is not a cause lines are left out
// for; a dial error naming the network operation is.
func (o *Outage) dialFailed(addr string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	cause := err.Error()
	var op *net.OpError
	if (errors.As(err, &op) || !errors.Is(err, context.DeadlineExceeded)) && !slices.Contains(o.causes, cause) {
		o.causes = append(o.causes, cause)
		if len(o.causes) > maxOutageCauses {
			o.causes = o.causes[1:]
		}
	}
	if !o.said.IsZero() && now.Sub(o.said) < outageEvery {
		return
	}
	msg := "redis at " + addr + " does not answer: check AGENTFIX_REDIS_URL; retrying, and saying so at most once a minute"
	if o.dropped > 0 {
		msg += fmt.Sprintf(" (%d %s about it left out since)", o.dropped, plural(o.dropped, "line", "lines"))
	}
	o.log.Error(msg, logattr.Err, cause)
	o.said, o.dropped = now, 0
}

// dialed ends an outage.
func (o *Outage) dialed(addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.causes) == 0 {
		return
	}
	o.log.Info("redis at " + addr + " answers again")
	o.causes, o.said, o.dropped = nil, time.Time{}, 0
}

// drop reports whether a record with text is about the outage, and counts
// it when it is.
func (o *Outage) drop(text string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.causes {
		if strings.Contains(text, c) {
			o.dropped++
			return true
		}
	}
	return false
}

// Filter wraps h so it leaves out the records about the outage.
func (o *Outage) Filter(h slog.Handler) slog.Handler { return &outageFilter{o: o, h: h} }

type outageFilter struct {
	o *Outage
	h slog.Handler
}

func (f *outageFilter) Enabled(ctx context.Context, l slog.Level) bool { return f.h.Enabled(ctx, l) }

func (f *outageFilter) Handle(ctx context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" ")
		b.WriteString(a.Value.String())
		return true
	})
	if f.o.drop(b.String()) {
		return nil
	}
	return f.h.Handle(ctx, r)
}

func (f *outageFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return &outageFilter{o: f.o, h: f.h.WithAttrs(as)}
}

func (f *outageFilter) WithGroup(name string) slog.Handler {
	return &outageFilter{o: f.o, h: f.h.WithGroup(name)}
}

// Log is go-redis's logger, which is one per process (redis.SetLogger):
// main sets it once, and each line goes at warning level to the logger
// given last to Use (the one of the command that opened Redis, with its
// outage filter), or nowhere before there is one.
type Log struct{ to atomic.Pointer[slog.Logger] }

// Use sends go-redis's lines to l from now on.
func (g *Log) Use(l *slog.Logger) { g.to.Store(l) }

// Printf logs one line of go-redis.
func (g *Log) Printf(ctx context.Context, format string, v ...any) {
	if l := g.to.Load(); l != nil {
		l.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
