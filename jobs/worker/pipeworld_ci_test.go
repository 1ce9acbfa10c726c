package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
)

// Automatic rounds in the pipeline world: the checks other Apps put on
// the commits of the bare repository — GitHub Actions jobs with their
// steps, logs and re-runs among them — the commits of a pull request, its
// mergeability as git finds it, and the tasks the webhook edge enqueues
// when a check suite or check run completes or the default branch moves.

// pipeCheckApp is an App that makes check runs.
type pipeCheckApp struct {
	id         int64
	slug, name string
}

var (
	// pipeActions is GitHub Actions, whose check runs are the jobs of
	// workflow runs.
	pipeActions = pipeCheckApp{id: 15368, slug: ghapp.ActionsAppSlug, name: "GitHub Actions"}
	// pipeOtherCI is someone else's CI App.
	pipeOtherCI = pipeCheckApp{id: 9090, slug: "other-ci", name: "Other CI"}
)

// pipeCI is the checks side of the pipeline world's GitHub, kept under
// pipeGitHub's mu: the check suites and runs of other Apps than the App
// (its own are pipeGitHub.checkRuns), and the workflow runs re-run.
type pipeCI struct {
	lastID int64 // of suites, check runs and workflow runs
	suites []*pipeSuite
	checks []*pipeCheck
	reruns []int64
}

// pipeSuite is the check suite of one App on one commit; for GitHub
// Actions, of one workflow run. Its head branch is the branch at its
// commit when it was made, as GitHub records it.
type pipeSuite struct {
	id       int64
	sha      string
	branch   string
	app      pipeCheckApp
	workflow string
	runID    int64
}

// pipeCheck is a check run of another App: its annotations and, for a
// GitHub Actions job, the job (same id). A re-run supersedes it: only the
// latest attempt of a check is listed.
type pipeCheck struct {
	ghapp.CheckRun
	annotations []ghapp.Annotation
	job         *pipeJob
	superseded  bool
}

// pipeJob is a GitHub Actions job as a test adds it (addJob).
type pipeJob struct {
	sha, workflow, name string
	// conclusion is its result; "" leaves it in progress.
	conclusion string
	steps      []pipeStep
	// logStatus, when set, is GitHub's answer to its log instead of the
	// log: 404 or 410 once expired, 403 when the App may not read it.
	logStatus int
	// rerunConclusion is the conclusion of its next attempt when its
	// failed jobs are re-run ("" leaves that attempt in progress).
	rerunConclusion string
	// title, summary and annotations are its check run's output.
	title, summary string
	annotations    []ghapp.Annotation

	attempt int
	started time.Time
}

// pipeStep is a step of a job and what it printed; its conclusion is
// "success" unless set.
type pipeStep struct{ name, conclusion, log string }

// pipeJobsStart is when the world's jobs started: their logs' time
// stamps are the same on every run.
var pipeJobsStart = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

// stepTimes returns when step i of a job ran: ten seconds each.
func (j *pipeJob) stepTimes(i int) (from, to time.Time) {
	from = j.started.Add(time.Duration(i) * 10 * time.Second)
	return from, from.Add(9 * time.Second)
}

// log is the job's log as GitHub serves it: every step's lines after its
// group header, stamped within the step's time, a failed step's ending
// with GitHub's error line.
func (j *pipeJob) log() string {
	var b strings.Builder
	line := func(at time.Time, s string) { fmt.Fprintf(&b, "%s %s\n", at.Format("2006-01-02T15:04:05.0000000Z"), s) }
	for i, st := range j.steps {
		from, to := j.stepTimes(i)
		line(from, "##[group]Run "+st.name)
		line(from, "##[endgroup]")
		for k, s := range strings.Split(st.log, "\n") {
			line(from.Add(time.Duration(k+1)*time.Millisecond), s)
		}
		if failedConclusion(st.conclusion) {
			line(to, "##[error]Process completed with exit code 1.")
		}
	}
	return b.String()
}

// newIDLocked returns a new id of a suite, check run or workflow run:
// apart from the App's own check runs', which CreateCheckRun numbers from
// 1. The caller holds g.mu.
func (g *pipeGitHub) newIDLocked() int64 {
	if g.ci.lastID == 0 {
		g.ci.lastID = 100000
	}
	g.ci.lastID++
	return g.ci.lastID
}

