package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
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
	if info.Type != jobs.TypeFix && info.Type != jobs.TypeRevise {
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
	j := &job{kind: info.Type, taskID: info.ID, key: key, delivery: h.DeliveryID, install: h.Installation, repo: repo,
		clone: h.Repo, requester: h.Requester, number: h.Number, thread: h.Number, onPR: info.Type == jobs.TypeRevise,
		gh: gh, log: log, saved: saved}
	detail := "the worker stopped on every attempt of this job (it crashed or was killed) and gave up; ask again to retry."
	if id, err := w.store.JobRun(ctx, key); err == nil && id != "" {
		w.endRun(ctx, log, id, outcome.Failed, "the worker stopped on every attempt")
	}
	// The status comment the notice posted — or one posted now, when the
	// notice has not come yet, so it finds a final status, not "queued".
	if err := w.statuses.open(ctx, j); err != nil {
		return false, err
	}
	j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.Failed, detail })
	w.checks.finish(ctx, j, outcome.Failed, "", agent.Result{})
	if err := w.sweptFinal(ctx, j, detail); err != nil {
		return false, err
	}
	j.saved.Done = &store.Published{Outcome: outcome.Failed}
	if err := w.store.SaveResult(ctx, key, j.saved); err != nil {
		return false, err
	}
	w.journal.remove(key)
	w.metrics.job(info.Type, outcome.Failed)
	return true, nil
}

// sweptFinal posts the final word of a job the sweep ended: on the issue,
// or the round's reply on its pull request.
func (w *Worker) sweptFinal(ctx context.Context, j *job, detail string) error {
	d := w.finalData(j, report.Final{Outcome: outcome.Failed, Detail: detail})
	d.Marker = ghapp.Marker("final " + j.key)
	var body string
	var err error
	if j.onPR {
		body, err = w.texts.RoundFinal(report.RoundFinal{Final: d, Requesters: []string{j.requester.Login}})
	} else {
		body, err = w.texts.Final(d)
	}
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, j.gh, j.repo, j.thread, d.Marker, body)
	return err
}
