package ghapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/go-github/v66/github"
)

// The calls of the bot's automatic rounds: the checks on a pull request's
// head, the logs of GitHub Actions jobs, re-runs, the commits of a pull
// request and the pull requests into a branch. Reading checks needs the
// checks permission, logs and re-runs the actions permission (read and
// write).

// ActionsAppSlug is the slug of GitHub Actions, the App whose check runs
// are the jobs of workflow runs.
const ActionsAppSlug = "github-actions"

// ErrNoLog is wrapped (with the *APIError of GitHub's answer) by JobLog
// when a job's log cannot be had: GitHub keeps logs for a while only (404
// or 410 once expired or deleted), and an App without the actions
// permission may not read them (403).
var ErrNoLog = errors.New("job log unavailable")

// CheckSuite is a check suite on a commit: the check runs one App made for
// it (for GitHub Actions, the jobs of one workflow run).
type CheckSuite struct {
	ID               int64
	HeadSHA          string
	AppID            int64
	AppSlug, AppName string
	// Status is "queued", "in_progress" or "completed"; Conclusion is set
	// once completed.
	Status, Conclusion string
	// Runs counts its latest check runs. GitHub makes a suite for every
	// App with the checks permission on every push, and the suite of an
	// App that never makes a run stays queued for good.
	Runs int
}

// Annotation is a note a check run left on a line of a file.
type Annotation struct {
	Path               string
	StartLine, EndLine int
	// Level is "notice", "warning" or "failure".
	Level, Title, Message string
}

// WorkflowJob is a job of a GitHub Actions workflow run; its check run has
// the same id.
type WorkflowJob struct {
	ID, RunID    int64
	Name         string
	Status       string
	Conclusion   string
	WorkflowName string
	RunAttempt   int
	Steps        []JobStep
}

// JobStep is a step of a job.
type JobStep struct {
	Number                 int
	Name                   string
	Status, Conclusion     string
	StartedAt, CompletedAt time.Time
}

// JobLog is the plain-text log of a job, as GitHub serves it: every line
// starts with an RFC 3339 time stamp.
type JobLog struct {
	Text string
	// Cut is how many bytes at its start were left out to keep it within
	// the caller's limit.
	Cut int64
}

// Commit is a commit of a pull request.
type Commit struct {
	SHA                           string
	AuthorName, AuthorEmail       string
	CommitterName, CommitterEmail string
	// AuthorLogin and CommitterLogin are the GitHub accounts GitHub
	// linked the commit to, empty when none.
	AuthorLogin, CommitterLogin string
	Parents                     int
}