// suiteLocked returns the suite of app on sha (for GitHub Actions, of
// workflow), made when missing. The caller holds g.mu.
func (g *pipeGitHub) suiteLocked(sha string, app pipeCheckApp, workflow string) *pipeSuite {
	for _, s := range g.ci.suites {
		if s.sha == sha && s.app == app && s.workflow == workflow {
			return s
		}
	}
	s := &pipeSuite{id: g.newIDLocked(), sha: sha, branch: g.git.branchAt(sha), app: app, workflow: workflow}
	if app == pipeActions {
		s.runID = g.newIDLocked()
	}
	g.ci.suites = append(g.ci.suites, s)
	return s
}

// addCheck adds check run c (its name, conclusion and output) of app on
// sha with annotations, completed when c has a conclusion, and returns
// its id.
func (g *pipeGitHub) addCheck(sha string, app pipeCheckApp, c ghapp.CheckRun, annotations ...ghapp.Annotation) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.suiteLocked(sha, app, "")
	c.ID, c.HeadSHA, c.SuiteID = g.newIDLocked(), sha, s.id
	c.AppID, c.AppSlug, c.AppName = app.id, app.slug, app.name
	c.HTMLURL = fmt.Sprintf("https://github.example/%s/runs/%d", hRepo, c.ID)
	c.Status, c.Annotations = "in_progress", len(annotations)
	if c.Conclusion != "" {
		c.Status = "completed"
	}
	g.ci.checks = append(g.ci.checks, &pipeCheck{CheckRun: c, annotations: annotations})
	return c.ID
}

// addJob adds GitHub Actions job j, with its check run, to the workflow
// run of j.workflow ("CI" when unset) on j.sha, and returns its id.
func (g *pipeGitHub) addJob(j pipeJob) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if j.workflow == "" {
		j.workflow = "CI"
	}
	if j.attempt == 0 {
		j.attempt = 1
	}
	j.started = pipeJobsStart
	s := g.suiteLocked(j.sha, pipeActions, j.workflow)
	return g.addJobLocked(s, j)
}

// addJobLocked records job j of suite s and its check run. The caller
// holds g.mu.
func (g *pipeGitHub) addJobLocked(s *pipeSuite, j pipeJob) int64 {
	id := g.newIDLocked()
	c := ghapp.CheckRun{ID: id, Name: j.name, HeadSHA: j.sha, Status: "in_progress", Conclusion: j.conclusion, SuiteID: s.id,
		AppID: pipeActions.id, AppSlug: pipeActions.slug, AppName: pipeActions.name,
		HTMLURL:    fmt.Sprintf("https://github.example/%s/runs/%d", hRepo, id),
		DetailsURL: fmt.Sprintf("https://github.example/%s/actions/runs/%d/job/%d", hRepo, s.runID, id),
		Title:      j.title, Summary: j.summary, Annotations: len(j.annotations)}
	if j.conclusion != "" {
		c.Status = "completed"
	}
	g.ci.checks = append(g.ci.checks, &pipeCheck{CheckRun: c, annotations: j.annotations, job: &j})
	return id
}

// reran returns the workflow runs whose failed jobs were re-run, in order.
func (g *pipeGitHub) reran() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.ci.reruns)
}

// resolve returns the commit ref names: a branch of the world's
// repository, or a commit id.
func (g *pipeGitHub) resolve(ref string) string {
	if sha, ok := g.git.branch(ref); ok {
		return sha
	}
	return ref
}

// ownChecksLocked returns the App's own check runs on sha, as GitHub
// lists them among every App's. The caller holds g.mu.
func (g *pipeGitHub) ownChecksLocked(sha string) []ghapp.CheckRun {
	var out []ghapp.CheckRun
	for _, r := range g.checkRuns {
		if r.HeadSHA == sha {
			c := *r
			c.AppID, c.AppSlug, c.AppName = 1, "agentfix", "agentfix" // as Identity says
			out = append(out, c)
		}
	}
	return out
}

// ListCheckSuites returns the suites on ref: the other Apps' and, when it
// made a check run there, the App's own; each queued without runs, in
// progress while one runs, else completed.
func (g *pipeGitHub) ListCheckSuites(_ context.Context, _ ghapp.Repo, ref string) ([]ghapp.CheckSuite, error) {
	sha := g.resolve(ref)
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("ListCheckSuites"); failed != nil {
		return nil, failed
	}
	state := func(s *ghapp.CheckSuite, runs []ghapp.CheckRun) {
		s.Status, s.Runs = "queued", len(runs)
		if len(runs) == 0 {
			return
		}
		s.Status, s.Conclusion = "completed", "success"
		for _, r := range runs {
			switch {
			case r.Status != "completed":
				s.Status, s.Conclusion = "in_progress", ""
				return
			case failedConclusion(r.Conclusion):
				s.Conclusion = "failure"
			}
		}
	}
	var out []ghapp.CheckSuite
	for _, s := range g.ci.suites {
		if s.sha != sha {
			continue
		}
		var runs []ghapp.CheckRun
		for _, c := range g.ci.checks {
			if c.SuiteID == s.id && !c.superseded {
				runs = append(runs, c.CheckRun)
			}
		}
		cs := ghapp.CheckSuite{ID: s.id, HeadSHA: sha, AppID: s.app.id, AppSlug: s.app.slug, AppName: s.app.name}
		state(&cs, runs)
		out = append(out, cs)
	}
	if own := g.ownChecksLocked(sha); len(own) > 0 {
		cs := ghapp.CheckSuite{ID: 1, HeadSHA: sha, AppID: 1, AppSlug: "agentfix", AppName: "agentfix"}
		state(&cs, own)
		out = append(out, cs)
	}
	return out, nil
}

