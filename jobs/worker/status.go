package worker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// statuses makes each job's one status comment: posted "queued" by the
// notice or by the job, whichever comes first, then edited in place.
type statuses struct {
	journal  *journal
	texts    *report.Texts
	store    *store.Store
	interval time.Duration
	now      func() time.Time
	cfg      *config.App
}

// marker is the hidden marker of job key's status comment.
func statusMarker(key string) string { return ghapp.Marker("status " + key) }

// onPR reports whether job key is a revise round's, whose comments are on
// the pull request.
func onPR(key string) bool { return strings.HasPrefix(key, jobs.TypeRevise+":") }

// statusOf names the job a status comment belongs to.
type statusOf struct {
	install          int64
	repo             ghapp.Repo
	number           int // the issue or pull request it is on
	taskID, delivery string
	requester        string
}

// ensure returns the status comment of job of on its issue or pull
// request, posting it ("queued") when neither the notice nor an earlier
// attempt did, and notes it in this worker's journal of open jobs.
func (s *statuses) ensure(ctx context.Context, gh comments, of statusOf) (store.CommentRef, error) {
	key := store.JobKey(of.taskID, of.delivery)
	ref, err := s.post(ctx, gh, of.repo, of.number, key, of.requester)
	if err == nil {
		err = s.journal.add(openJob{Key: key, TaskID: of.taskID, DeliveryID: of.delivery, Installation: of.install,
			Repo: of.repo.String(), Thread: of.number, Requester: of.requester, Comment: ref.ID}, nil)
	}
	return ref, err
}

// post returns job key's status comment, posting it when nobody has.
func (s *statuses) post(ctx context.Context, gh comments, repo ghapp.Repo, number int, key, requester string) (store.CommentRef, error) {
	return s.store.StatusComment(ctx, key, func(ctx context.Context) (store.CommentRef, error) {
		marker := statusMarker(key)
		if c, found, err := gh.FindComment(ctx, repo, number, marker); err != nil {
			return store.CommentRef{}, err
		} else if found {
			return store.CommentRef{ID: c.ID, URL: c.HTMLURL}, nil
		}
		body, err := s.texts.Status(report.Status{Marker: marker, Requester: requester, Phase: report.PhaseQueued, OnPR: onPR(key)})
		if err != nil {
			return store.CommentRef{}, err
		}
		c, err := gh.CreateComment(ctx, repo, number, body)
		if err != nil {
			return store.CommentRef{}, err
		}
		return store.CommentRef{ID: c.ID, URL: c.HTMLURL}, nil
	})
}

// editor returns the editor of job key's status comment ref.
func (s *statuses) editor(gh comments, repo ghapp.Repo, ref store.CommentRef, key, requester string, log *slog.Logger) *report.StatusComment {
	return report.NewStatusComment(gh, repo, ref.ID, s.texts, report.Status{
		Marker: statusMarker(key), Requester: requester, Phase: report.PhaseQueued, OnPR: onPR(key),
		MaxSteps: s.cfg.MaxSteps, MaxCostUSD: s.cfg.MaxCostUSD,
	}, s.interval, s.now, log)
}

// open finds or posts job j's status comment on its thread and sets it.
func (s *statuses) open(ctx context.Context, j *job) error {
	ref, err := s.ensure(ctx, j.gh, statusOf{install: j.install, repo: j.repo, number: j.thread, taskID: j.taskID,
		delivery: j.delivery, requester: j.requester.Login})
	if err != nil {
		return err
	}
	j.status = s.editor(j.gh, j.repo, ref, j.key, j.requester.Login, j.log)
	return nil
}

// endKnown ends the status comment of job key, if one was posted (the
// notice's "queued"), with edit; a failure is logged.
func (s *statuses) endKnown(ctx context.Context, gh comments, repo ghapp.Repo, key, requester string, log *slog.Logger, edit func(*report.Status)) {
	ref, ok, err := s.store.KnownStatusComment(ctx, key)
	if err != nil || !ok {
		return
	}
	if err := s.editor(gh, repo, ref, key, requester, log).Show(ctx, edit, true); err != nil {
		log.Warn("end a status comment", logattr.Err, err)
	}
}
