package workspace

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// sleeps records the waits of a cache between push tries.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

// TestPushRetriesPerCall: a 502 and a 429 with Retry-After from the git
// server are tried again (the second after the wait the server asked
// for), and the push lands once; five failures in a row, or a refusal,
// end it.
func TestPushRetriesPerCall(t *testing.T) {
	t.Parallel()
	const receivePack = "/git/*/*/git-receive-pack"
	for _, tc := range []struct {
		name    string
		faults  []ghfake.Fault
		wantErr bool
		waits   []time.Duration
		calls   int
	}{
		{"502 then 429 then it lands", []ghfake.Fault{
			{Method: http.MethodPost, Path: receivePack, Status: http.StatusBadGateway},
			{Method: http.MethodPost, Path: receivePack, Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}},
		}, false, []time.Duration{time.Second, 7 * time.Second}, 3},
		{"the answer of a push that landed is lost", []ghfake.Fault{
			{Method: http.MethodPost, Path: receivePack, Status: http.StatusInternalServerError, AfterEffect: true},
		}, false, []time.Duration{time.Second}, 1}, // the retry finds the branch there: no second receive-pack
		{"failing every time", []ghfake.Fault{
			{Method: http.MethodPost, Path: receivePack, Status: 500}, {Method: http.MethodPost, Path: receivePack, Status: 500},
			{Method: http.MethodPost, Path: receivePack, Status: 500}, {Method: http.MethodPost, Path: receivePack, Status: 500},
		}, true, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, 4},
		{"a refusal is final", []ghfake.Fault{
			{Method: http.MethodPost, Path: receivePack, Status: http.StatusForbidden},
		}, true, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGitServer(t)
			var s sleeps
			c, err := NewCache(CacheOptions{Dir: filepath.Join(t.TempDir(), "repos"), Sleep: s.sleep})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			f, err := c.Fetch(ctx, cacheRepo, g.remote(t))
			if err != nil {
				t.Fatal(err)
			}
			w, commit := commitChange(t, c, f.Branches["main"], "# fixed\n")
			for _, ft := range tc.faults {
				g.f.Inject(ft)
			}
			before := g.f.CountCalls(http.MethodPost, "/git/Octo/Widget.git/git-receive-pack")
			err = c.Push(ctx, cacheRepo, w, PushOptions{Remote: g.remote(t), Branch: "agent-fix/issue-1", Commit: commit})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Push = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.waits, s.d); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if n := g.f.CountCalls(http.MethodPost, "/git/Octo/Widget.git/git-receive-pack") - before; n != tc.calls {
				t.Errorf("receive-pack calls = %d, want %d", n, tc.calls)
			}
			if got, _ := g.f.Branch(cacheRepo, "agent-fix/issue-1"); !tc.wantErr && got != commit {
				t.Errorf("branch = %s, want %s", got, commit)
			}
		})
	}
}

func TestPushRetry(t *testing.T) {
	t.Parallel()
	answer := func(code int, retryAfter string) error {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return plumbing.NewUnexpectedError(&githttp.Err{Response: &http.Response{StatusCode: code, Header: h}})
	}
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		wait    time.Duration
		again   bool
	}{
		{"success", nil, 1, 0, false},
		{"up to date", git.NoErrAlreadyUpToDate, 1, 0, false},
		{"502", answer(502, ""), 1, time.Second, true},
		{"503 second attempt", answer(503, ""), 2, 2 * time.Second, true},
		{"429 with Retry-After", answer(429, "30"), 1, 30 * time.Second, true},
		{"Retry-After capped", answer(429, "3600"), 1, time.Minute, true},
		{"last attempt", answer(502, ""), pushAttempts, 0, false},
		{"422", answer(422, ""), 1, 0, false},
		{"refused connection", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, 1, time.Second, true},
		{"other", errors.New("non-fast-forward update"), 1, 0, false},
	} {
		wait, again := pushRetry(tc.err, tc.attempt)
		if wait != tc.wait || again != tc.again {
			t.Errorf("%s: pushRetry = %s, %v; want %s, %v", tc.name, wait, again, tc.wait, tc.again)
		}
	}
}