// ListCheckRuns returns the latest attempt of every check on ref, the
// App's own among them.
func (g *pipeGitHub) ListCheckRuns(_ context.Context, _ ghapp.Repo, ref string) ([]ghapp.CheckRun, error) {
	sha := g.resolve(ref)
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("ListCheckRuns"); failed != nil {
		return nil, failed
	}
	var out []ghapp.CheckRun
	for _, c := range g.ci.checks {
		if c.HeadSHA == sha && !c.superseded {
			out = append(out, c.CheckRun)
		}
	}
	return append(out, g.ownChecksLocked(sha)...), nil
}

// checkLocked returns check run id of another App. The caller holds g.mu.
func (g *pipeGitHub) checkLocked(id int64) (*pipeCheck, bool) {
	i := slices.IndexFunc(g.ci.checks, func(c *pipeCheck) bool { return c.ID == id })
	if i < 0 {
		return nil, false
	}
	return g.ci.checks[i], true
}

// ListAnnotations returns the first max annotations of check run id.
func (g *pipeGitHub) ListAnnotations(_ context.Context, _ ghapp.Repo, id int64, max int) ([]ghapp.Annotation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("ListAnnotations"); failed != nil {
		return nil, failed
	}
	c, ok := g.checkLocked(id)
	if !ok {
		return nil, apiError(http.MethodGet, fmt.Sprintf("/repos/%s/check-runs/%d/annotations", hRepo, id), http.StatusNotFound)
	}
	return slices.Clone(c.annotations[:min(max, len(c.annotations))]), nil
}

// jobLocked returns GitHub Actions job id, or GitHub's 404 for path. The
// caller holds g.mu.
func (g *pipeGitHub) jobLocked(id int64, path string) (*pipeCheck, error) {
	c, ok := g.checkLocked(id)
	if !ok || c.job == nil {
		return nil, apiError(http.MethodGet, path, http.StatusNotFound)
	}
	return c, nil
}

// WorkflowJob returns GitHub Actions job id with its steps.
func (g *pipeGitHub) WorkflowJob(_ context.Context, _ ghapp.Repo, id int64) (ghapp.WorkflowJob, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("WorkflowJob"); failed != nil {
		return ghapp.WorkflowJob{}, failed
	}
	c, err := g.jobLocked(id, fmt.Sprintf("/repos/%s/actions/jobs/%d", hRepo, id))
	if err != nil {
		return ghapp.WorkflowJob{}, err
	}
	s := g.ci.suites[slices.IndexFunc(g.ci.suites, func(s *pipeSuite) bool { return s.id == c.SuiteID })]
	out := ghapp.WorkflowJob{ID: id, RunID: s.runID, Name: c.Name, Status: c.Status, Conclusion: c.Conclusion,
		WorkflowName: c.job.workflow, RunAttempt: c.job.attempt}
	for i, st := range c.job.steps {
		from, to := c.job.stepTimes(i)
		conclusion := st.conclusion
		if conclusion == "" {
			conclusion = "success"
		}
		out.Steps = append(out.Steps, ghapp.JobStep{Number: i + 1, Name: st.name, Status: "completed", Conclusion: conclusion,
			StartedAt: from, CompletedAt: to})
	}
	return out, nil
}

