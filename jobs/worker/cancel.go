package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// taskHead is what the worker reads of any agent task's payload.
type taskHead struct {
	DeliveryID   string    `json:"delivery_id"`
	Installation int64     `json:"installation"`
	Repo         jobs.Repo `json:"repo"`
	Number       int       `json:"number"`
	Requester    jobs.User `json:"requester"`
	// Author is the pull request's author (a revise or automatic round).
	Author jobs.User `json:"author"`
	// Head and Round are an automatic round's (jobs.FixChecks,
	// jobs.ResolveConflict).
	Head  string `json:"head"`
	Round int    `json:"round"`
}

func decodeHead(b []byte) taskHead {
	var h taskHead
	_ = json.Unmarshal(b, &h) // a payload that does not decode matches nothing
	return h
}

// payloadDelivery returns the delivery id a task payload was written for.
func payloadDelivery(b []byte) string { return decodeHead(b).DeliveryID }

// handleCancel stops agent jobs GitHub asked to end (DESIGN.md §4): the
// fix job of a closed issue and the round on its open bot PR, or every job
// of an installation (or of some of
// its repositories) that was deleted, suspended or lost access; the
// installation's cached clients are dropped.
func (w *Worker) handleCancel(ctx context.Context, t *asynq.Task) error {
	c, err := jobs.Decode[jobs.Cancel](t.Payload())
	if err != nil {
		w.metrics.job(jobs.TypeCancel, outcome.Invalid)
		return skip(err)
	}
	log := w.log.With(logattr.DeliveryID, c.DeliveryID, logattr.InstallationID, c.Installation, logattr.Reason, c.Reason)
	switch c.Reason {
	case jobs.CancelInstallationDeleted, jobs.CancelInstallationSuspended:
		w.opts.GitHub.Forget(c.Installation)
	}
	var ids []string
	if c.Number != 0 {
		if len(c.Repos) != 1 {
			w.metrics.job(jobs.TypeCancel, outcome.Invalid)
			return skip(fmt.Errorf("cancel of issue %d needs one repository, got %d", c.Number, len(c.Repos)))
		}
		ids = []string{jobs.FixTaskID(c.Repos[0].FullName, c.Number)}
		if id, err := w.issueRound(ctx, c.Installation, c.Repos[0].FullName, c.Number); err != nil {
			log.Warn("look for a round on the issue's pull request", logattr.Err, err)
		} else if id != "" {
			ids = append(ids, id)
		}
	} else if ids, err = w.agentTasksOf(c.Installation, c.Repos); err != nil {
		w.metrics.job(jobs.TypeCancel, outcome.Error)
		return err
	}
	stopped := 0
	for _, id := range ids {
		ok, err := w.stopTask(ctx, id, store.CancelMarker{Reason: string(c.Reason)})
		if err != nil {
			w.metrics.job(jobs.TypeCancel, outcome.Error)
			return err
		}
		if ok {
			stopped++
		}
	}
	log.Info(fmt.Sprintf("cancel handled: %d of %d jobs stopped", stopped, len(ids)))
	w.metrics.job(jobs.TypeCancel, outcome.Stopped)
	return nil
}

// agentTasksOf lists the agent tasks, waiting or running, of installation
// (and, when repos is not empty, of those repositories).
func (w *Worker) agentTasksOf(installation int64, repos []jobs.Repo) ([]string, error) {
	want := map[string]bool{}
	for _, r := range repos {
		want[strings.ToLower(r.FullName)] = true
	}
	listers := []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		w.inspector.ListActiveTasks, w.inspector.ListPendingTasks, w.inspector.ListScheduledTasks, w.inspector.ListRetryTasks,
	}
	var ids []string
	for _, list := range listers {
		for page := 1; ; page++ {
			infos, err := list(jobs.QueueAgent, asynq.PageSize(100), asynq.Page(page))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list agent tasks: %w", err)
			}
			for _, info := range infos {
				h := decodeHead(info.Payload)
				if h.Installation == installation && (len(want) == 0 || want[strings.ToLower(h.Repo.FullName)]) {
					ids = append(ids, info.ID)
				}
			}
			if len(infos) < 100 {
				break
			}
		}
	}
	return ids, nil
}

