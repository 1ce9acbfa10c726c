package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// laggingComments is GitHub as two concurrent posters of one reply see it:
// neither finds the other's comment (both look before either posts). It
// fails the next fail posts.
type laggingComments struct {
	mu      sync.Mutex
	fail    int
	created []string // "number body"
}

func (c *laggingComments) FindComment(context.Context, ghapp.Repo, int, string) (ghapp.Comment, bool, error) {
	return ghapp.Comment{}, false, nil
}

func (c *laggingComments) CreateComment(_ context.Context, _ ghapp.Repo, number int, body string) (ghapp.Comment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail > 0 {
		c.fail--
		return ghapp.Comment{}, errors.New("502 Bad Gateway")
	}
	c.created = append(c.created, strings.Repeat("#", number)+" "+body)
	return ghapp.Comment{ID: int64(len(c.created))}, nil
}

func (c *laggingComments) posts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.created)
}

// newRedis returns a client of a throwaway Redis of t's own.
func newRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// newReplier is the worker's replier on rdb.
func newReplier(t *testing.T, rdb redis.UniversalClient) *replier {
	t.Helper()
	x, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	return &replier{texts: x, store: store.New(rdb, 5*time.Millisecond), cfg: config.Defaults()}
}

// TestReplyOncePerDelivery: a delivery's notice and its job may answer it
// at once (a command on another bot's pull request: the notice and the
// revise job both find it is not this App's), and neither sees the other's
// comment yet; the delivery still gets one reply. A failed post lets the
// next try post; another delivery, or the same one on another thread, gets
// its own.
func TestReplyOncePerDelivery(t *testing.T) {
	t.Parallel()
	r := newReplier(t, newRedis(t))
	ctx := t.Context()
	repo := ghapp.Repo{Owner: "octo", Name: "widget"}
	gh := &laggingComments{}

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.post(ctx, gh, repo, 2, report.ReplyNotMyPR, r.data("alice", "d-1")); err != nil {
				t.Errorf("post: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := gh.posts(); n != 1 {
		t.Fatalf("four answers to one delivery posted %d replies, want 1: %q", n, gh.created)
	}

	gh.fail = 1
	if err := r.post(ctx, gh, repo, 2, report.ReplyNotMyPR, r.data("alice", "d-2")); err == nil {
		t.Fatal("a failed post returned no error")
	}
	if err := r.post(ctx, gh, repo, 2, report.ReplyNotMyPR, r.data("alice", "d-2")); err != nil {
		t.Fatalf("the retry after a failed post: %v", err)
	}
	if err := r.post(ctx, gh, repo, 3, report.ReplyNotMyPR, r.data("alice", "d-2")); err != nil {
		t.Fatal(err)
	}
	if n := gh.posts(); n != 3 {
		t.Errorf("replies = %d, want 3 (d-1 on #2, d-2 on #2 after its retry, d-2 on #3): %q", n, gh.created)
	}
}