// JobLog returns the end of job id's log, or, for a job with a log
// status, the error ghapp returns for GitHub's answer: wrapping
// ghapp.ErrNoLog when it means there is no log to have.
func (g *pipeGitHub) JobLog(_ context.Context, _ ghapp.Repo, id int64, maxBytes int64) (ghapp.JobLog, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("JobLog"); failed != nil {
		return ghapp.JobLog{}, failed
	}
	path := fmt.Sprintf("/repos/%s/actions/jobs/%d/logs", hRepo, id)
	c, err := g.jobLocked(id, path)
	if err != nil {
		return ghapp.JobLog{}, fmt.Errorf("log of job %d of %s: %w (%w)", id, hRepo, ghapp.ErrNoLog, err)
	}
	switch s := c.job.logStatus; s {
	case 0:
	case http.StatusNotFound, http.StatusGone, http.StatusForbidden:
		return ghapp.JobLog{}, fmt.Errorf("log of job %d of %s: %w (%w)", id, hRepo, ghapp.ErrNoLog, apiError(http.MethodGet, path, s))
	default:
		return ghapp.JobLog{}, fmt.Errorf("log of job %d of %s: %w", id, hRepo, apiError(http.MethodGet, path, s))
	}
	text := c.job.log()
	cut := max(int64(len(text))-maxBytes, 0)
	return ghapp.JobLog{Text: text[cut:], Cut: cut}, nil
}

// RerunFailedJobs gives every failed or cancelled job of workflow run id's
// latest attempt a new attempt, with a new check run in the same suite,
// ending with the job's rerunConclusion; GitHub refuses a run without
// such jobs.
func (g *pipeGitHub) RerunFailedJobs(_ context.Context, _ ghapp.Repo, id int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("RerunFailedJobs")
	if failed != nil {
		return failed
	}
	path := fmt.Sprintf("/repos/%s/actions/runs/%d/rerun-failed-jobs", hRepo, id)
	i := slices.IndexFunc(g.ci.suites, func(s *pipeSuite) bool { return s.runID == id && id != 0 })
	if i < 0 {
		return apiError(http.MethodPost, path, http.StatusNotFound)
	}
	s := g.ci.suites[i]
	var again []pipeJob
	for _, c := range g.ci.checks {
		if c.SuiteID == s.id && c.job != nil && !c.superseded && (failedConclusion(c.Conclusion) || c.Conclusion == "cancelled") {
			c.superseded = true
			next := *c.job
			next.conclusion, next.attempt = c.job.rerunConclusion, c.job.attempt+1
			again = append(again, next)
		}
	}
	if len(again) == 0 {
		return apiError(http.MethodPost, path, http.StatusForbidden)
	}
	for _, j := range again {
		g.addJobLocked(s, j)
	}
	g.ci.reruns = append(g.ci.reruns, id)
	return after
}

// PRCommits returns the commits of pull request number's head its base
// lacks, oldest first; GitHub links the bot's commit email to the bot.
func (g *pipeGitHub) PRCommits(ctx context.Context, _ ghapp.Repo, number int) ([]ghapp.Commit, error) {
	g.mu.Lock()
	failed, _ := g.fault("PRCommits")
	g.mu.Unlock()
	if failed != nil {
		return nil, failed
	}
	pr, ok := g.pr(number)
	if !ok {
		return nil, apiError(http.MethodGet, fmt.Sprintf("/repos/%s/pulls/%d/commits", hRepo, number), http.StatusNotFound)
	}
	out, err := gitIn(ctx, "--git-dir="+g.git.bare, "log", "--reverse", "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%cn%x1f%ce",
		"refs/heads/"+pr.Base+"..refs/heads/"+pr.Head, "--")
	if err != nil {
		return nil, err
	}
	linked := func(email string) string {
		if email == pipeBotEmail {
			return pipeBot
		}
		return ""
	}
	var commits []ghapp.Commit
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\x1f")
		if len(f) != 6 {
			continue
		}
		commits = append(commits, ghapp.Commit{SHA: f[0], Parents: len(strings.Fields(f[1])),
			AuthorName: f[2], AuthorEmail: f[3], CommitterName: f[4], CommitterEmail: f[5],
			AuthorLogin: linked(f[3]), CommitterLogin: linked(f[5])})
	}
	return commits, nil
}

// ListOpenPRs returns the open pull requests into base, newest first,
// with the commits of their branches (a list says nothing of whether they
// merge).
func (g *pipeGitHub) ListOpenPRs(_ context.Context, _ ghapp.Repo, base string) ([]ghapp.PullRequest, error) {
	g.mu.Lock()
	failed, _ := g.fault("ListOpenPRs")
	var out []ghapp.PullRequest
	for _, pr := range slices.Backward(g.prs) {
		if pr.State == "open" && pr.Base == base {
			out = append(out, *pr)
		}
	}
	g.mu.Unlock()
	if failed != nil {
		return nil, failed
	}
	for i := range out {
		out[i] = g.withHeads(out[i])
	}
	return out, nil
}

