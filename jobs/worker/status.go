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

// ensure returns the status comment of job key on issue or pull request
// number, posting it ("queued") when neither the notice nor an earlier
// attempt did.
func (s *statuses) ensure(ctx context.Context, gh comments, repo ghapp.Repo, number int, key, requester string) (store.CommentRef, error) {
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
	ref, err := s.ensure(ctx, j.gh, j.repo, j.thread, j.key, j.requester.Login)
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
