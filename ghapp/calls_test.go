package ghapp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

func TestPermission(t *testing.T) {
	e := setup(t)
	tests := []struct {
		role string // "" for a user without a role
		want ghapp.Permission
	}{
		{"admin", ghapp.PermissionAdmin},
		{"maintain", ghapp.PermissionWrite},
		{"write", ghapp.PermissionWrite},
		{"triage", ghapp.PermissionRead},
		{"read", ghapp.PermissionRead},
		{"none", ghapp.PermissionNone},
		{"", ghapp.PermissionNone},
	}
	for _, tt := range tests {
		t.Run("role "+tt.role, func(t *testing.T) {
			user := "user-" + tt.role
			if tt.role != "" {
				e.f.SetPermission(widgetName, user, tt.role)
			}
			got, err := e.client.Permission(context.Background(), widget, user)
			if err != nil {
				t.Fatalf("Permission: %v", err)
			}
			if got != tt.want {
				t.Errorf("Permission = %q, want %q", got, tt.want)
			}
			if wantWrite := tt.want == ghapp.PermissionAdmin || tt.want == ghapp.PermissionWrite; got.CanWrite() != wantWrite {
				t.Errorf("CanWrite() = %v, want %v", got.CanWrite(), wantWrite)
			}
		})
	}
}

// TestPermissionNotFound: GitHub's 404 for a login that is no account (the
// empty login of a delivery without a sender among them) means no access,
// not an error the worker retries.
func TestPermissionNotFound(t *testing.T) {
	e := setup(t)
	e.f.FailNext(http.MethodGet, "/repos/*/*/collaborators/*/permission", http.StatusNotFound, nil)
	for _, user := range []string{"ghost-of-nobody", ""} {
		got, err := e.client.Permission(context.Background(), widget, user)
		if err != nil || got != ghapp.PermissionNone {
			t.Errorf("Permission(%q) answered 404 = %q, %v; want %q, no error", user, got, err, ghapp.PermissionNone)
		}
	}
	if n := e.f.CountCalls(http.MethodGet, "/repos/*/*/collaborators/*/permission"); n != 2 {
		t.Errorf("permission calls = %d, want 2 (a 404 is not retried): %v", n, e.f.Calls())
	}
}

func TestIssue(t *testing.T) {
	e := setup(t)
	n := e.f.AddIssue(widgetName, ghfake.Issue{Title: "Crash", Body: "It crashes.", Author: "alice", Labels: []string{"bug"}})
	got, err := e.client.Issue(context.Background(), widget, n)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	want := ghapp.Issue{
		Number: n, Title: "Crash", Body: "It crashes.", State: "open", Author: "alice",
		Labels: []string{"bug"}, HTMLURL: fmt.Sprintf("%s/acme/widget/issues/%d", e.f.URL(), n),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Issue (-want +got):\n%s", diff)
	}
	e.f.CloseIssue(widgetName, n)
	e.f.LockIssue(widgetName, n)
	got, err = e.client.Issue(context.Background(), widget, n)
	if err != nil || got.State != "closed" || !got.Locked {
		t.Errorf("closed and locked issue = %+v, %v; want state closed, locked", got, err)
	}
	_, err = e.client.Issue(context.Background(), widget, 999)
	if !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("missing issue: err = %v, want ErrNotFound", err)
	}
}

