package ghapp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// TestChecksOfACommit: the suites and latest runs of every App on a
// commit, with their outputs and annotations; a suite no App ran anything
// in stays queued.
func TestChecksOfACommit(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.f.Commit(widgetName, "agent-fix/issue-1", map[string]string{"a.go": "package a\n"}, "Fix")
	lint := e.f.AddCheckRun(widgetName, ghfake.CheckRun{HeadSHA: sha, Name: "lint", Conclusion: "failure",
		Title: "2 problems", Summary: "golint found 2 problems", Text: "see annotations",
		Annotations: []ghfake.Annotation{{Path: "a.go", StartLine: 3, Message: "exported A has no comment"}, {Path: "a.go", StartLine: 9, Message: "x"}}})
	job := e.f.AddJob(widgetName, ghfake.Job{HeadSHA: sha, Workflow: "CI", Name: "test", Conclusion: "success"})
	e.f.AddCheckSuite(widgetName, sha, ghfake.CheckApp{ID: 77, Slug: "idle-app", Name: "Idle"})

	suites, err := e.client.ListCheckSuites(ctx, widget, sha)
	if err != nil {
		t.Fatal(err)
	}
	type suite struct {
		app, status, conclusion string
		runs                    int
	}
	var got []suite
	for _, s := range suites {
		got = append(got, suite{s.AppSlug, s.Status, s.Conclusion, s.Runs})
	}
	want := []suite{{"other-ci", "completed", "failure", 1}, {"github-actions", "completed", "success", 1}, {"idle-app", "queued", "", 0}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(suite{})); diff != "" {
		t.Errorf("check suites (-want +got):\n%s", diff)
	}

	runs, err := e.client.ListCheckRuns(ctx, widget, sha)
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListCheckRuns = %+v, %v; want 2 runs", runs, err)
	}
	l := runs[0]
	if l.ID != lint || l.Name != "lint" || l.AppSlug != "other-ci" || l.Title != "2 problems" || l.Summary != "golint found 2 problems" ||
		l.Text != "see annotations" || l.Annotations != 2 || l.SuiteID == 0 {
		t.Errorf("lint run = %+v", l)
	}
	if runs[1].ID != job || runs[1].AppSlug != ghapp.ActionsAppSlug {
		t.Errorf("job run = %+v, want job %d of %s", runs[1], job, ghapp.ActionsAppSlug)
	}
	anns, err := e.client.ListAnnotations(ctx, widget, lint, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ghapp.Annotation{{Path: "a.go", StartLine: 3, EndLine: 3, Level: "failure", Message: "exported A has no comment"}}, anns); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// TestJobLog: the log of a GitHub Actions job comes behind a redirect,
// downloaded without the installation's token and cut to its end; a log
// GitHub no longer keeps, or may not show, is ErrNoLog with GitHub's
// status.
func TestJobLog(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.f.Commit(widgetName, "agent-fix/issue-2", map[string]string{"a.go": "package a\n"}, "Fix")
	id := e.f.AddJob(widgetName, ghfake.Job{HeadSHA: sha, Name: "test", Conclusion: "failure", Steps: []ghfake.Step{
		{Name: "actions/checkout@v4", Log: "Fetching the repository"},
		{Name: "go test ./...", Conclusion: "failure", Log: "--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: Add(2, 2) = 0, want 4\nFAIL"},
	}})
	job, err := e.client.WorkflowJob(ctx, widget, id)
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != id || job.RunID == 0 || len(job.Steps) != 2 || job.Steps[1].Conclusion != "failure" || job.Steps[1].StartedAt.IsZero() {
		t.Errorf("job = %+v", job)
	}
	log, err := e.client.JobLog(ctx, widget, id, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.Text, "Z     calc_test.go:9: Add(2, 2) = 0, want 4\n") || log.Cut != 0 {
		t.Errorf("log = %q (cut %d), want the test's failure line with its time stamp", log.Text, log.Cut)
	}
	if n := e.f.LogDownloadsWithCredentials(); n != 0 {
		t.Errorf("%d log downloads carried credentials, want none", n)
	}
	short, err := e.client.JobLog(ctx, widget, id, 40)
	if err != nil || len(short.Text) != 40 || short.Cut != int64(len(log.Text)-40) || !strings.HasSuffix(log.Text, short.Text) {
		t.Errorf("log cut to 40 bytes = %q (cut %d), %v; want its last 40 bytes", short.Text, short.Cut, err)
	}
	for _, status := range []int{http.StatusGone, http.StatusNotFound, http.StatusForbidden} {
		gone := e.f.AddJob(widgetName, ghfake.Job{HeadSHA: sha, Name: "old", Conclusion: "failure", LogStatus: status})
		_, err := e.client.JobLog(ctx, widget, gone, 1<<20)
		if !errors.Is(err, ghapp.ErrNoLog) || ghapp.HTTPStatus(err) != status {
			t.Errorf("log answered %d: err = %v, want ErrNoLog with status %d", status, err, status)
		}
	}
}

