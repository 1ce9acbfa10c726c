package worker

import (
	"context"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// GitHub is what the worker does on GitHub for one installation;
// *ghapp.Client implements it. Each call retries on its own (ghapp's
// retrying transport), so a failure here is one the job reports or retries
// as a whole.
type GitHub interface {
	Permission(ctx context.Context, repo ghapp.Repo, user string) (ghapp.Permission, error)
	Issue(ctx context.Context, repo ghapp.Repo, number int) (ghapp.Issue, error)
	GetRepository(ctx context.Context, repo ghapp.Repo) (ghapp.Repository, error)

	CreateComment(ctx context.Context, repo ghapp.Repo, number int, body string) (ghapp.Comment, error)
	EditComment(ctx context.Context, repo ghapp.Repo, id int64, body string) (ghapp.Comment, error)
	FindComment(ctx context.Context, repo ghapp.Repo, number int, marker string) (ghapp.Comment, bool, error)
	ReactToIssue(ctx context.Context, repo ghapp.Repo, number int, content string) error
	ReactToComment(ctx context.Context, repo ghapp.Repo, id int64, content string) error
	ReactToReviewComment(ctx context.Context, repo ghapp.Repo, id int64, content string) error

	PR(ctx context.Context, repo ghapp.Repo, number int) (ghapp.PullRequest, error)
	FindPR(ctx context.Context, repo ghapp.Repo, branch string) (ghapp.PullRequest, bool, error)
	CreatePR(ctx context.Context, repo ghapp.Repo, pr ghapp.NewPullRequest) (ghapp.PullRequest, error)
	UpdatePR(ctx context.Context, repo ghapp.Repo, number int, u ghapp.PullRequestUpdate) (ghapp.PullRequest, error)
	// MarkReadyForReview takes a draft pull request out of draft (GitHub's
	// GraphQL API); one that is not a draft is left as it is.
	MarkReadyForReview(ctx context.Context, repo ghapp.Repo, number int) error
	RequestReviewers(ctx context.Context, repo ghapp.Repo, number int, users ...string) error
	ListReviews(ctx context.Context, repo ghapp.Repo, number int) ([]ghapp.Review, error)
	ListReviewComments(ctx context.Context, repo ghapp.Repo, number int) ([]ghapp.ReviewComment, error)
	ReplyToReviewComment(ctx context.Context, repo ghapp.Repo, number int, id int64, body string) (ghapp.ReviewComment, error)

	CreateCheckRun(ctx context.Context, repo ghapp.Repo, r ghapp.NewCheckRun) (ghapp.CheckRun, error)
	UpdateCheckRun(ctx context.Context, repo ghapp.Repo, id int64, u ghapp.CheckRunUpdate) (ghapp.CheckRun, error)

	// AddLabels puts the repository's configured labels on the bot's PRs.
	AddLabels(ctx context.Context, repo ghapp.Repo, number int, labels ...string) error
	// IsTeamMember answers allowed_teams (config.TeamChecker).
	IsTeamMember(ctx context.Context, org, slug, login string) (bool, error)
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
}

var _ RunStore = (*runs.Store)(nil)

// SandboxFactory builds the sandbox of one job for its working copy and
// cache directory (o.Workspace, o.Cache, o.Logger are set; the factory
// fills in the operator's kind and limits). cmd/bot maps AGENTFIX_SANDBOX to
// one of workspace.NewBwrap, NewDocker and NewNone.
type SandboxFactory func(o workspace.Options) (tools.Sandbox, error)

// ModelFactory returns the model named "provider/model" (AGENTFIX_MODEL).
// cmd/bot builds it with agent/llm.
type ModelFactory func(name string) (agent.Model, error)