// openPRsFrom returns the open pull requests whose head is branch, as a
// check event's pull_requests lists them.
func (g *pipeGitHub) openPRsFrom(branch string) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for _, pr := range g.prs {
		if branch != "" && pr.State == "open" && pr.Head == branch {
			out = append(out, pr.Number)
		}
	}
	return out
}

// ---- the repository's side ----

// branchAt returns the branch whose head is sha, another than main when
// there is one, or "".
func (c *bareCache) branchAt(sha string) string {
	out, err := gitIn(context.Background(), "--git-dir="+c.bare, "for-each-ref", "--points-at", sha, "--format=%(refname:short)", "refs/heads/")
	if err != nil {
		return ""
	}
	found := ""
	for _, b := range strings.Fields(out) {
		if b != "main" {
			return b
		}
		found = b
	}
	return found
}

// mergeability is what GitHub says of whether head merges into base: not
// when git's merge of the two conflicts ("dirty"), else "clean".
func (c *bareCache) mergeability(ctx context.Context, base, head string) (*bool, string) {
	_, err := gitIn(ctx, "--git-dir="+c.bare, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return new(true), "clean"
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return new(false), "dirty"
	}
	return nil, "unknown"
}

// ---- the webhook edge's tasks ----

// checkSuiteDone is the webhook edge for the completion of the check
// suite of app on sha: a checks task for the open pull requests from the
// suite's head branch. It returns the delivery id; a completion the edge
// would enqueue nothing for fails the test.
func (p *pipeWorld) checkSuiteDone(sha string, app pipeCheckApp) string {
	p.t.Helper()
	p.gh.mu.Lock()
	i := slices.IndexFunc(p.gh.ci.suites, func(s *pipeSuite) bool { return s.sha == sha && s.app == app })
	var branch string
	if i >= 0 {
		branch = p.gh.ci.suites[i].branch
	}
	p.gh.mu.Unlock()
	if i < 0 {
		p.t.Fatalf("no check suite of %s on %s", app.slug, sha)
	}
	return p.checksDone("check suite", sha, p.gh.openPRsFrom(branch))
}

// checkRunDone is the webhook edge for the completion of check run id
// with a failure: a checks task for the open pull requests from its
// suite's head branch. It returns the delivery id; a check run that did
// not fail, for which the edge enqueues nothing, fails the test.
func (p *pipeWorld) checkRunDone(id int64) string {
	p.t.Helper()
	p.gh.mu.Lock()
	c, ok := p.gh.checkLocked(id)
	var sha, branch string
	var failed bool
	if ok {
		sha, failed = c.HeadSHA, c.Status == "completed" && failedConclusion(c.Conclusion)
		for _, s := range p.gh.ci.suites {
			if s.id == c.SuiteID {
				branch = s.branch
			}
		}
	}
	p.gh.mu.Unlock()
	if !ok || !failed {
		p.t.Fatalf("check run %d did not fail: the edge enqueues nothing for it", id)
	}
	return p.checksDone("check run", sha, p.gh.openPRsFrom(branch))
}

// checksDone puts the checks task of a completed check suite or check run
// (what) on sha, for prs, in Redis as the edge does.
func (p *pipeWorld) checksDone(what, sha string, prs []int) string {
	p.t.Helper()
	if len(prs) == 0 {
		p.t.Fatalf("the %s on %s is on no open pull request: the edge enqueues nothing for it", what, sha)
	}
	d := p.delivery()
	err := p.queue.SubmitChecks(p.t.Context(), jobs.ChecksDone{DeliveryID: d, Installation: hInstall, Repo: p.repo(), HeadSHA: sha, PRs: prs})
	if err != nil {
		p.t.Fatal(err)
	}
	return d
}

// basePushed is the webhook edge for a push to main, the default branch,
// as it is now: a basemoved task. It returns the delivery id.
func (p *pipeWorld) basePushed() string {
	p.t.Helper()
	after, ok := p.git.branch("main")
	if !ok {
		p.t.Fatal("no main")
	}
	d := p.delivery()
	if err := p.queue.SubmitBaseMoved(p.t.Context(), jobs.BaseMoved{DeliveryID: d, Installation: hInstall, Repo: p.repo(), Branch: "main", After: after}); err != nil {
		p.t.Fatal(err)
	}
	return d
}

// roundDone waits until pull request number's round task has completed.
func (p *pipeWorld) roundDone(number int) {
	p.t.Helper()
	p.waitFor("the round's task to complete", func() bool { return p.reviseState(number) == "completed" })
}

// golden compares text, normalized, with testdata/name.golden (-update
// rewrites it).
func (p *pipeWorld) golden(name, text string) {
	p.t.Helper()
	goldenFile(p.t, name, normalizeText(text))
}
