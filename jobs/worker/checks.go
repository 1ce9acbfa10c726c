package worker

import (
	"context"
	"fmt"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// CheckRunName is the name of the bot's check run.
const CheckRunName = "agentfix"

// checks keeps a job's check runs: one per job and commit, in progress
// while the job works on it, found again (store) by a retry of the job,
// and completed on every final state. A fix puts one on the commit it
// pushed; a round also puts one on the head it started from, which the
// round's commit supersedes. The App may lack the checks permission:
// failures are logged, never the job's.
type checks struct {
	journal *journal
	texts   *report.Texts
	store   *store.Store
}

// start puts the job's check run on sha in progress (title), or finds the
// one an earlier attempt of the job put there.
func (c *checks) start(ctx context.Context, j *job, sha, title string, res agent.Result) {
	runs, err := c.store.CheckRuns(ctx, j.key)
	if err != nil {
		j.log.Warn("read the job's check runs", logattr.Err, err)
	}
	for _, r := range runs {
		if r.SHA == sha {
			return
		}
	}
	summary, err := c.texts.CheckSummary(c.data(j, res, true))
	var cr ghapp.CheckRun
	if err == nil {
		cr, err = j.gh.CreateCheckRun(ctx, j.repo, ghapp.NewCheckRun{Name: CheckRunName, HeadSHA: sha, ExternalID: j.key,
			Status: "in_progress", Title: title, Summary: summary})
	}
	if err == nil {
		err = c.store.SetCheckRun(ctx, j.key, store.CheckRun{SHA: sha, ID: cr.ID})
	}
	if err == nil {
		err = c.journal.add(openJob{Key: j.key, TaskID: j.taskID, DeliveryID: j.delivery, Installation: j.install,
			Repo: j.repo.String(), Thread: j.thread, Requester: j.requester.Login}, func(e *openJob) {
			e.Checks = append(e.Checks, checkEntry{SHA: sha, ID: cr.ID})
		})
	}
	if err != nil {
		j.log.Warn("create check run", logattr.Err, err)
	}
}

// finish completes every check run of the job still in progress, as a job
// that ended with o (pushed is the commit it pushed, if any) says.
func (c *checks) finish(ctx context.Context, j *job, o outcome.Outcome, pushed string, res agent.Result) {
	runs, err := c.store.CheckRuns(ctx, j.key)
	if err != nil {
		j.log.Warn("read the job's check runs", logattr.Err, err)
		return
	}
	for _, r := range runs {
		if r.Done {
			continue
		}
		conclusion, title := report.CheckConclusion(o, res.Status == agent.Autosubmitted, pushed, r.SHA == pushed)
		summary, err := c.texts.CheckSummary(c.data(j, res, false))
		if err == nil {
			_, err = j.gh.UpdateCheckRun(ctx, j.repo, r.ID, ghapp.CheckRunUpdate{Name: CheckRunName, Status: "completed",
				Conclusion: conclusion, Title: title, Summary: summary})
		}
		if err == nil {
			r.Done = true
			err = c.store.SetCheckRun(ctx, j.key, r)
		}
		if err != nil {
			j.log.Warn("complete check run", logattr.Err, err)
		}
	}
}

// data is the check run summary's data.
func (c *checks) data(j *job, res agent.Result, running bool) report.Check {
	d := report.Check{Running: running, Issue: j.number, Requester: j.requester.Login, Doing: doing(j.kind, j.thread, j.number), Model: j.cfg.Model,
		Steps: res.Steps, CostUSD: res.CostUSD, Duration: res.Duration, RunID: j.runID()}
	if !running {
		d.ExitStatus, d.Detail, d.Verification = string(res.Status), report.IncompleteDetail(res), report.Verification(res)
		d.Evidence = evidence(j.saved.Review, j.cfg.Repo, taskText(j))
		d.Environment = j.saved.Environment.Description
	}
	return d
}

// doing says what the agent of an automatic round (kind jobs.TypeCI or
// jobs.TypeConflict) on pull request pr, of issue (0 when unknown), is
// doing, for its running check run; "" for the rounds people ask for,
// which name the issue and the requester.
func doing(kind string, pr, issue int) string {
	var what string
	switch kind {
	case jobs.TypeCI:
		what = fmt.Sprintf("fixing the failing checks of #%d on its own", pr)
	case jobs.TypeConflict:
		what = fmt.Sprintf("resolving the merge conflicts of #%d with its base branch on its own", pr)
	default:
		return ""
	}
	if issue > 0 {
		what += fmt.Sprintf(", for issue #%d", issue)
	}
	return what
}
