package report

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// DefaultStatusInterval is the least time between two progress edits of a
// status comment (DESIGN.md §4); phase changes are shown at once.
const DefaultStatusInterval = 30 * time.Second

// Phase is where a job is, as its status comment shows it.
type Phase string

// The phases of a job, in order, then its final states.
const (
	PhaseQueued      Phase = "queued"
	PhaseCloning     Phase = "cloning"
	PhaseSetup       Phase = "setup"
	PhaseWorking     Phase = "working"
	PhaseReviewing   Phase = "reviewing"
	PhasePushing     Phase = "pushing"
	PhaseDone        Phase = "done"
	PhaseFailed      Phase = "failed"
	PhaseCancelled   Phase = "cancelled"
	PhaseInterrupted Phase = "interrupted"
	// PhaseMoved ends a fix job whose issue has an open bot PR: the work
	// goes on as a round on that PR (PRNumber, PRURL).
	PhaseMoved Phase = "moved"
)

// Status is what a status comment shows.
type Status struct {
	Marker    string
	Requester string
	// OnPR is set for a revise round's comment on the pull request.
	OnPR   bool
	Phase  Phase
	Branch string
	// Progress of the agent (working and reviewing).
	Step, MaxSteps      int
	CostUSD, MaxCostUSD float64
	LastAction          string
	// Final states.
	PRNumber int
	PRURL    string
	Draft    bool
	// Outcome is the final outcome and Detail says why in words for
	// people.
	Outcome outcome.Outcome
	Detail  string
	// StoppedBy is who stopped the job (cancelled), empty when GitHub did.
	StoppedBy string
	RunID     string
	Elapsed   time.Duration
	// Problems lists what is wrong with the repository's configuration
	// (failed), shown as a code block; Notes say what of it did not apply.
	Problems string
	Notes    []string
	// Environment names where the job's commands run, once chosen.
	Environment string
}

// Status renders a status comment.
func (x *Texts) Status(d Status) (string, error) { return x.render(tmplStatus, d) }

// CommentEditor edits a comment the bot made; *ghapp.Client implements
// it.
type CommentEditor interface {
	EditComment(ctx context.Context, repo ghapp.Repo, id int64, body string) (ghapp.Comment, error)
}

// StatusComment is a job's one status comment, edited in place: at once
// on a phase change, at most every interval for progress within a phase.
// It is safe for concurrent use.
type StatusComment struct {
	gh       CommentEditor
	repo     ghapp.Repo
	id       int64
	texts    *Texts
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu       sync.Mutex
	data     Status
	lastEdit time.Time
	lastBody string
}

// NewStatusComment returns the editor of comment id showing data, edited
// at most every interval (DefaultStatusInterval when 0) for progress.
func NewStatusComment(gh CommentEditor, repo ghapp.Repo, id int64, x *Texts, data Status,
	interval time.Duration, now func() time.Time, log *slog.Logger) *StatusComment {
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	return &StatusComment{gh: gh, repo: repo, id: id, texts: x, data: data, interval: interval, now: now, log: log}
}

// Show applies edit and edits the comment when the phase changed, force
// is set, or the interval passed since the last edit. An edit that fails
// is logged and returned; the job goes on either way.
func (s *StatusComment) Show(ctx context.Context, edit func(*Status), force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.data.Phase
	edit(&s.data)
	now := s.now()
	if !force && s.data.Phase == before && now.Sub(s.lastEdit) < s.interval {
		return nil
	}
	body, err := s.texts.Status(s.data)
	if err != nil {
		return err
	}
	if body == s.lastBody {
		return nil
	}
	if _, err := s.gh.EditComment(ctx, s.repo, s.id, body); err != nil {
		s.log.Warn("edit status comment failed", logattr.Err, err)
		return fmt.Errorf("edit status comment: %w", err)
	}
	s.lastEdit, s.lastBody = now, body
	return nil
}

// Snapshot returns the data shown last.
func (s *StatusComment) Snapshot() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data
}
