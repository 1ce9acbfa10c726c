package ghfake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Checks, as GitHub keeps them: every check run belongs to the check suite
// of its App on its commit — for GitHub Actions, to the suite of its
// workflow run, one per workflow — and a suite is queued until it has a
// run, in progress while one runs, and completed with the most severe
// conclusion of its latest runs. GitHub Actions jobs (AddJob) have steps,
// a log served behind a redirect to a signed address, and can be re-run.

// CheckApp is an App that makes check runs.
type CheckApp struct {
	ID         int64
	Slug, Name string
}

// Actions is GitHub Actions, whose check runs are the jobs of workflow
// runs.
var Actions = CheckApp{ID: 15368, Slug: "github-actions", Name: "GitHub Actions"}

// OtherCI is a CI App of someone else, for check runs that are not
// GitHub Actions jobs.
var OtherCI = CheckApp{ID: 9090, Slug: "other-ci", Name: "Other CI"}

// CheckSuite is a check suite: the check runs of one App on one commit.
type CheckSuite struct {
	ID                  int64
	HeadSHA, HeadBranch string
	App                 CheckApp
	// Workflow and RunID name the workflow run of a GitHub Actions suite.
	Workflow string
	RunID    int64
}

// Annotation is a check run's note on a line of a file.
type Annotation struct {
	Path               string
	StartLine, EndLine int
	// Level is "notice", "warning" or "failure" (the default).
	Level, Title, Message string
}

// Job is a GitHub Actions job; its check run has the same id.
type Job struct {
	ID      int64
	RunID   int64
	HeadSHA string
	// Workflow names its workflow (one check suite per workflow run).
	Workflow, Name string
	// Conclusion is its result; "" leaves it in progress.
	Conclusion string
	// Steps make its log: each step's lines, time-stamped within the
	// step's time, after a "Run <name>" group header, with the failed
	// step's error line at its end.
	Steps []Step
	// Log, when set, is the whole log instead (time stamps included).
	Log string
	// LogStatus, when set, is GitHub's answer instead of the log: 404 or
	// 410 for a log that expired, 403 for an App that may not read it.
	LogStatus int
	// RerunConclusion is the conclusion of the next attempt when its
	// failed jobs are re-run ("" leaves that attempt in progress).
	RerunConclusion string
	// Title, Summary and Annotations are its check run's output.
	Title, Summary string
	Annotations    []Annotation
	Attempt        int
	started        time.Time
}

// Step is a step of a job.
type Step struct {
	Name       string
	Conclusion string // default "success"
	// Log is what the step printed, one line each.
	Log                    string
	StartedAt, CompletedAt time.Time
}

// blobPath is where the fake serves job logs, without authentication, as
// GitHub's signed storage addresses do.
const blobPath = "/blobs/logs/"

// failing are the conclusions of a failed check.
var failing = []string{"failure", "timed_out", "startup_failure"}

// suiteOf returns the suite of app on sha (for Actions, of workflow),
// made when missing. Callers hold f.mu.
func (f *Fake) suiteOf(rp *repo, sha string, app CheckApp, workflow string) *CheckSuite {
	for _, s := range rp.checkSuites {
		if s.HeadSHA == sha && s.App.ID == app.ID && s.Workflow == workflow {
			return s
		}
	}
	s := &CheckSuite{ID: f.newID(), HeadSHA: sha, HeadBranch: f.branchAt(rp, sha), App: app, Workflow: workflow}
	if app.ID == Actions.ID {
		s.RunID = f.newID()
	}
	rp.checkSuites = append(rp.checkSuites, s)
	return s
}

// branchAt returns a branch whose head is sha, another than the default
// one when there is such, or "".
func (f *Fake) branchAt(rp *repo, sha string) string {
	out, err := f.git(context.Background(), rp.dir, nil, nil, "for-each-ref", "--points-at", sha, "--format=%(refname:short)", "refs/heads/")
	if err != nil {
		return ""
	}
	var found string
	for _, b := range strings.Fields(string(out)) {
		if b != rp.defaultBranch {
			return b
		}
		found = b
	}
	return found
}

