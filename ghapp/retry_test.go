package ghapp_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// warm makes the App fetch its identity and installation token, so the
// faults under test hit the calls themselves.
func warm(t *testing.T, e *env) {
	t.Helper()
	if _, err := e.app.Identity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.GetRepository(context.Background(), widget); err != nil {
		t.Fatal(err)
	}
}

func TestServerErrorsAreRetriedWithBackoff(t *testing.T) {
	e := setup(t, func(o *ghapp.Options) { o.Retry.BaseDelay = time.Second })
	warm(t, e)
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	e.f.FailNext("GET", "/repos/acme/widget/issues/*", http.StatusBadGateway, nil)
	e.f.FailNext("GET", "/repos/acme/widget/issues/*", http.StatusServiceUnavailable, nil)
	is, err := e.client.Issue(context.Background(), widget, n)
	if err != nil || is.Title != "Crash" {
		t.Fatalf("Issue after two 5xx = %+v, %v; want the issue", is, err)
	}
	waits := e.sleep.recorded()
	if len(waits) != 2 {
		t.Fatalf("waits = %v, want 2", waits)
	}
	// Backoff doubles from BaseDelay; the upper half is jittered.
	for i, w := range waits {
		lo, hi := time.Second<<i/2, time.Second<<i
		if w < lo || w > hi {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, w, lo, hi)
		}
	}
	if got := metric(t, e, "agentfix_github_requests_total", map[string]string{"status": "502"}); got != 1 {
		t.Errorf("agentfix_github_requests_total{status=502} = %v, want 1", got)
	}
}

func TestServerErrorsExhaustAttempts(t *testing.T) {
	e := setup(t, func(o *ghapp.Options) { o.Retry.MaxAttempts = 3 })
	warm(t, e)
	for range 3 {
		e.f.FailNext("GET", "/repos/acme/widget", http.StatusInternalServerError, nil)
	}
	_, err := e.client.GetRepository(context.Background(), widget)
	if ghapp.HTTPStatus(err) != http.StatusInternalServerError {
		t.Fatalf("GetRepository after 3 × 500: err = %v, want the 500", err)
	}
	if n := e.countCalls("GET", "/repos/acme/widget"); n != 1+3 {
		t.Errorf("GET sent %d times, want 1 (warm) + 3 attempts", n)
	}
	if e.f.PendingFaults() != 0 {
		t.Errorf("%d faults left, want all fired", e.f.PendingFaults())
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		status int
		call   func(*env) error
	}{
		{"401", "GET", "/repos/acme/widget/issues/*", http.StatusUnauthorized, func(e *env) error {
			_, err := e.client.Issue(context.Background(), widget, 1)
			return err
		}},
		{"404", "GET", "/repos/acme/widget/issues/*", http.StatusNotFound, func(e *env) error {
			_, err := e.client.Issue(context.Background(), widget, 1)
			return err
		}},
		{"403 without rate limit", "GET", "/repos/acme/widget/issues/*", http.StatusForbidden, func(e *env) error {
			_, err := e.client.Issue(context.Background(), widget, 1)
			return err
		}},
		{"422", "POST", "/repos/acme/widget/issues/*/labels", http.StatusUnprocessableEntity, func(e *env) error {
			return e.client.AddLabels(context.Background(), widget, 1, "x")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			warm(t, e)
			e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
			ft := ghfake.Fault{Method: tt.method, Path: tt.path, Status: tt.status}
			if tt.status == http.StatusForbidden {
				ft.Body = `{"message":"Resource not accessible by integration"}`
			}
			e.f.Inject(ft)
			err := tt.call(e)
			if ghapp.HTTPStatus(err) != tt.status {
				t.Fatalf("err = %v, want status %d", err, tt.status)
			}
			if n := e.countCalls(tt.method, tt.path); n != 1 {
				t.Errorf("%s %s sent %d times, want 1", tt.method, tt.path, n)
			}
			if w := e.sleep.recorded(); len(w) != 0 {
				t.Errorf("waited %v, want no wait", w)
			}
		})
	}
}