// ListCheckSuites returns the check suites of every App on ref (a commit
// or a branch) of repo.
func (c *Client) ListCheckSuites(ctx context.Context, repo Repo, ref string) ([]CheckSuite, error) {
	var out []CheckSuite
	for page := 1; page <= maxPages; {
		res, resp, err := c.gh.Checks.ListCheckSuitesForRef(ctx, repo.Owner, repo.Name, ref, &github.ListCheckSuiteOptions{
			ListOptions: github.ListOptions{PerPage: 100, Page: page},
		})
		if err != nil {
			return nil, fmt.Errorf("list check suites of %s@%s: %w", repo, ref, apiError(err))
		}
		for _, s := range res.CheckSuites {
			out = append(out, CheckSuite{
				ID: s.GetID(), HeadSHA: s.GetHeadSHA(), AppID: s.GetApp().GetID(), AppSlug: s.GetApp().GetSlug(),
				AppName: s.GetApp().GetName(), Status: s.GetStatus(), Conclusion: s.GetConclusion(),
				Runs: int(s.GetLatestCheckRunsCount()),
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		page = resp.NextPage
	}
	return nil, fmt.Errorf("list check suites of %s@%s: too many pages", repo, ref)
}

// ListCheckRuns returns the latest check run of every name of every App on
// ref (a commit or a branch) of repo: a check that was re-run shows its
// last attempt.
func (c *Client) ListCheckRuns(ctx context.Context, repo Repo, ref string) ([]CheckRun, error) {
	latest := "latest"
	var out []CheckRun
	for page := 1; page <= maxPages; {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, ref, &github.ListCheckRunsOptions{
			Filter: &latest, ListOptions: github.ListOptions{PerPage: 100, Page: page},
		})
		if err != nil {
			return nil, fmt.Errorf("list check runs of %s@%s: %w", repo, ref, apiError(err))
		}
		for _, r := range res.CheckRuns {
			out = append(out, toCheckRun(r))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		page = resp.NextPage
	}
	return nil, fmt.Errorf("list check runs of %s@%s: too many pages", repo, ref)
}

// ListAnnotations returns the first max annotations of check run id.
func (c *Client) ListAnnotations(ctx context.Context, repo Repo, id int64, max int) ([]Annotation, error) {
	var out []Annotation
	for page := 1; page <= maxPages && len(out) < max; {
		list, resp, err := c.gh.Checks.ListCheckRunAnnotations(ctx, repo.Owner, repo.Name, id, &github.ListOptions{PerPage: 50, Page: page})
		if err != nil {
			return nil, fmt.Errorf("list annotations of check run %d on %s: %w", id, repo, apiError(err))
		}
		for _, a := range list {
			if len(out) == max {
				break
			}
			out = append(out, Annotation{Path: a.GetPath(), StartLine: a.GetStartLine(), EndLine: a.GetEndLine(),
				Level: a.GetAnnotationLevel(), Title: a.GetTitle(), Message: a.GetMessage()})
		}
		if resp.NextPage == 0 {
			break
		}
		page = resp.NextPage
	}
	return out, nil
}

// WorkflowJob returns GitHub Actions job id of repo, with its steps.
func (c *Client) WorkflowJob(ctx context.Context, repo Repo, id int64) (WorkflowJob, error) {
	j, _, err := c.gh.Actions.GetWorkflowJobByID(ctx, repo.Owner, repo.Name, id)
	if err != nil {
		return WorkflowJob{}, fmt.Errorf("get job %d of %s: %w", id, repo, apiError(err))
	}
	out := WorkflowJob{ID: j.GetID(), RunID: j.GetRunID(), Name: j.GetName(), Status: j.GetStatus(),
		Conclusion: j.GetConclusion(), WorkflowName: j.GetWorkflowName(), RunAttempt: int(j.GetRunAttempt())}
	for _, s := range j.Steps {
		out.Steps = append(out.Steps, JobStep{Number: int(s.GetNumber()), Name: s.GetName(), Status: s.GetStatus(),
			Conclusion: s.GetConclusion(), StartedAt: s.GetStartedAt().Time, CompletedAt: s.GetCompletedAt().Time})
	}
	return out, nil
}

// JobLog downloads the log of GitHub Actions job id: GitHub answers the
// logs endpoint with a redirect to a short-lived signed address, which is
// fetched without the installation's credentials. At most maxBytes are
// kept, the end of the log. A log GitHub does not give (expired, deleted,
// not permitted) is an error wrapping ErrNoLog and the *APIError of the
// answer.
func (c *Client) JobLog(ctx context.Context, repo Repo, id int64, maxBytes int64) (JobLog, error) {
	where, resp, err := c.gh.Actions.GetWorkflowJobLogs(ctx, repo.Owner, repo.Name, id, 0)
	if err != nil {
		if resp != nil && resp.Response != nil {
			ae := &APIError{Method: http.MethodGet, Path: resp.Request.URL.Path, Status: resp.StatusCode}
			if noLog(resp.StatusCode) {
				return JobLog{}, fmt.Errorf("log of job %d of %s: %w (%w)", id, repo, ErrNoLog, ae)
			}
			return JobLog{}, fmt.Errorf("log of job %d of %s: %w", id, repo, ae)
		}
		return JobLog{}, fmt.Errorf("log of job %d of %s: %w", id, repo, apiError(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where.String(), nil)
	if err != nil {
		return JobLog{}, fmt.Errorf("log of job %d of %s: %w", id, repo, err)
	}
	// The signed address needs no credentials, and gets none.
	dl, err := (&http.Client{Transport: c.app.meter}).Do(req)
	if err != nil {
		return JobLog{}, fmt.Errorf("log of job %d of %s: download: %w", id, repo, err)
	}
	defer dl.Body.Close()
	if dl.StatusCode != http.StatusOK {
		ae := &APIError{Method: http.MethodGet, Path: "the job's log download", Status: dl.StatusCode}
		if noLog(dl.StatusCode) {
			return JobLog{}, fmt.Errorf("log of job %d of %s: %w (%w)", id, repo, ErrNoLog, ae)
		}
		return JobLog{}, fmt.Errorf("log of job %d of %s: %w", id, repo, ae)
	}
	tail := &tailBuffer{max: maxBytes}
	if _, err := io.Copy(tail, dl.Body); err != nil {
		return JobLog{}, fmt.Errorf("log of job %d of %s: download: %w", id, repo, err)
	}
	return JobLog{Text: string(tail.buf), Cut: tail.cut}, nil
}

// noLog reports whether GitHub's status says there is no log to have.
func noLog(status int) bool {
	return status == http.StatusNotFound || status == http.StatusGone || status == http.StatusForbidden
}

// tailBuffer keeps the last max bytes written to it and counts the bytes
// it dropped.
type tailBuffer struct {
	max int64
	buf []byte
	cut int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) >= t.max {
		t.cut += int64(len(t.buf)) + int64(len(p)) - t.max
		t.buf = append(t.buf[:0], p[int64(len(p))-t.max:]...)
		return n, nil
	}
	if over := int64(len(t.buf)+len(p)) - t.max; over > 0 {
		t.cut += over
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// RerunFailedJobs re-runs the failed jobs of GitHub Actions workflow run
// id (and the jobs they depend on); it needs the actions: write
// permission.
func (c *Client) RerunFailedJobs(ctx context.Context, repo Repo, id int64) error {
	if _, err := c.gh.Actions.RerunFailedJobsByID(ctx, repo.Owner, repo.Name, id); err != nil {
		return fmt.Errorf("re-run the failed jobs of workflow run %d of %s: %w", id, repo, apiError(err))
	}
	return nil
}

// PRCommits returns the commits of pull request number, oldest first (at
// most 250, as GitHub lists them).
func (c *Client) PRCommits(ctx context.Context, repo Repo, number int) ([]Commit, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.RepositoryCommit, *github.Response, error) {
		return c.gh.PullRequests.ListCommits(ctx, repo.Owner, repo.Name, number, &opts)
	})
	if err != nil {
		return nil, fmt.Errorf("list commits of %s#%d: %w", repo, number, err)
	}
	out := make([]Commit, 0, len(all))
	for _, rc := range all {
		cm := rc.GetCommit()
		out = append(out, Commit{
			SHA: rc.GetSHA(), AuthorName: cm.GetAuthor().GetName(), AuthorEmail: cm.GetAuthor().GetEmail(),
			CommitterName: cm.GetCommitter().GetName(), CommitterEmail: cm.GetCommitter().GetEmail(),
			AuthorLogin: rc.GetAuthor().GetLogin(), CommitterLogin: rc.GetCommitter().GetLogin(), Parents: len(rc.Parents),
		})
	}
	return out, nil
}

// ListOpenPRs returns the open pull requests of repo into branch base, by
// anyone, newest first.
func (c *Client) ListOpenPRs(ctx context.Context, repo Repo, base string) ([]PullRequest, error) {
	all, err := paginate(func(opts github.ListOptions) ([]*github.PullRequest, *github.Response, error) {
		return c.gh.PullRequests.List(ctx, repo.Owner, repo.Name, &github.PullRequestListOptions{
			State: "open", Base: base, ListOptions: opts,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list pull requests into %s of %s: %w", base, repo, err)
	}
	out := make([]PullRequest, 0, len(all))
	for _, p := range all {
		out = append(out, toPullRequest(p))
	}
	return out, nil
}