// AddCheckSuite makes the check suite of app on commit sha without any run,
// as GitHub does on every push for every App with the checks permission;
// it stays queued. It returns the suite's id.
func (f *Fake) AddCheckSuite(repo, sha string, app CheckApp) int64 {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	f.mustCommit(rp, sha)
	return f.suiteOf(rp, sha, app, "").ID
}

// mustCommit fails the test unless sha is a commit of rp. Callers hold
// f.mu.
func (f *Fake) mustCommit(rp *repo, sha string) {
	f.t.Helper()
	if got, ok := f.resolve(rp, sha); !ok || got != sha {
		f.fatalf("no commit %s in %s", sha, rp.fullName())
	}
}

// AddCheckRun adds a check run of another App (c.AppID, c.AppSlug and
// c.AppName; OtherCI when unset) on commit c.HeadSHA: completed with
// c.Conclusion, or in c.Status. It returns its id.
func (f *Fake) AddCheckRun(repo string, c CheckRun) int64 {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	f.mustCommit(rp, c.HeadSHA)
	if c.AppID == 0 {
		c.AppID, c.AppSlug, c.AppName = OtherCI.ID, OtherCI.Slug, OtherCI.Name
	}
	c.ID = f.newID()
	c.SuiteID = f.suiteOf(rp, c.HeadSHA, CheckApp{ID: c.AppID, Slug: c.AppSlug, Name: c.AppName}, "").ID
	if c.Conclusion != "" {
		c.Status = "completed"
	} else if c.Status == "" {
		c.Status = "in_progress"
	}
	c.StartedAt, c.CompletedAt = time.Now(), time.Now()
	c.Annotations = slices.Clone(c.Annotations)
	rp.checkRuns = append(rp.checkRuns, &c)
	return c.ID
}

// CompleteCheckRun completes check run id of repo with conclusion.
func (f *Fake) CompleteCheckRun(repo string, id int64, conclusion string) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.repoOf(repo).checkRuns {
		if c.ID == id {
			c.Status, c.Conclusion, c.CompletedAt = "completed", conclusion, time.Now()
			return
		}
	}
	f.fatalf("no check run %d in %s", id, repo)
}

// AddJob adds GitHub Actions job j on commit j.HeadSHA, in the workflow run
// of j.Workflow on that commit (made with its check suite when missing),
// with its check run, and returns the job's id.
func (f *Fake) AddJob(repo string, j Job) int64 {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rp := f.repoOf(repo)
	f.mustCommit(rp, j.HeadSHA)
	if j.Workflow == "" {
		j.Workflow = "CI"
	}
	s := f.suiteOf(rp, j.HeadSHA, Actions, j.Workflow)
	return f.addJob(rp, s, j).ID
}

// addJob records job j of suite s and its check run. Callers hold f.mu.
func (f *Fake) addJob(rp *repo, s *CheckSuite, j Job) *Job {
	j.ID, j.RunID, j.started = f.newID(), s.RunID, time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	if j.Attempt == 0 {
		j.Attempt = 1
	}
	j.Steps = slices.Clone(j.Steps)
	at := j.started
	for i := range j.Steps {
		st := &j.Steps[i]
		if st.Conclusion == "" {
			st.Conclusion = "success"
		}
		st.StartedAt, st.CompletedAt = at, at.Add(10*time.Second)
		at = at.Add(11 * time.Second)
	}
	c := &CheckRun{ID: j.ID, Name: j.Name, HeadSHA: j.HeadSHA, Status: "in_progress", Conclusion: j.Conclusion,
		AppID: Actions.ID, AppSlug: Actions.Slug, AppName: Actions.Name, SuiteID: s.ID,
		DetailsURL: fmt.Sprintf("%s/%s/actions/runs/%d/job/%d", f.srv.URL, rp.fullName(), s.RunID, j.ID),
		Title:      j.Title, Summary: j.Summary, Annotations: slices.Clone(j.Annotations), StartedAt: j.started}
	if j.Conclusion != "" {
		c.Status, c.CompletedAt = "completed", at
	}
	rp.checkRuns = append(rp.checkRuns, c)
	rp.jobs = append(rp.jobs, &j)
	return &j
}