func TestComments(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	marker := ghapp.Marker("status:fix:acme/widget#1")
	// A user quoting the marker must not be taken for the bot.
	e.f.AddComment(widgetName, n, "mallory", "look: "+marker)

	if _, ok, err := e.client.FindComment(ctx, widget, n, marker); err != nil || ok {
		t.Fatalf("FindComment before posting = %v, %v; want not found", ok, err)
	}
	created, err := e.client.CreateComment(ctx, widget, n, "Queued.\n\n"+marker)
	if err != nil {
		t.Fatalf("CreateComment: %v", err)
	}
	if created.Author != e.f.BotLogin() || created.ID == 0 || !strings.Contains(created.HTMLURL, fmt.Sprintf("#issuecomment-%d", created.ID)) {
		t.Errorf("created comment = %+v, want the bot's with an id and link", created)
	}
	edited, err := e.client.EditComment(ctx, widget, created.ID, "Done.\n\n"+marker)
	if err != nil {
		t.Fatalf("EditComment: %v", err)
	}
	if edited.ID != created.ID || edited.Body != "Done.\n\n"+marker {
		t.Errorf("edited comment = %+v, want the same id with the new body", edited)
	}
	found, ok, err := e.client.FindComment(ctx, widget, n, marker)
	if err != nil || !ok || found.ID != created.ID {
		t.Errorf("FindComment = %+v, %v, %v; want comment %d", found, ok, err, created.ID)
	}
	list, err := e.client.ListComments(ctx, widget, n)
	if err != nil {
		t.Fatalf("ListComments: %v", err)
	}
	var bodies []string
	for _, c := range list {
		bodies = append(bodies, c.Author+": "+c.Body)
	}
	want := []string{"mallory: look: " + marker, e.f.BotLogin() + ": Done.\n\n" + marker}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("ListComments (-want +got):\n%s", diff)
	}
	if _, err := e.client.EditComment(ctx, widget, 424242, "x"); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("EditComment of a missing comment: err = %v, want ErrNotFound", err)
	}
	if _, _, err := e.client.FindComment(ctx, widget, n, ""); err == nil {
		t.Error("FindComment with an empty marker succeeded, want an error")
	}
}

func TestListCommentsPaginatesBeyondOneHundred(t *testing.T) {
	e := setup(t)
	n := e.f.AddIssue(widgetName, ghfakeIssue("Busy issue"))
	var want []string
	for i := range 250 {
		body := fmt.Sprintf("comment %d", i)
		e.f.AddComment(widgetName, n, "alice", body)
		want = append(want, body)
	}
	list, err := e.client.ListComments(context.Background(), widget, n)
	if err != nil {
		t.Fatalf("ListComments: %v", err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.Body)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListComments (-want +got):\n%s", diff)
	}
	if pages := e.countCalls("GET", "/repos/acme/widget/issues/*/comments"); pages != 3 {
		t.Errorf("listed in %d pages, want 3 of 100", pages)
	}
}