func TestRateLimitsAreWaitedFor(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		status   int
		header   http.Header
		body     string
		wantWait time.Duration
	}{
		{"429 with Retry-After", http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}, "", 7 * time.Second},
		{"403 secondary with Retry-After", http.StatusForbidden, http.Header{"Retry-After": {"42"}}, "", 42 * time.Second},
		{"403 primary with reset", http.StatusForbidden, http.Header{
			"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)},
		}, "", 31 * time.Second}, // one second of clock skew added
		{"403 secondary message only", http.StatusForbidden, nil, "", time.Minute},
		{"429 without headers", http.StatusTooManyRequests, nil, `{"message":"slow down"}`, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			e.now = now
			warm(t, e)
			n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
			body := "Working on it.\n\n" + ghapp.Marker("status")
			e.f.Inject(ghfake.Fault{Method: "POST", Path: "/repos/acme/widget/issues/*/comments", Status: tt.status, Header: tt.header, Body: tt.body})
			c, err := e.client.CreateComment(context.Background(), widget, n, body)
			if err != nil {
				t.Fatalf("CreateComment after a rate limit: %v", err)
			}
			if diff := cmp.Diff([]time.Duration{tt.wantWait}, e.sleep.recorded()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			// The replayed request carried the whole body, and one comment exists.
			comments := e.f.Comments(widgetName, n)
			if len(comments) != 1 || comments[0].Body != body || comments[0].ID != c.ID {
				t.Errorf("comments = %+v, want exactly the one created", comments)
			}
			if got := e.countCalls("POST", "/repos/acme/widget/issues/*/comments"); got != 2 {
				t.Errorf("POST comments sent %d times, want 2", got)
			}
		})
	}
}

func TestRateLimitBeyondMaxWaitFails(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reset := now.Add(time.Hour)
	e := setup(t, func(o *ghapp.Options) { o.Retry.MaxRateLimitWait = 5 * time.Minute })
	e.now = now
	warm(t, e)
	e.f.FailNext("GET", "/repos/acme/widget", http.StatusForbidden, http.Header{
		"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {strconv.FormatInt(reset.Unix(), 10)},
	})
	_, err := e.client.GetRepository(context.Background(), widget)
	var rl *ghapp.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %v, want a *RateLimitError", err)
	}
	if want := reset.Add(time.Second); !rl.Reset.Equal(want) {
		t.Errorf("Reset = %v, want %v", rl.Reset, want)
	}
	if !strings.Contains(err.Error(), "2026-03-01T13:00:01Z") {
		t.Errorf("error %q does not say when the limit resets", err)
	}
	if w := e.sleep.recorded(); len(w) != 0 {
		t.Errorf("waited %v, want no wait", w)
	}
	if n := e.countCalls("GET", "/repos/acme/widget"); n != 2 {
		t.Errorf("GET sent %d times, want 2 (warm + the limited one)", n)
	}
}

func TestExhaustedRateOnSuccessDoesNotBlockLaterCalls(t *testing.T) {
	e := setup(t)
	warm(t, e)
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	// A successful answer that used the last request of the window.
	e.f.Inject(ghfake.Fault{
		Method: "GET", Path: "/repos/acme/widget/issues/*", Status: http.StatusOK,
		Header: http.Header{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}},
		Body:   `{"number":1,"title":"Crash","state":"open"}`,
	})
	if _, err := e.client.Issue(context.Background(), widget, n); err != nil {
		t.Fatalf("Issue: %v", err)
	}
	// go-github alone would now refuse every call locally for an hour.
	if _, err := e.client.Issue(context.Background(), widget, n); err != nil {
		t.Fatalf("Issue after an exhausted window: %v, want the call sent to GitHub", err)
	}
	if got := e.countCalls("GET", "/repos/acme/widget/issues/*"); got != 2 {
		t.Errorf("GET issue sent %d times, want 2", got)
	}
	if got := metric(t, e, "agentfix_github_rate_limit_remaining", nil); got != 0 {
		t.Errorf("agentfix_github_rate_limit_remaining = %v, want 0", got)
	}
}

