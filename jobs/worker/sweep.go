package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// DefaultSweepInterval is how often a worker looks for agent jobs that
// ended without a word to people (Options.SweepInterval).
const DefaultSweepInterval = 5 * time.Minute

// sweepLeader names the lead of the sweep among the workers of one Redis.
const sweepLeader = "sweep"

// sweepLoop sweeps at start and then every interval until ctx ends; one
// worker of those on one Redis sweeps at a time.
func (w *Worker) sweepLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// Each worker ends the lost jobs of its own journal; one at a
		// time ends the archived ones.
		if _, err := w.sweepLost(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("sweep the journal of open jobs", logattr.Err, err)
		}
		release, lead, err := w.store.Lead(ctx, sweepLeader, every)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("take the lead of the sweep", logattr.Err, err)
		}
		if lead {
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("sweep", logattr.Err, err)
			}
			release()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep ends, for people, every agent job asynq archived without its
// handler reporting the end: a worker killed on every attempt (asynq then
// archives the task when its lease expires), or any other path around the
// handler. Each gets its final comment, its status comment and check runs
// ended, its run record marked failed and its working copy removed, once.
// It returns how many it ended.
func (w *Worker) Sweep(ctx context.Context) (int, error) {
	ended := 0
	for page := 1; ; page++ {
		infos, err := w.inspector.ListArchivedTasks(jobs.QueueAgent, asynq.PageSize(100), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return ended, nil
		}
		if err != nil {
			return ended, fmt.Errorf("list archived agent tasks: %w", err)
		}
		for _, info := range infos {
			ok, err := w.sweepOne(ctx, info)
			if err != nil {
				w.log.Warn("end an archived job", logattr.Task, info.ID, logattr.Err, err)
			}
			if ok {
				ended++
			}
		}
		if len(infos) < 100 {
			return ended, nil
		}
	}
}

// sweepOne ends the job of archived task info unless it was reported.
func (w *Worker) sweepOne(ctx context.Context, info *asynq.TaskInfo) (bool, error) {
	auto := info.Type == jobs.TypeCI || info.Type == jobs.TypeConflict
	if info.Type != jobs.TypeFix && info.Type != jobs.TypeRevise && !auto {
		return false, nil
	}
	h := decodeHead(info.Payload)
	repo, err := ghapp.ParseRepo(h.Repo.FullName)
	if err != nil || h.DeliveryID == "" || h.Number <= 0 {
		return false, nil // a task that could never run: nothing was said about it
	}
	key := store.JobKey(info.ID, h.DeliveryID)
	saved, _, err := w.store.LoadResult(ctx, key)
	if err != nil || saved.Done != nil {
		return false, err
	}
	gh, err := w.opts.GitHub.Installation(h.Installation)
	if err != nil {
		return false, err
	}
	log := w.log.With(logattr.Task, info.ID, logattr.DeliveryID, h.DeliveryID, logattr.Repo, h.Repo.FullName)
	log.Error(fmt.Sprintf("%s job ended without a report after %d attempts (last error: %s); ending it for the requester",
		info.Type, info.Retried+1, info.LastErr))
	onPR := info.Type != jobs.TypeFix
	j := &job{kind: info.Type, taskID: info.ID, key: key, delivery: h.DeliveryID, install: h.Installation, repo: repo,
		clone: h.Repo, requester: h.Requester, number: h.Number, thread: h.Number, onPR: onPR,
		gh: gh, log: log, saved: saved}
	if onPR {
		j.number = 0 // the issue of the pull request is not known here
	}
	final := sweptFinal(info.Type, saved.Result.Patch != "")
	final.Patch = saved.Result.Patch
	if id, err := w.store.JobRun(ctx, key); err == nil && id != "" {
		w.endRun(ctx, log, id, outcome.Failed, "the worker stopped on every attempt")
	}
	if !auto {
		// The status comment the notice posted — or one posted now, when
		// the notice has not come yet, so it finds a final status, not
		// "queued". Automatic rounds have none.
		if err := w.statuses.open(ctx, j); err != nil {
			return false, err
		}
		j.show(ctx, func(d *report.Status) {
			d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.Failed, final.Detail
		})
	}
	w.checks.finish(ctx, j, outcome.Failed, "", agent.Result{})
	if err := w.postSwept(ctx, j, h, final); err != nil {
		return false, err
	}
	j.saved.Done = &store.Published{Outcome: outcome.Failed}
	if err := w.store.SaveResult(ctx, key, j.saved); err != nil {
		return false, err
	}
	w.journal.remove(key)
	w.metrics.job(info.Type, outcome.Failed)
	if onPR {
		// Commands people left while the round ran get their round.
		w.roundEnded(ctx, j, h.Author)
	}
	return true, nil
}

// sweptFinal is the final word of a job of kind the sweep ended, whose
// agent's change was saved (withPatch) or not.
func sweptFinal(kind string, withPatch bool) report.Final {
	what := "job"
	if kind != jobs.TypeFix {
		what = "round"
	}
	detail := fmt.Sprintf("the worker stopped on every attempt of this %s (it crashed or was killed) and gave up", what)
	if withPatch {
		detail += ", after the agent finished; its change is below"
	}
	switch kind {
	case jobs.TypeCI, jobs.TypeConflict:
		detail += "; comment the command with instructions for a round."
	default:
		detail += "; ask again to retry."
	}
	return report.Final{Outcome: outcome.Failed, Detail: detail}
}

// postSwept posts the final word of a job the sweep ended: on the issue,
// or the round's reply on its pull request.
func (w *Worker) postSwept(ctx context.Context, j *job, h taskHead, f report.Final) error {
	d := w.finalData(j, f)
	d.Marker = ghapp.Marker("final " + j.key)
	var body string
	var err error
	switch j.kind {
	case jobs.TypeCI, jobs.TypeConflict:
		body, err = w.texts.AutoRound(report.AutoRound{Final: d, Head: report.ShortSHA(h.Head), Round: h.Round,
			MaxRounds: w.maxAutoRounds(ctx, j), ConfigFile: config.RepoFile})
	case jobs.TypeRevise:
		body, err = w.texts.RoundFinal(report.RoundFinal{Final: d, Requesters: []string{j.requester.Login}})
	default:
		body, err = w.texts.Final(d)
	}
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, j.gh, j.repo, j.thread, d.Marker, body)
	return err
}

// maxAutoRounds is ci.max_rounds of the job's repository, or its default
// when the settings cannot be read.
func (w *Worker) maxAutoRounds(ctx context.Context, j *job) int {
	s, err := w.settings.load(ctx, j.install, j.repo)
	if err != nil || s.Repo.CI.MaxRounds == 0 {
		return config.DefaultCIMaxRounds
	}
	return s.Repo.CI.MaxRounds
}
