package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	c := &clock{now: t0}
	w := newStore(t, rdb, c)
	run, err := w.Create(ctx, Meta{Kind: "fix", Repo: "o/r", Number: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()

	missing := filepath.Join(t.TempDir(), "no", "runs")
	r, err := NewReader(Options{Dir: missing, Redis: rdb, Retention: 336 * time.Hour, Now: c.Now})
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("NewReader created %s (stat: %v); it must create nothing", missing, err)
	}
	rec, err := r.Get(ctx, run.ID())
	if err != nil {
		t.Fatalf("Get from the mirror: %v", err)
	}
	if diff := cmp.Diff(run.Meta(), rec.Meta); diff != "" {
		t.Errorf("Get meta (-want +got):\n%s", diff)
	}
	list, err := r.List(ctx, 10)
	if err != nil || len(list) != 1 || list[0].RunID != run.ID() {
		t.Errorf("List = %v, %v; want the one run %s", list, err, run.ID())
	}
	if _, err := r.Get(ctx, NewID(t0)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown run = %v, want ErrNotFound", err)
	}
	if _, err := r.Create(ctx, Meta{Kind: "fix", Repo: "o/r"}); err == nil {
		t.Error("Create on a reader without its directory succeeded, want an error")
	}
}

func TestNewReaderOptions(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	tests := []struct {
		name string
		o    Options
	}{
		{"no dir", Options{Redis: rdb, Retention: time.Hour}},
		{"no redis", Options{Dir: t.TempDir(), Retention: time.Hour}},
		{"no retention", Options{Dir: t.TempDir(), Redis: rdb}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewReader(tt.o); err == nil {
				t.Error("NewReader succeeded, want an error")
			}
		})
	}
}