func TestReactionsAndLabels(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	cid := e.f.AddComment(widgetName, n, "alice", "/agent-fix")
	e.f.Commit(widgetName, "feature", map[string]string{"a.go": "package a\n"}, "feature")
	pr := e.f.AddPR(widgetName, ghfake.PR{Title: "Feature", Head: "feature", Author: "alice"})
	_, rcs := e.f.AddReview(widgetName, pr, "bob", "", ghfake.ReviewComment{Body: "/agent-fix rename", Path: "a.go", Line: 1})

	for range 2 { // a second reaction is harmless
		if err := e.client.ReactToIssue(ctx, widget, n, ghapp.ReactionEyes); err != nil {
			t.Fatalf("ReactToIssue: %v", err)
		}
	}
	if err := e.client.ReactToComment(ctx, widget, cid, ghapp.ReactionEyes); err != nil {
		t.Fatalf("ReactToComment: %v", err)
	}
	if err := e.client.ReactToReviewComment(ctx, widget, rcs[0], ghapp.ReactionRocket); err != nil {
		t.Fatalf("ReactToReviewComment: %v", err)
	}
	bot := e.f.BotLogin()
	want := []ghfake.Reaction{
		{Subject: "issue", SubjectID: int64(n), Content: "eyes", User: bot},
		{Subject: "comment", SubjectID: cid, Content: "eyes", User: bot},
		{Subject: "review_comment", SubjectID: rcs[0], Content: "rocket", User: bot},
	}
	if diff := cmp.Diff(want, e.f.Reactions(widgetName), cmpopts.IgnoreFields(ghfake.Reaction{}, "ID")); diff != "" {
		t.Errorf("reactions (-want +got):\n%s", diff)
	}
	if err := e.client.ReactToIssue(ctx, widget, n, "shrug"); ghapp.HTTPStatus(err) != http.StatusUnprocessableEntity {
		t.Errorf("invalid reaction: err = %v, want 422", err)
	}

	if err := e.client.AddLabels(ctx, widget, n, "agent-fix", "bug"); err != nil {
		t.Fatalf("AddLabels: %v", err)
	}
	if err := e.client.AddLabels(ctx, widget, n, "bug"); err != nil {
		t.Fatalf("AddLabels again: %v", err)
	}
	if diff := cmp.Diff([]string{"agent-fix", "bug"}, e.f.Labels(widgetName, n)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestRepositoryContentsAndBranches(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	repo, err := e.client.GetRepository(ctx, widget)
	if err != nil {
		t.Fatalf("GetRepository: %v", err)
	}
	want := ghapp.Repository{
		ID: repo.ID, Owner: "acme", Name: "widget", FullName: "acme/widget", DefaultBranch: "main",
		CloneURL: e.f.CloneURL(widgetName), HTMLURL: e.f.URL() + "/acme/widget",
	}
	if diff := cmp.Diff(want, repo); diff != "" || repo.ID == 0 {
		t.Errorf("GetRepository (-want +got):\n%s", diff)
	}
	sha := e.f.Commit(widgetName, "topic", map[string]string{".github/agent-fix.yml": "test: make test\n"}, "change config")

	tests := []struct {
		name, path, ref string
		want            string
		wantErr         error
	}{
		{name: "default branch", path: ".github/agent-fix.yml", want: "test: go test ./...\n"},
		{name: "branch", path: ".github/agent-fix.yml", ref: "topic", want: "test: make test\n"},
		{name: "commit", path: ".github/agent-fix.yml", ref: sha, want: "test: make test\n"},
		{name: "missing file", path: "nope.yml", wantErr: ghapp.ErrNotFound},
		{name: "missing ref", path: "README.md", ref: "nope", wantErr: ghapp.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.client.GetContents(ctx, widget, tt.path, tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("GetContents error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("GetContents = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := e.client.GetContents(ctx, widget, "src", ""); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("GetContents of a directory: err = %v, want a directory error", err)
	}

	head, err := e.client.BranchHead(ctx, widget, "topic")
	if err != nil || head != sha {
		t.Errorf("BranchHead(topic) = %q, %v; want %q", head, err, sha)
	}
	if _, err := e.client.BranchHead(ctx, widget, "missing"); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("BranchHead(missing): err = %v, want ErrNotFound", err)
	}
}

func TestPullRequests(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.f.SetPermission(widgetName, "alice", "write")
	const branch = "agent-fix/issue-1"
	if _, ok, err := e.client.FindPR(ctx, widget, branch); err != nil || ok {
		t.Fatalf("FindPR before opening = %v, %v; want none", ok, err)
	}
	head := e.f.Commit(widgetName, branch, map[string]string{"fix.txt": "fixed\n"}, "Fix")
	baseHead, _ := e.f.Branch(widgetName, "main")
	// A pull request by someone else from the same branch name elsewhere
	// is not the bot's.
	e.f.Commit(widgetName, "alice-branch", map[string]string{"x.txt": "x\n"}, "x")
	e.f.AddPR(widgetName, ghfake.PR{Title: "Alice's", Head: "alice-branch", Author: "alice"})

	pr, err := e.client.CreatePR(ctx, widget, ghapp.NewPullRequest{Title: "Fix #1: crash", Body: "Fixes #1", Head: branch, Base: "main", Draft: true})
	if err != nil {
		t.Fatalf("CreatePR: %v", err)
	}
	want := ghapp.PullRequest{
		Number: pr.Number, Title: "Fix #1: crash", Body: "Fixes #1", State: "open", Draft: true,
		Author: e.f.BotLogin(), HTMLURL: fmt.Sprintf("%s/acme/widget/pull/%d", e.f.URL(), pr.Number),
		Head: branch, HeadSHA: head, HeadRepo: "acme/widget", Base: "main", BaseSHA: baseHead,
	}
	if diff := cmp.Diff(want, pr); diff != "" {
		t.Errorf("CreatePR (-want +got):\n%s", diff)
	}
	found, ok, err := e.client.FindPR(ctx, widget, branch)
	if err != nil || !ok || found.Number != pr.Number {
		t.Errorf("FindPR = %+v, %v, %v; want #%d", found, ok, err, pr.Number)
	}
	if _, ok, err := e.client.FindPR(ctx, widget, "alice-branch"); err != nil || ok {
		t.Errorf("FindPR(alice-branch) = %v, %v; want none: it is not the bot's", ok, err)
	}

	title, body := "Fix #1: crash (revised)", "Fixes #1\n\nMore."
	if _, err := e.client.UpdatePR(ctx, widget, pr.Number, ghapp.PullRequestUpdate{Title: &title, Body: &body}); err != nil {
		t.Fatalf("UpdatePR: %v", err)
	}
	if err := e.client.RequestReviewers(ctx, widget, pr.Number, "alice"); err != nil {
		t.Fatalf("RequestReviewers: %v", err)
	}
	got, err := e.client.PR(ctx, widget, pr.Number)
	if err != nil {
		t.Fatalf("PR: %v", err)
	}
	if got.Title != title || got.Body != body || !cmp.Equal(got.RequestedReviewers, []string{"alice"}) {
		t.Errorf("PR after update = %+v, want the new title, body and reviewer alice", got)
	}
	if got.Mergeable == nil || !*got.Mergeable || got.MergeableState != "clean" {
		t.Errorf("PR mergeable = %v, %q; want true, clean (a single PR's read computes it)", got.Mergeable, got.MergeableState)
	}
	if err := e.client.RequestReviewers(ctx, widget, pr.Number, "stranger"); ghapp.HTTPStatus(err) != http.StatusUnprocessableEntity {
		t.Errorf("RequestReviewers(stranger): err = %v, want 422", err)
	}

	// Opening it again returns the existing pull request.
	again, err := e.client.CreatePR(ctx, widget, ghapp.NewPullRequest{Title: "Fix #1", Body: "Fixes #1", Head: branch, Base: "main"})
	if err != nil || again.Number != pr.Number {
		t.Errorf("CreatePR again = #%d, %v; want the existing #%d", again.Number, err, pr.Number)
	}
	if n := len(e.f.PRs(widgetName)); n != 2 {
		t.Errorf("the fake has %d pull requests, want 2 (alice's and the bot's)", n)
	}

	closed := "closed"
	if _, err := e.client.UpdatePR(ctx, widget, pr.Number, ghapp.PullRequestUpdate{State: &closed}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, ok, err := e.client.FindPR(ctx, widget, branch); err != nil || ok {
		t.Errorf("FindPR after closing = %v, %v; want none", ok, err)
	}
	if _, err := e.client.PR(ctx, widget, 999); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("PR(999): err = %v, want ErrNotFound", err)
	}
}

func TestCreatePRDraftUnsupported(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.f.DisableDrafts(widgetName)
	e.f.Commit(widgetName, "agent-fix/issue-2", map[string]string{"fix.txt": "partial\n"}, "Partial fix")
	nb := ghapp.NewPullRequest{Title: "Fix #2: crash", Body: "Fixes #2", Head: "agent-fix/issue-2", Base: "main", Draft: true}
	_, err := e.client.CreatePR(ctx, widget, nb)
	if !errors.Is(err, ghapp.ErrDraftUnsupported) {
		t.Fatalf("CreatePR draft: err = %v, want ErrDraftUnsupported", err)
	}
	if n := e.countCalls("POST", "/repos/acme/widget/pulls"); n != 1 {
		t.Errorf("POST pulls sent %d times, want 1 (422 is not retried)", n)
	}
	nb.Draft, nb.Title = false, "[incomplete] "+nb.Title
	pr, err := e.client.CreatePR(ctx, widget, nb)
	if err != nil || pr.Draft || pr.Title != "[incomplete] Fix #2: crash" {
		t.Fatalf("CreatePR non-draft = %+v, %v; want a regular pull request titled [incomplete]", pr, err)
	}
}

func TestMarkReadyForReview(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	draft := func(n int) int {
		t.Helper()
		branch := fmt.Sprintf("agent-fix/issue-%d", n)
		e.f.Commit(widgetName, branch, map[string]string{"fix.txt": "partial\n"}, "Partial fix")
		pr, err := e.client.CreatePR(ctx, widget, ghapp.NewPullRequest{Title: "Fix", Body: "Fixes", Head: branch, Base: "main", Draft: true})
		if err != nil || !pr.Draft {
			t.Fatalf("CreatePR = %+v, %v; want a draft", pr, err)
		}
		return pr.Number
	}
	isDraft := func(n int) bool {
		t.Helper()
		pr, err := e.client.PR(ctx, widget, n)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Draft
	}
	const gql = "/api/graphql" // the fake's REST base is /api/v3/, as on GitHub Enterprise Server

	n := draft(1)
	if err := e.client.MarkReadyForReview(ctx, widget, n); err != nil {
		t.Fatalf("MarkReadyForReview: %v", err)
	}
	if isDraft(n) {
		t.Error("the pull request is still a draft")
	}
	if got := e.countCalls("POST", gql); got != 1 {
		t.Errorf("GraphQL requests = %d, want 1", got)
	}
	for _, c := range e.f.Calls() {
		if c.Path == gql && (c.Auth != "token" || c.Status != http.StatusOK) {
			t.Errorf("GraphQL call %+v, want an installation token answered 200", c)
		}
	}
	// A pull request that is not a draft is left as it is.
	if err := e.client.MarkReadyForReview(ctx, widget, n); err != nil || e.countCalls("POST", gql) != 1 {
		t.Errorf("MarkReadyForReview of a ready pull request = %v with %d GraphQL requests, want nil and no new request", err, e.countCalls("POST", gql))
	}

	t.Run("graphql errors", func(t *testing.T) {
		n := draft(2)
		before := e.countCalls("POST", gql)
		e.f.Inject(ghfake.Fault{Method: "POST", Path: gql, Status: http.StatusOK,
			Body: `{"data":{"markPullRequestReadyForReview":null},"errors":[{"type":"FORBIDDEN","message":"Resource not accessible by integration"},{"message":"second"}]}`})
		err := e.client.MarkReadyForReview(ctx, widget, n)
		var ge *ghapp.GraphQLError
		if !errors.As(err, &ge) || !cmp.Equal(ge.Messages, []string{"Resource not accessible by integration", "second"}) {
			t.Fatalf("err = %v, want a GraphQLError with both messages", err)
		}
		if !strings.Contains(err.Error(), "acme/widget#") || !strings.Contains(err.Error(), "Resource not accessible by integration") {
			t.Errorf("err = %q, want the pull request and GitHub's message", err)
		}
		if got := e.countCalls("POST", gql) - before; got != 1 {
			t.Errorf("GraphQL requests = %d, want 1 (an error answer is not retried)", got)
		}
		if !isDraft(n) {
			t.Error("the pull request is no longer a draft")
		}
	})

	t.Run("server error retried", func(t *testing.T) {
		n := draft(3)
		before, waits := e.countCalls("POST", gql), len(e.sleep.recorded())
		e.f.FailNext("POST", gql, http.StatusBadGateway, nil)
		if err := e.client.MarkReadyForReview(ctx, widget, n); err != nil {
			t.Fatalf("MarkReadyForReview after a 502: %v", err)
		}
		if got := e.countCalls("POST", gql) - before; got != 2 || len(e.sleep.recorded()) != waits+1 {
			t.Errorf("GraphQL requests = %d with %d waits, want 2 with 1", got, len(e.sleep.recorded())-waits)
		}
		if isDraft(n) {
			t.Error("the pull request is still a draft")
		}
	})

	t.Run("http error", func(t *testing.T) {
		n := draft(4)
		e.f.Inject(ghfake.Fault{Method: "POST", Path: gql, Status: http.StatusUnauthorized, Body: `{"message":"Bad credentials"}`})
		err := e.client.MarkReadyForReview(ctx, widget, n)
		if ghapp.HTTPStatus(err) != http.StatusUnauthorized || !strings.Contains(err.Error(), "Bad credentials") {
			t.Errorf("err = %v, want a 401 APIError with GitHub's message", err)
		}
	})

	if err := e.client.MarkReadyForReview(ctx, widget, 999); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("MarkReadyForReview(999): err = %v, want ErrNotFound", err)
	}
}

func TestCreatePRRefusals(t *testing.T) {
	e := setup(t)
	e.f.Commit(widgetName, "empty", nil, "no change")
	tests := []struct {
		name string
		pr   ghapp.NewPullRequest
	}{
		{"missing head", ghapp.NewPullRequest{Title: "t", Head: "nope", Base: "main"}},
		{"missing base", ghapp.NewPullRequest{Title: "t", Head: "empty", Base: "nope"}},
		{"no title", ghapp.NewPullRequest{Head: "empty", Base: "main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.CreatePR(context.Background(), widget, tt.pr)
			if ghapp.HTTPStatus(err) != http.StatusUnprocessableEntity || errors.Is(err, ghapp.ErrDraftUnsupported) {
				t.Errorf("CreatePR: err = %v, want a plain 422", err)
			}
		})
	}
}

func TestReviewComments(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.f.Commit(widgetName, "agent-fix/issue-3", map[string]string{"a.go": "package a\n"}, "Fix")
	pr := e.f.AddPR(widgetName, ghfake.PR{Title: "Fix #3", Head: "agent-fix/issue-3", Author: e.f.BotLogin()})
	r1, ids1 := e.f.AddReview(widgetName, pr, "alice", "Please change",
		ghfake.ReviewComment{Body: "rename this", Path: "a.go", Line: 1, DiffHunk: "@@ -0,0 +1 @@\n+package a"},
		ghfake.ReviewComment{Body: "and this", Path: "a.go", Line: 1})
	_, ids2 := e.f.AddReview(widgetName, pr, "bob", "", ghfake.ReviewComment{Body: "nit", Path: "a.go", Line: 1})

	all, err := e.client.ListReviewComments(ctx, widget, pr)
	if err != nil {
		t.Fatalf("ListReviewComments: %v", err)
	}
	if got := reviewCommentIDs(all); !cmp.Equal(got, append(ids1, ids2...)) {
		t.Errorf("ListReviewComments ids = %v, want %v", got, append(ids1, ids2...))
	}
	if all[0].Path != "a.go" || all[0].Line != 1 || all[0].Author != "alice" || all[0].ReviewID != r1 || !strings.Contains(all[0].DiffHunk, "+package a") {
		t.Errorf("first review comment = %+v, want alice's on a.go:1 with its hunk", all[0])
	}
	ofReview, err := e.client.ListReviewCommentsOf(ctx, widget, pr, r1)
	if err != nil {
		t.Fatalf("ListReviewCommentsOf: %v", err)
	}
	if got := reviewCommentIDs(ofReview); !cmp.Equal(got, ids1) {
		t.Errorf("ListReviewCommentsOf ids = %v, want %v", got, ids1)
	}

	body := "Renamed.\n\n" + ghapp.Marker("reply:"+fmt.Sprint(ids1[0]))
	reply, err := e.client.ReplyToReviewComment(ctx, widget, pr, ids1[0], body)
	if err != nil {
		t.Fatalf("ReplyToReviewComment: %v", err)
	}
	if reply.InReplyTo != ids1[0] || reply.Author != e.f.BotLogin() || reply.Body != body || reply.Path != "a.go" {
		t.Errorf("reply = %+v, want the bot's answer in the thread of %d", reply, ids1[0])
	}
	if _, err := e.client.ReplyToReviewComment(ctx, widget, pr, 999, "x"); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("reply to a missing comment: err = %v, want ErrNotFound", err)
	}
}

func reviewCommentIDs(cs []ghapp.ReviewComment) []int64 {
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestCheckRuns(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.f.Commit(widgetName, "agent-fix/issue-4", map[string]string{"a.go": "package a\n"}, "Fix")
	cr, err := e.client.CreateCheckRun(ctx, widget, ghapp.NewCheckRun{
		Name: "agentfix", HeadSHA: sha, ExternalID: "run-1", Status: "in_progress",
		DetailsURL: "https://bot.example/runs/run-1", Title: "Working", Summary: "step 1",
	})
	if err != nil {
		t.Fatalf("CreateCheckRun: %v", err)
	}
	if cr.ID == 0 || cr.Status != "in_progress" || cr.HeadSHA != sha || cr.ExternalID != "run-1" {
		t.Errorf("created check run = %+v", cr)
	}
	done, err := e.client.UpdateCheckRun(ctx, widget, cr.ID, ghapp.CheckRunUpdate{
		Name: "agentfix", Conclusion: "success", Title: "Pull request opened", Summary: "#5", Text: "details",
	})
	if err != nil {
		t.Fatalf("UpdateCheckRun: %v", err)
	}
	if done.Status != "completed" || done.Conclusion != "success" {
		t.Errorf("updated check run = %+v, want completed with success", done)
	}
	runs := e.f.CheckRuns(widgetName)
	want := []ghfake.CheckRun{{
		ID: cr.ID, Name: "agentfix", HeadSHA: sha, Status: "completed", Conclusion: "success", ExternalID: "run-1",
		DetailsURL: "https://bot.example/runs/run-1", Title: "Pull request opened", Summary: "#5", Text: "details",
		AppID: e.f.AppID(), AppSlug: e.f.AppSlug(), AppName: e.f.AppSlug(), Updates: 1,
	}}
	if diff := cmp.Diff(want, runs, cmpopts.IgnoreFields(ghfake.CheckRun{}, "StartedAt", "CompletedAt", "SuiteID")); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
	if _, err := e.client.CreateCheckRun(ctx, widget, ghapp.NewCheckRun{Name: "agentfix", HeadSHA: strings.Repeat("0", 40)}); ghapp.HTTPStatus(err) != http.StatusUnprocessableEntity {
		t.Errorf("check run on a missing commit: err = %v, want 422", err)
	}
	if _, err := e.client.UpdateCheckRun(ctx, widget, cr.ID, ghapp.CheckRunUpdate{}); err == nil {
		t.Error("UpdateCheckRun without a name succeeded, want an error")
	}
}

func TestHookDeliveries(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	base := time.Now().Add(-10 * time.Hour).Truncate(time.Second)
	var wantIDs []int64
	for i := range 150 {
		status, code := "OK", 202
		if i%50 == 0 {
			status, code = "Invalid HTTP Response: 503", 503
		}
		id := e.f.AddDelivery(ghfake.Delivery{
			GUID: fmt.Sprintf("guid-%d", i), Event: "issues", Action: "labeled",
			Status: status, StatusCode: code, DeliveredAt: base.Add(time.Duration(i) * time.Minute), InstallationID: installationID,
		})
		if i >= 30 {
			wantIDs = append([]int64{id}, wantIDs...) // newest first
		}
	}
	got, err := e.app.ListHookDeliveries(ctx, base.Add(30*time.Minute))
	if err != nil {
		t.Fatalf("ListHookDeliveries: %v", err)
	}
	var ids []int64
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("delivery ids since the 30th (-want +got):\n%s", diff)
	}
	if pages := e.countCalls("GET", "/app/hook/deliveries"); pages != 2 {
		t.Errorf("listed in %d pages, want 2", pages)
	}
	failed := got[len(got)-1-(50-30)] // the 50th delivery
	if failed.StatusCode != 503 || failed.GUID != "guid-50" || failed.Event != "issues" || failed.InstallationID != installationID {
		t.Errorf("delivery 50 = %+v, want the failed one", failed)
	}
	if err := e.app.RedeliverHookDelivery(ctx, failed.ID); err != nil {
		t.Fatalf("RedeliverHookDelivery: %v", err)
	}
	if diff := cmp.Diff([]int64{failed.ID}, e.f.Redeliveries()); diff != "" {
		t.Errorf("redeliveries (-want +got):\n%s", diff)
	}
	if err := e.app.RedeliverHookDelivery(ctx, 1); !errors.Is(err, ghapp.ErrNotFound) {
		t.Errorf("redeliver a missing delivery: err = %v, want ErrNotFound", err)
	}
}