// log is the job's log as GitHub serves it.
func (j *Job) log() string {
	if j.Log != "" {
		return j.Log
	}
	var b strings.Builder
	stamp := func(t time.Time, line string) {
		fmt.Fprintf(&b, "%s %s\n", t.Format("2006-01-02T15:04:05.0000000Z"), line)
	}
	for _, st := range j.Steps {
		t := st.StartedAt.Add(100 * time.Millisecond)
		stamp(t, "##[group]Run "+st.Name)
		stamp(t, "##[endgroup]")
		for i, line := range strings.Split(strings.TrimRight(st.Log, "\n"), "\n") {
			if line != "" || i > 0 {
				stamp(t.Add(time.Duration(i+1)*time.Millisecond), line)
			}
		}
		if slices.Contains(failing, st.Conclusion) {
			stamp(st.CompletedAt.Add(-time.Second), "##[error]Process completed with exit code 1.")
		}
	}
	stamp(j.started.Add(time.Duration(len(j.Steps))*11*time.Second), "Cleaning up orphan processes")
	return b.String()
}

// CheckSuites returns repo's check suites, oldest first.
func (f *Fake) CheckSuites(repo string) []CheckSuite {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []CheckSuite
	for _, s := range f.repoOf(repo).checkSuites {
		out = append(out, *s)
	}
	return out
}

// Jobs returns repo's GitHub Actions jobs (every attempt), oldest first.
func (f *Fake) Jobs(repo string) []Job {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Job
	for _, j := range f.repoOf(repo).jobs {
		out = append(out, *j)
	}
	return out
}

// Reruns returns the workflow runs whose failed jobs were re-run, in
// order.
func (f *Fake) Reruns(repo string) []int64 {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.repoOf(repo).reruns)
}

// LogDownloadsWithCredentials counts the job log downloads that carried an
// Authorization header: a signed address needs none, and the bot's tokens
// must not reach another host.
func (f *Fake) LogDownloadsWithCredentials() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blobCreds
}

// SetMergeableUnknown makes the next n reads of pull request number answer
// that its mergeability is not computed yet, as GitHub does for a while
// after its head or base moved.
func (f *Fake) SetMergeableUnknown(repo string, number, n int) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repoOf(repo).mergeUnknown[number] = n
}

// severity orders conclusions: a suite reports its runs' most severe.
var severity = []string{"action_required", "startup_failure", "cancelled", "timed_out", "failure", "stale", "neutral", "success", "skipped"}

// suiteState returns the status and conclusion of suite s and how many
// latest runs it has. Callers hold f.mu.
func suiteState(rp *repo, s *CheckSuite) (status, conclusion string, runs int) {
	status = "completed"
	best := len(severity)
	for _, c := range rp.checkRuns {
		if c.SuiteID != s.ID || c.Superseded {
			continue
		}
		runs++
		if c.Status != "completed" {
			status = "in_progress"
			continue
		}
		if i := slices.Index(severity, c.Conclusion); i >= 0 && i < best {
			best = i
		}
	}
	switch {
	case runs == 0:
		return "queued", "", 0
	case status != "completed":
		return status, "", runs
	case best < len(severity):
		conclusion = severity[best]
	}
	return status, conclusion, runs
}

func (f *Fake) routeChecks(mux *http.ServeMux) {
	const r = "/repos/{owner}/{repo}"
	mux.HandleFunc("GET "+r+"/commits/{ref}/check-suites", f.repoAuth(f.listCheckSuites))
	mux.HandleFunc("GET "+r+"/check-runs/{id}/annotations", f.repoAuth(f.listAnnotations))
	mux.HandleFunc("GET "+r+"/actions/jobs/{id}", f.repoAuth(f.getJob))
	mux.HandleFunc("GET "+r+"/actions/jobs/{id}/logs", f.repoAuth(f.jobLogs))
	mux.HandleFunc("POST "+r+"/actions/runs/{id}/rerun-failed-jobs", f.repoAuth(f.rerunFailedJobs))
	mux.HandleFunc("GET "+r+"/pulls/{number}/commits", f.repoAuth(f.listPRCommits))
}