// TestRerunFailedJobs: re-running a workflow run's failed jobs makes new
// attempts, and the listing of the commit's checks shows the latest.
func TestRerunFailedJobs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sha := e.f.Commit(widgetName, "agent-fix/issue-3", map[string]string{"a.go": "package a\n"}, "Fix")
	id := e.f.AddJob(widgetName, ghfake.Job{HeadSHA: sha, Name: "test", Conclusion: "failure", RerunConclusion: "success"})
	job, err := e.client.WorkflowJob(ctx, widget, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.RerunFailedJobs(ctx, widget, job.RunID); err != nil {
		t.Fatal(err)
	}
	runs, err := e.client.ListCheckRuns(ctx, widget, sha)
	if err != nil || len(runs) != 1 || runs[0].ID == id || runs[0].Conclusion != "success" {
		t.Errorf("runs after the re-run = %+v, %v; want the new attempt alone, passed", runs, err)
	}
	if err := e.client.RerunFailedJobs(ctx, widget, job.RunID); ghapp.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("second re-run with nothing failed: err = %v, want 403", err)
	}
	if diff := cmp.Diff([]int64{job.RunID}, e.f.Reruns(widgetName)); diff != "" {
		t.Errorf("re-runs (-want +got):\n%s", diff)
	}
}

// TestPRCommitsAndOpenPRs: the commits of a pull request with who made
// them, the open pull requests into a branch, and a pull request that
// conflicts with its base.
func TestPRCommitsAndOpenPRs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const branch = "agent-fix/issue-9"
	first := e.f.CommitAs(widgetName, branch, map[string]string{"README.md": "# widget, fixed\n"}, "Fix", e.f.BotLogin(), e.f.BotLogin()+"@users.noreply.github.com")
	second := e.f.CommitAs(widgetName, branch, map[string]string{"b.txt": "b\n"}, "More", "Alice", "1001+alice@users.noreply.github.com")
	n := e.f.AddPR(widgetName, ghfake.PR{Title: "Fix #9", Head: branch, Author: e.f.BotLogin()})
	commits, err := e.client.PRCommits(ctx, widget, n)
	if err != nil {
		t.Fatal(err)
	}
	want := []ghapp.Commit{
		{SHA: first, AuthorName: e.f.BotLogin(), AuthorEmail: e.f.BotLogin() + "@users.noreply.github.com",
			CommitterName: e.f.BotLogin(), CommitterEmail: e.f.BotLogin() + "@users.noreply.github.com",
			AuthorLogin: e.f.BotLogin(), CommitterLogin: e.f.BotLogin(), Parents: 1},
		{SHA: second, AuthorName: "Alice", AuthorEmail: "1001+alice@users.noreply.github.com", CommitterName: "Alice",
			CommitterEmail: "1001+alice@users.noreply.github.com", AuthorLogin: "alice", CommitterLogin: "alice", Parents: 1},
	}
	if diff := cmp.Diff(want, commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	open, err := e.client.ListOpenPRs(ctx, widget, "main")
	if err != nil || len(open) != 1 || open[0].Number != n {
		t.Errorf("ListOpenPRs(main) = %+v, %v; want #%d", open, err, n)
	}
	if other, err := e.client.ListOpenPRs(ctx, widget, "release"); err != nil || len(other) != 0 {
		t.Errorf("ListOpenPRs(release) = %+v, %v; want none", other, err)
	}

	e.f.Commit(widgetName, "main", map[string]string{"README.md": "# widget, moved on\n"}, "Conflicting change")
	e.f.SetMergeableUnknown(widgetName, n, 1)
	pr, err := e.client.PR(ctx, widget, n)
	if err != nil || pr.Mergeable != nil || pr.MergeableState != "unknown" {
		t.Errorf("PR while GitHub computes = %v, %q, %v; want nil, unknown", pr.Mergeable, pr.MergeableState, err)
	}
	pr, err = e.client.PR(ctx, widget, n)
	if err != nil || pr.Mergeable == nil || *pr.Mergeable || pr.MergeableState != "dirty" {
		t.Errorf("PR conflicting with its base = %v, %q, %v; want false, dirty", pr.Mergeable, pr.MergeableState, err)
	}
}