func TestCreationsAreNotDuplicatedByRetries(t *testing.T) {
	marker := ghapp.Marker("status:fix:acme/widget#1")
	tests := []struct {
		name        string
		afterEffect bool
		wantPosts   int
	}{
		// GitHub failed before acting: the lookup finds nothing and the
		// creation is sent again.
		{"5xx before the effect", false, 2},
		// GitHub acted but its answer was lost: the lookup finds it.
		{"5xx after the effect", true, 1},
	}
	for _, tt := range tests {
		t.Run("comment/"+tt.name, func(t *testing.T) {
			e := setup(t)
			warm(t, e)
			n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
			e.f.Inject(ghfake.Fault{Method: "POST", Path: "/repos/acme/widget/issues/*/comments", Status: http.StatusBadGateway, AfterEffect: tt.afterEffect})
			c, err := e.client.CreateComment(context.Background(), widget, n, "Queued.\n\n"+marker)
			if err != nil {
				t.Fatalf("CreateComment: %v", err)
			}
			comments := e.f.Comments(widgetName, n)
			if len(comments) != 1 || comments[0].ID != c.ID {
				t.Errorf("comments = %+v, want exactly one, the returned %d", comments, c.ID)
			}
			if got := e.countCalls("POST", "/repos/acme/widget/issues/*/comments"); got != tt.wantPosts {
				t.Errorf("POST comments sent %d times, want %d", got, tt.wantPosts)
			}
		})
		t.Run("pull request/"+tt.name, func(t *testing.T) {
			e := setup(t)
			warm(t, e)
			e.f.Commit(widgetName, "agent-fix/issue-1", map[string]string{"fix.txt": "x\n"}, "Fix")
			e.f.Inject(ghfake.Fault{Method: "POST", Path: "/repos/acme/widget/pulls", Status: http.StatusBadGateway, AfterEffect: tt.afterEffect})
			pr, err := e.client.CreatePR(context.Background(), widget, ghapp.NewPullRequest{Title: "Fix #1", Body: "Fixes #1", Head: "agent-fix/issue-1", Base: "main"})
			if err != nil {
				t.Fatalf("CreatePR: %v", err)
			}
			prs := e.f.PRs(widgetName)
			if len(prs) != 1 || prs[0].Number != pr.Number {
				t.Errorf("pull requests = %+v, want exactly one, the returned #%d", prs, pr.Number)
			}
			if got := e.countCalls("POST", "/repos/acme/widget/pulls"); got != 2 {
				t.Errorf("POST pulls sent %d times, want 2 (the repeat answers 201 or 422 already exists)", got)
			}
		})
		t.Run("check run/"+tt.name, func(t *testing.T) {
			e := setup(t)
			warm(t, e)
			sha := e.f.Commit(widgetName, "agent-fix/issue-1", map[string]string{"fix.txt": "x\n"}, "Fix")
			e.f.Inject(ghfake.Fault{Method: "POST", Path: "/repos/acme/widget/check-runs", Status: http.StatusInternalServerError, AfterEffect: tt.afterEffect})
			cr, err := e.client.CreateCheckRun(context.Background(), widget, ghapp.NewCheckRun{Name: "agentfix", HeadSHA: sha, ExternalID: "run-9", Status: "in_progress"})
			if err != nil {
				t.Fatalf("CreateCheckRun: %v", err)
			}
			runs := e.f.CheckRuns(widgetName)
			if len(runs) != 1 || runs[0].ID != cr.ID {
				t.Errorf("check runs = %+v, want exactly one, the returned %d", runs, cr.ID)
			}
			if got := e.countCalls("POST", "/repos/acme/widget/check-runs"); got != tt.wantPosts {
				t.Errorf("POST check-runs sent %d times, want %d", got, tt.wantPosts)
			}
		})
		t.Run("review reply/"+tt.name, func(t *testing.T) {
			e := setup(t)
			warm(t, e)
			e.f.Commit(widgetName, "agent-fix/issue-1", map[string]string{"a.go": "package a\n"}, "Fix")
			pr := e.f.AddPR(widgetName, ghfake.PR{Title: "Fix #1", Head: "agent-fix/issue-1", Author: e.f.BotLogin()})
			_, ids := e.f.AddReview(widgetName, pr, "alice", "", ghfake.ReviewComment{Body: "rename", Path: "a.go", Line: 1})
			e.f.Inject(ghfake.Fault{Method: "POST", Path: "/repos/acme/widget/pulls/*/comments", Status: http.StatusBadGateway, AfterEffect: tt.afterEffect})
			reply, err := e.client.ReplyToReviewComment(context.Background(), widget, pr, ids[0], "Done.\n\n"+ghapp.Marker("reply:1"))
			if err != nil {
				t.Fatalf("ReplyToReviewComment: %v", err)
			}
			rcs := e.f.ReviewComments(widgetName, pr)
			if len(rcs) != 2 || rcs[1].ID != reply.ID {
				t.Errorf("review comments = %+v, want the review's and exactly one reply", rcs)
			}
		})
	}
}