func (f *Fake) suiteJSON(rp *repo, s *CheckSuite) map[string]any {
	status, conclusion, runs := suiteState(rp, s)
	out := map[string]any{
		"id": s.ID, "head_sha": s.HeadSHA, "head_branch": s.HeadBranch, "status": status,
		"app":                     map[string]any{"id": s.App.ID, "slug": s.App.Slug, "name": s.App.Name},
		"latest_check_runs_count": runs,
		"url":                     fmt.Sprintf("%srepos/%s/check-suites/%d", f.APIURL(), rp.fullName(), s.ID),
	}
	if conclusion != "" {
		out["conclusion"] = conclusion
	}
	return out
}

// listCheckSuites serves GET …/commits/{ref}/check-suites.
func (f *Fake) listCheckSuites(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	sha, ok := f.resolve(rp, r.PathValue("ref"))
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var all []*CheckSuite
	for _, s := range rp.checkSuites {
		if s.HeadSHA == sha {
			all = append(all, s)
		}
	}
	suites := pageJSON(w, r, all, func(s *CheckSuite) any { return f.suiteJSON(rp, s) })
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "check_suites": suites})
}

// listAnnotations serves GET …/check-runs/{id}/annotations.
func (f *Fake) listAnnotations(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	i := slices.IndexFunc(rp.checkRuns, func(c *CheckRun) bool { return c.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, rp.checkRuns[i].Annotations, func(a Annotation) any {
		level := a.Level
		if level == "" {
			level = "failure"
		}
		end := a.EndLine
		if end == 0 {
			end = a.StartLine
		}
		return map[string]any{"path": a.Path, "start_line": a.StartLine, "end_line": end,
			"annotation_level": level, "title": a.Title, "message": a.Message}
	}))
}