// stopTask stops agent task id: a running one gets its cancel marker and
// asynq's cancellation (its handler reports), a waiting one is deleted and
// its status comment says so. It reports whether there was a job to stop.
func (w *Worker) stopTask(ctx context.Context, id string, m store.CancelMarker) (bool, error) {
	info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stop %s: %w", id, err)
	}
	switch info.State {
	case asynq.TaskStateActive, asynq.TaskStatePending, asynq.TaskStateScheduled, asynq.TaskStateRetry:
	default:
		return false, nil
	}
	h := decodeHead(info.Payload)
	m.DeliveryID = h.DeliveryID
	// The marker first: a job that starts or runs now sees it.
	if err := w.store.SetCancel(ctx, id, m); err != nil {
		return false, err
	}
	if info.State == asynq.TaskStateActive {
		if err := w.inspector.CancelProcessing(id); err != nil {
			return false, fmt.Errorf("stop %s: %w", id, err)
		}
		return true, nil
	}
	if err := w.inspector.DeleteTask(jobs.QueueAgent, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		// It started meanwhile: cancel it like a running one.
		if cerr := w.inspector.CancelProcessing(id); cerr != nil {
			return false, fmt.Errorf("stop %s: %w; then: %w", id, err, cerr)
		}
		return true, nil
	}
	w.markStoppedBeforeStart(ctx, h, id, m)
	if info.Type == jobs.TypeRevise || info.Type == jobs.TypeCI || info.Type == jobs.TypeConflict {
		w.roundGone(ctx, info.Payload, true)
	}
	return true, nil
}

// markStoppedBeforeStart edits the status comment of a job deleted before
// it ran; a failure is logged (the installation may be gone).
func (w *Worker) markStoppedBeforeStart(ctx context.Context, h taskHead, id string, m store.CancelMarker) {
	key := store.JobKey(id, h.DeliveryID)
	ref, ok, err := w.store.KnownStatusComment(ctx, key)
	if err != nil || !ok {
		return
	}
	repo, err := ghapp.ParseRepo(h.Repo.FullName)
	if err != nil {
		return
	}
	gh, err := w.opts.GitHub.Installation(h.Installation)
	if err == nil {
		s := w.statuses.editor(gh, repo, ref, key, h.Requester.Login, w.log)
		detail := report.CancelDetail(m.Reason)
		if detail == "" {
			detail = "before it started."
		}
		err = s.Show(ctx, func(d *report.Status) {
			d.Phase, d.StoppedBy, d.Detail, d.Outcome = report.PhaseCancelled, m.By, detail, outcome.Cancelled
		}, true)
	}
	if err != nil {
		w.log.Warn("mark a waiting job stopped", logattr.Task, id, logattr.Err, err)
	}
}

// stop handles a stop command: the requester of the job, or anyone with
// write access, may stop the issue's fix job or the PR's revise job (and,
// on the bot's PR of an issue, that issue's fix job; on an issue, the round
// running on its open bot PR).
func (nt *notice) stop(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	w := nt.w
	ids := []string{jobs.FixTaskID(n.Repo.FullName, n.Number)}
	autoStopped := false // the bot's automatic rounds on the pull request
	if !n.IsPR {
		// The issue's work may have moved to a round on its open bot PR.
		if id, err := w.issueRound(ctx, n.Installation, n.Repo.FullName, n.Number); err != nil {
			return outcome.Error, err
		} else if id != "" {
			ids = append(ids, id)
		}
	} else {
		ids = []string{jobs.ReviseTaskID(n.Repo.FullName, n.Number)}
		pr, err := nt.gh.PR(ctx, nt.repo, n.Number)
		if err != nil {
			return outcome.Error, err
		}
		if k := issueOf(pr); k > 0 {
			ids = append(ids, jobs.FixTaskID(n.Repo.FullName, k))
		}
		if autoStopped, err = nt.stopAutoRounds(ctx, pr); err != nil {
			return outcome.Error, err
		}
	}
	for _, id := range ids {
		info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, id)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return outcome.Error, err
		}
		if info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived {
			continue
		}
		if !strings.EqualFold(decodeHead(info.Payload).Requester.Login, n.Requester.Login) {
			perm, err := nt.gh.Permission(ctx, nt.repo, n.Requester.Login)
			if err != nil {
				return outcome.Error, err
			}
			if !perm.CanWrite() {
				d := w.replies.data(n.Requester.Login, n.DeliveryID)
				return posted(outcome.Unauthorized, w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyStopRefused, d))
			}
		}
		ok, err := w.stopTask(ctx, id, store.CancelMarker{By: n.Requester.Login, Reason: store.ReasonStop})
		if err != nil {
			return outcome.Error, err
		}
		if ok {
			return outcome.Stopped, nil
		}
	}
	d := w.replies.data(n.Requester.Login, n.DeliveryID)
	d.IsPR = n.IsPR
	if autoStopped {
		return posted(outcome.Stopped, w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyAutoStopped, d))
	}
	return posted(outcome.Replied, w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyNothingToStop, d))
}
