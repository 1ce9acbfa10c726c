package admin

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/runs"
)

// BenchmarkRunsPage measures /admin/runs over a store of 1,000 runs (the
// most the page reads, scanLimit): the whole page, filtered and not, and,
// for reference, reading the 100 and the 1,000 most recent records alone
// (the page read 100 before it had a filter).
func BenchmarkRunsPage(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { rdb.Close() })
	now := func() time.Time { return t0.Add(24 * time.Hour) }
	store, err := runs.New(runs.Options{Dir: filepath.Join(b.TempDir(), "runs"), Redis: rdb, Retention: 336 * time.Hour, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	statuses := []string{"pr_opened", "failed", "no_changes", "running"}
	for i := range scanLimit {
		started := t0.Add(time.Duration(i) * time.Minute)
		run, err := store.Create(ctx, runs.Meta{RunID: runs.NewID(started), Kind: "fix", DeliveryID: fmt.Sprintf("d-%d", i),
			Repo: fmt.Sprintf("octo/repo%d", i%7), Number: i + 1, Requester: "mona", Model: "openai/gpt-5", Started: started})
		if err != nil {
			b.Fatal(err)
		}
		err = run.Update(func(m *runs.Meta) { m.Status, m.CostUSD, m.Steps = statuses[i%len(statuses)], 0.05, 12 })
		if err == nil {
			err = run.Save(ctx)
		}
		run.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	s, err := New(Options{Token: testToken, Runs: store, Redis: rdb, Queues: []string{"agent"}, Logger: discardLogger(), Now: now})
	if err != nil {
		b.Fatal(err)
	}
	h := http.NewServeMux()
	h.HandleFunc("/admin/runs", s.runList)
	for _, path := range []string{"/admin/runs", "/admin/runs?repo=octo/repo3&status=failed"} {
		b.Run("page "+path, func(b *testing.B) {
			for b.Loop() {
				rec := &discardWriter{header: http.Header{}}
				req, _ := http.NewRequest("GET", path, nil)
				h.ServeHTTP(rec, req)
				if rec.code != http.StatusOK {
					b.Fatalf("GET %s = %d", path, rec.code)
				}
			}
		})
	}
	for _, n := range []int{defaultListLimit, scanLimit} {
		b.Run(fmt.Sprintf("read %d records", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := store.List(ctx, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header  { return w.header }
func (w *discardWriter) WriteHeader(code int) { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}