// jobOf finds the job of the {id} path value, or answers 404.
func jobOf(w http.ResponseWriter, r *http.Request, rp *repo) *Job {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, j := range rp.jobs {
		if j.ID == id {
			return j
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil
}

// getJob serves GET …/actions/jobs/{id}.
func (f *Fake) getJob(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	j := jobOf(w, r, rp)
	if j == nil {
		return
	}
	steps := []any{}
	for i, st := range j.Steps {
		steps = append(steps, map[string]any{"name": st.Name, "status": "completed", "conclusion": st.Conclusion,
			"number": i + 1, "started_at": ts(st.StartedAt), "completed_at": ts(st.CompletedAt)})
	}
	status := "completed"
	if j.Conclusion == "" {
		status = "in_progress"
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": j.ID, "run_id": j.RunID, "head_sha": j.HeadSHA, "name": j.Name,
		"workflow_name": j.Workflow, "status": status, "conclusion": nullable(j.Conclusion), "run_attempt": j.Attempt,
		"started_at": ts(j.started), "steps": steps})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jobLogs serves GET …/actions/jobs/{id}/logs: a redirect to a fresh
// signed address, or the job's LogStatus.
func (f *Fake) jobLogs(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	j := jobOf(w, r, rp)
	if j == nil {
		return
	}
	if j.LogStatus != 0 {
		writeError(w, j.LogStatus, http.StatusText(j.LogStatus))
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	f.logBlobs[tok] = j.log()
	w.Header().Set("Location", f.srv.URL+blobPath+tok)
	w.WriteHeader(http.StatusFound)
}

// serveLogBlob serves a job log at its signed address; one that came with
// credentials is counted (LogDownloadsWithCredentials) and refused.
func (f *Fake) serveLogBlob(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "" {
		f.blobCreds++
		http.Error(w, "Authentication information is not given in the correct format.", http.StatusBadRequest)
		return
	}
	text, ok := f.logBlobs[r.PathValue("token")]
	if !ok {
		http.Error(w, "The specified blob does not exist.", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(text))
}

// rerunFailedJobs serves POST …/actions/runs/{id}/rerun-failed-jobs: each
// failed job of the run's latest attempt gets a new attempt, with a new
// check run in the same suite, ending with the job's RerunConclusion.
func (f *Fake) rerunFailedJobs(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	si := slices.IndexFunc(rp.checkSuites, func(s *CheckSuite) bool { return s.RunID == id && id != 0 })
	if si < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s := rp.checkSuites[si]
	var again []Job
	for _, c := range rp.checkRuns {
		if c.SuiteID != s.ID || c.Superseded || !slices.Contains(append(slices.Clone(failing), "cancelled"), c.Conclusion) {
			continue
		}
		for _, j := range rp.jobs {
			if j.ID == c.ID {
				c.Superseded = true
				next := *j
				next.Conclusion, next.Attempt = j.RerunConclusion, j.Attempt+1
				again = append(again, next)
			}
		}
	}
	if len(again) == 0 {
		writeError(w, http.StatusForbidden, "This workflow run has no failed jobs to re-run.")
		return
	}
	for _, j := range again {
		f.addJob(rp, s, j)
	}
	rp.reruns = append(rp.reruns, id)
	writeJSON(w, http.StatusCreated, map[string]any{})
}

// listPRCommits serves GET …/pulls/{number}/commits: the commits of the
// head the base lacks, oldest first.
func (f *Fake) listPRCommits(w http.ResponseWriter, r *http.Request, rp *repo, _ *token) {
	pr := prOf(w, r, rp)
	if pr == nil {
		return
	}
	head, okHead := f.branchSHA(rp, pr.Head)
	base, okBase := f.branchSHA(rp, pr.Base)
	if !okHead || !okBase {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	out, err := f.git(context.Background(), rp.dir, nil, nil, "log", "--reverse", "--format=%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x1e", base+".."+head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	var all []map[string]any
	for _, rec := range strings.Split(strings.TrimSpace(string(out)), "\x1e") {
		p := strings.Split(strings.TrimSpace(rec), "\x00")
		if len(p) != 6 {
			continue
		}
		parents := []any{}
		for _, sha := range strings.Fields(p[1]) {
			parents = append(parents, map[string]any{"sha": sha})
		}
		all = append(all, map[string]any{
			"sha": p[0], "parents": parents,
			"commit": map[string]any{
				"author":    map[string]any{"name": p[2], "email": p[3]},
				"committer": map[string]any{"name": p[4], "email": p[5]},
			},
			"author": f.linkedUser(p[3]), "committer": f.linkedUser(p[5]),
		})
	}
	writeJSON(w, http.StatusOK, pageJSON(w, r, all, func(m map[string]any) any { return m }))
}

// linkedUser is the account GitHub links a commit email to: the login of
// a noreply address ("<id>+<login>@users.noreply.github.com" or
// "<login>@…"), or none.
func (f *Fake) linkedUser(email string) any {
	local, ok := strings.CutSuffix(strings.ToLower(email), "@users.noreply.github.com")
	if !ok {
		return nil
	}
	if _, login, ok := strings.Cut(local, "+"); ok {
		local = login
	}
	return f.userJSON(local)
}

// mergeability answers what GitHub says of whether pr merges into its
// base: "unknown" while SetMergeableUnknown holds, else "dirty" when git
// finds conflicts and "clean" when not. Callers hold f.mu.
func (f *Fake) mergeability(rp *repo, pr *PR) (mergeable any, state string) {
	if n := rp.mergeUnknown[pr.Number]; n > 0 {
		rp.mergeUnknown[pr.Number] = n - 1
		return nil, "unknown"
	}
	head, okHead := f.branchSHA(rp, pr.Head)
	base, okBase := f.branchSHA(rp, pr.Base)
	if !okHead || !okBase || pr.State != "open" {
		return nil, "unknown"
	}
	if _, err := f.git(context.Background(), rp.dir, nil, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head); err != nil {
		return false, "dirty"
	}
	return true, "clean"
}

// CommitAs is Commit with the author and committer name and email given,
// as a push by that identity (the App's bot, a person) looks.
func (f *Fake) CommitAs(full, branch string, files map[string]string, message, name, email string) string {
	f.t.Helper()
	f.mu.Lock()
	rp := f.repoOf(full)
	f.mu.Unlock()
	sha, err := f.commitFilesAs(context.Background(), rp, branch, files, message,
		[]string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email})
	if err != nil {
		f.fatalf("commit to %s %s: %v", full, branch, err)
	}
	return sha
}
