package worker

import (
	"context"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// What the steps need of GitHub, each declared where it is used; one
// installation's *ghapp.Client implements them all. Each call retries on
// its own (ghapp's retrying transport), so a failure here is one the job
// reports or retries as a whole.
type (
	// comments posts, finds and edits the bot's comments and reacts to
	// what triggered.
	comments interface {
		report.Comments
		report.CommentEditor
	}
	// reactions acknowledge a trigger with 👀 (notice.go).
	reactions interface {
		ReactToIssue(ctx context.Context, repo ghapp.Repo, number int, content string) error
		ReactToComment(ctx context.Context, repo ghapp.Repo, id int64, content string) error
		ReactToReviewComment(ctx context.Context, repo ghapp.Repo, id int64, content string) error
	}
	// people answers who may ask for work (gate.go).
	people interface {
		Permission(ctx context.Context, repo ghapp.Repo, user string) (ghapp.Permission, error)
		// IsTeamMember answers allowed_teams (config.TeamChecker).
		IsTeamMember(ctx context.Context, org, slug, login string) (bool, error)
	}
	// threads reads what a job works on: the issue, the pull request, the
	// repository.
	threads interface {
		Issue(ctx context.Context, repo ghapp.Repo, number int) (ghapp.Issue, error)
		PR(ctx context.Context, repo ghapp.Repo, number int) (ghapp.PullRequest, error)
		FindPR(ctx context.Context, repo ghapp.Repo, branch string) (ghapp.PullRequest, bool, error)
		GetRepository(ctx context.Context, repo ghapp.Repo) (ghapp.Repository, error)
	}
	// pulls opens and updates the bot's pull requests (publish.go).
	pulls interface {
		CreatePR(ctx context.Context, repo ghapp.Repo, pr ghapp.NewPullRequest) (ghapp.PullRequest, error)
		UpdatePR(ctx context.Context, repo ghapp.Repo, number int, u ghapp.PullRequestUpdate) (ghapp.PullRequest, error)
		// MarkReadyForReview takes a draft pull request out of draft
		// (GitHub's GraphQL API); one that is not a draft is left as it is.
		MarkReadyForReview(ctx context.Context, repo ghapp.Repo, number int) error
		RequestReviewers(ctx context.Context, repo ghapp.Repo, number int, users ...string) error
		// AddLabels puts the repository's configured labels on the bot's PRs.
		AddLabels(ctx context.Context, repo ghapp.Repo, number int, labels ...string) error
	}
	// reviews reads the reviews a round answers and replies in their
	// threads (round_context.go).
	reviews interface {
		ListReviews(ctx context.Context, repo ghapp.Repo, number int) ([]ghapp.Review, error)
		ListReviewComments(ctx context.Context, repo ghapp.Repo, number int) ([]ghapp.ReviewComment, error)
		ReplyToReviewComment(ctx context.Context, repo ghapp.Repo, number int, id int64, body string) (ghapp.ReviewComment, error)
	}
	// checkRuns keeps the bot's check runs (checks.go).
	checkRuns interface {
		CreateCheckRun(ctx context.Context, repo ghapp.Repo, r ghapp.NewCheckRun) (ghapp.CheckRun, error)
		UpdateCheckRun(ctx context.Context, repo ghapp.Repo, id int64, u ghapp.CheckRunUpdate) (ghapp.CheckRun, error)
	}
	// ciChecks reads what automatic rounds start from: the checks of a
	// commit, their annotations and GitHub Actions logs, re-runs, the
	// commits of a pull request and the pull requests into a branch
	// (autoround.go, ciround.go).
	ciChecks interface {
		ListCheckSuites(ctx context.Context, repo ghapp.Repo, ref string) ([]ghapp.CheckSuite, error)
		ListCheckRuns(ctx context.Context, repo ghapp.Repo, ref string) ([]ghapp.CheckRun, error)
		ListAnnotations(ctx context.Context, repo ghapp.Repo, id int64, max int) ([]ghapp.Annotation, error)
		WorkflowJob(ctx context.Context, repo ghapp.Repo, id int64) (ghapp.WorkflowJob, error)
		JobLog(ctx context.Context, repo ghapp.Repo, id int64, maxBytes int64) (ghapp.JobLog, error)
		RerunFailedJobs(ctx context.Context, repo ghapp.Repo, id int64) error
		PRCommits(ctx context.Context, repo ghapp.Repo, number int) ([]ghapp.Commit, error)
		ListOpenPRs(ctx context.Context, repo ghapp.Repo, base string) ([]ghapp.PullRequest, error)
	}
)

// GitHub is what the worker does on GitHub for one installation: every
// step's part together. *ghapp.Client implements it.
type GitHub interface {
	comments
	reactions
	people
	threads
	pulls
	reviews
	checkRuns
	ciChecks
}

var _ GitHub = (*ghapp.Client)(nil)

// Installations gives the worker the GitHub of each installation, git
// tokens scoped to one repository, and the App's identity; FromApp adapts a
// *ghapp.App.
type Installations interface {
	Installation(id int64) (GitHub, error)
	// Token returns an installation token that can reach only repo.
	Token(ctx context.Context, installationID int64, repo ghapp.Repo) (ghapp.Token, error)
	Identity(ctx context.Context) (ghapp.Identity, error)
	// Forget drops what is cached for a deleted or suspended installation.
	Forget(id int64)
	// DefaultBranchFile reads path from the default branch of repo with a
	// token scoped to repo; installationID 0 looks up the App's
	// installation covering repo. found is false when the App cannot read
	// it (see ghapp.App.DefaultBranchFile).
	DefaultBranchFile(ctx context.Context, installationID int64, repo ghapp.Repo, path string) (data []byte, found bool, err error)
}

// FromApp returns the Installations of a GitHub App.
func FromApp(a *ghapp.App) Installations { return appInstallations{a} }

type appInstallations struct{ app *ghapp.App }

func (a appInstallations) Installation(id int64) (GitHub, error) { return a.app.Installation(id) }
func (a appInstallations) Token(ctx context.Context, id int64, repo ghapp.Repo) (ghapp.Token, error) {
	return a.app.Token(ctx, id, repo)
}
func (a appInstallations) Identity(ctx context.Context) (ghapp.Identity, error) {
	return a.app.Identity(ctx)
}
func (a appInstallations) Forget(id int64) { a.app.Forget(id) }
func (a appInstallations) DefaultBranchFile(ctx context.Context, installationID int64, repo ghapp.Repo, path string) ([]byte, bool, error) {
	return a.app.DefaultBranchFile(ctx, installationID, repo, path)
}

// RepoCache is the host's repository cache; *workspace.Cache implements
// it. repo is "owner/name".
type RepoCache interface {
	Fetch(ctx context.Context, repo string, r workspace.Remote) (workspace.Fetched, error)
	Checkout(ctx context.Context, repo, commit string, o workspace.WorkTreeOptions) (*workspace.WorkTree, error)
	Push(ctx context.Context, repo string, w *workspace.WorkTree, p workspace.PushOptions) error
	// Diff returns base...head of two fetched commits: a pull request's
	// change.
	Diff(ctx context.Context, repo, base, head string, maxBytes int) (workspace.RangeDiff, error)
}

var _ RepoCache = (*workspace.Cache)(nil)

// RunStore keeps run records; *runs.Store implements it.
type RunStore interface {
	Create(ctx context.Context, m runs.Meta) (*runs.Run, error)
	// Open reopens run id (a retry whose agent already ran), or creates it
	// from m.
	Open(ctx context.Context, id string, m runs.Meta) (*runs.Run, error)
	// Get reads run id's record (runs.ErrNotFound when there is none).
	Get(ctx context.Context, id string) (runs.Record, error)
}

var _ RunStore = (*runs.Store)(nil)

// SandboxFactory builds the sandbox of one job for its working copy and
// cache directory (o.Workspace, o.Cache, o.Logger are set; the factory
// fills in the operator's kind and limits). cmd/bot maps AGENTFIX_SANDBOX to
// one of workspace.NewBwrap, NewDocker and NewNone.
type SandboxFactory = session.SandboxFactory

// ModelFactory returns the model named "provider/model" (AGENTFIX_MODEL).
// cmd/bot builds it with agent/llm.
type ModelFactory func(name string) (agent.Model, error)