func TestCreationWithoutLookupIsNotRetried(t *testing.T) {
	e := setup(t)
	warm(t, e)
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	e.f.FailNext("POST", "/repos/acme/widget/issues/*/comments", http.StatusBadGateway, nil)
	_, err := e.client.CreateComment(context.Background(), widget, n, "no marker here")
	if ghapp.HTTPStatus(err) != http.StatusBadGateway {
		t.Fatalf("err = %v, want the 502", err)
	}
	if got := e.countCalls("POST", "/repos/acme/widget/issues/*/comments"); got != 1 {
		t.Errorf("POST comments sent %d times, want 1", got)
	}
}

func TestIdempotentWritesAreRetried(t *testing.T) {
	e := setup(t)
	warm(t, e)
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	cid := e.f.AddComment(widgetName, n, e.f.BotLogin(), "Queued.")
	e.f.FailNext("PATCH", "/repos/acme/widget/issues/comments/*", http.StatusBadGateway, nil)
	e.f.FailNext("POST", "/repos/acme/widget/issues/*/reactions", http.StatusBadGateway, nil)
	e.f.FailNext("POST", "/repos/acme/widget/issues/*/labels", http.StatusServiceUnavailable, nil)
	ctx := context.Background()
	if _, err := e.client.EditComment(ctx, widget, cid, "Done."); err != nil {
		t.Errorf("EditComment after a 502: %v", err)
	}
	if err := e.client.ReactToIssue(ctx, widget, n, ghapp.ReactionEyes); err != nil {
		t.Errorf("ReactToIssue after a 502: %v", err)
	}
	if err := e.client.AddLabels(ctx, widget, n, "agent-fix"); err != nil {
		t.Errorf("AddLabels after a 503: %v", err)
	}
	if got := e.f.Comments(widgetName, n); len(got) != 1 || got[0].Body != "Done." {
		t.Errorf("comments = %+v, want the edited one", got)
	}
	if e.f.PendingFaults() != 0 {
		t.Errorf("%d faults left, want all fired", e.f.PendingFaults())
	}
}

func TestTokenRequestIsRetried(t *testing.T) {
	e := setup(t)
	e.f.FailNext("POST", "/app/installations/*/access_tokens", http.StatusBadGateway, nil)
	e.f.FailNext("POST", "/app/installations/*/access_tokens", http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}})
	if _, err := e.client.GetRepository(context.Background(), widget); err != nil {
		t.Fatalf("GetRepository after failed token requests: %v", err)
	}
	if _, err := e.app.Token(context.Background(), installationID, widget); err != nil {
		t.Fatalf("Token: %v", err)
	}
	// The API client's token: 502, then success; the scoped token: 429,
	// then success.
	if got := e.countCalls("POST", "/app/installations/*/access_tokens"); got != 4 {
		t.Errorf("token requests = %d, want 4", got)
	}
	if w := e.sleep.recorded(); len(w) != 2 || w[1] != 3*time.Second {
		t.Errorf("waits = %v, want a backoff then 3s", w)
	}
}

func TestErrorsAndLogsHoldNoToken(t *testing.T) {
	e := setup(t)
	warm(t, e)
	ctx := context.Background()
	tok, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	e.f.FailNext("GET", "/repos/acme/widget", http.StatusBadGateway, nil)
	e.f.FailNext("GET", "/repos/acme/widget/issues/*", http.StatusUnauthorized, nil)
	_, err = e.client.GetRepository(ctx, widget)
	errs = append(errs, err)
	_, err = e.client.Issue(ctx, widget, 1)
	errs = append(errs, err)
	e.f.ExpireTokens()
	_, err = e.client.Issue(ctx, widget, 1)
	errs = append(errs, err)
	for _, err := range errs {
		for _, secret := range append(e.f.IssuedTokens(), tok.Value) {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds a token", err)
			}
		}
	}
	if !strings.Contains(e.logs.String(), "github request retried") {
		t.Errorf("the retry was not logged:\n%s", e.logs.String())
	}
	// setup's cleanup scans the logs for every issued token.
}

// metric returns the value of the sample of name whose labels include
// labels, from the App's registry.
func metric(t *testing.T, e *env, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	samples:
		for _, m := range fam.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == k && lp.GetValue() == v)
				}
				if !found {
					continue samples
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no sample of %s with labels %v", name, labels)
	return 0
}
