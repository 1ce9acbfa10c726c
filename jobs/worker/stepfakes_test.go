package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// The fakes of the step tests: one installation's GitHub in memory, the
// App over it, a repository cache over a local git repository, and a
// session that records what the agent step passed it. Each records what
// the steps asked of it; what no step of these tests calls is left to the
// embedded nil interface, and panics.

// stepBot is the App's bot login in the step tests.
const stepBot = "agentfix[bot]"

// stepComment is a comment and the issue or pull request it is on.
type stepComment struct {
	number int
	ghapp.Comment
}

// stepGitHub is GitHub as the steps after the gate see it: the issue
// (hRepo's #1 unless set), pull requests by number, comments by anyone
// (the bot's found by marker and edited in place), and a log of the
// changes asked for, "Method number detail".
type stepGitHub struct {
	GitHub

	mu       sync.Mutex
	issue    ghapp.Issue
	prs      map[int]ghapp.PullRequest
	comments []stepComment
	// markErr is MarkReadyForReview's answer, when set.
	markErr error
	calls   []string
}

func newStepGitHub() *stepGitHub {
	return &stepGitHub{issue: ghapp.Issue{Number: 1, Title: "Add subtracts", Body: "calc.Add(2, 2) returns 0, want 4.", State: "open", Author: "carol"},
		prs: map[int]ghapp.PullRequest{}}
}

func (g *stepGitHub) record(format string, args ...any) {
	g.calls = append(g.calls, fmt.Sprintf(format, args...))
}

// called returns the calls recorded whose text starts with prefix.
func (g *stepGitHub) called(prefix string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// botComments returns the bodies of the bot's comments on number that
// contain s.
func (g *stepGitHub) botComments(number int, s string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.comments {
		if c.number == number && c.Author == stepBot && strings.Contains(c.Body, s) {
			out = append(out, c.Body)
		}
	}
	return out
}

func (g *stepGitHub) FindComment(_ context.Context, _ ghapp.Repo, number int, marker string) (ghapp.Comment, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.comments {
		if c.number == number && c.Author == stepBot && strings.Contains(c.Body, marker) {
			return c.Comment, true, nil
		}
	}
	return ghapp.Comment{}, false, nil
}

func (g *stepGitHub) CreateComment(_ context.Context, _ ghapp.Repo, number int, body string) (ghapp.Comment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := int64(len(g.comments) + 1)
	c := ghapp.Comment{ID: id, Body: body, Author: stepBot, HTMLURL: fmt.Sprintf("https://github.test/%s/issues/%d#issuecomment-%d", hRepo, number, id)}
	g.comments = append(g.comments, stepComment{number: number, Comment: c})
	g.record("CreateComment %d", number)
	return c, nil
}

func (g *stepGitHub) EditComment(_ context.Context, _ ghapp.Repo, id int64, body string) (ghapp.Comment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.comments {
		if g.comments[i].ID == id {
			g.comments[i].Body = body
			return g.comments[i].Comment, nil
		}
	}
	return ghapp.Comment{}, fmt.Errorf("comment %d: %w", id, ghapp.ErrNotFound)
}

func (g *stepGitHub) Permission(context.Context, ghapp.Repo, string) (ghapp.Permission, error) {
	return ghapp.Permission("write"), nil
}

func (g *stepGitHub) Issue(_ context.Context, _ ghapp.Repo, n int) (ghapp.Issue, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n != g.issue.Number {
		return ghapp.Issue{}, fmt.Errorf("issue %d: %w", n, ghapp.ErrNotFound)
	}
	return g.issue, nil
}

func (g *stepGitHub) FindPR(_ context.Context, _ ghapp.Repo, branch string) (ghapp.PullRequest, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, pr := range g.prs {
		if pr.Head == branch && pr.State == "open" {
			return pr, true, nil
		}
	}
	return ghapp.PullRequest{}, false, nil
}

func (g *stepGitHub) GetRepository(context.Context, ghapp.Repo) (ghapp.Repository, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record("GetRepository")
	return ghapp.Repository{Owner: "octo", Name: "widget", FullName: hRepo, DefaultBranch: "main", CloneURL: "https://github.test/octo/widget.git"}, nil
}

func (g *stepGitHub) CreatePR(_ context.Context, _ ghapp.Repo, n ghapp.NewPullRequest) (ghapp.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	num := 2 + len(g.prs)
	pr := ghapp.PullRequest{Number: num, Title: n.Title, Body: n.Body, Head: n.Head, Base: n.Base, Draft: n.Draft, State: "open",
		Author: stepBot, HTMLURL: fmt.Sprintf("https://github.test/%s/pull/%d", hRepo, num)}
	g.prs[num] = pr
	g.record("CreatePR %d draft %v", num, n.Draft)
	return pr, nil
}

func (g *stepGitHub) UpdatePR(_ context.Context, _ ghapp.Repo, n int, u ghapp.PullRequestUpdate) (ghapp.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pr, ok := g.prs[n]
	if !ok {
		return ghapp.PullRequest{}, fmt.Errorf("pull request %d: %w", n, ghapp.ErrNotFound)
	}
	if u.Title != nil {
		pr.Title = *u.Title
		g.record("UpdatePR %d title %s", n, *u.Title)
	}
	if u.Body != nil {
		pr.Body = *u.Body
		g.record("UpdatePR %d body", n)
	}
	g.prs[n] = pr
	return pr, nil
}

func (g *stepGitHub) MarkReadyForReview(_ context.Context, _ ghapp.Repo, n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record("MarkReadyForReview %d", n)
	if g.markErr != nil {
		return g.markErr
	}
	pr := g.prs[n]
	pr.Draft = false
	g.prs[n] = pr
	return nil
}

func (g *stepGitHub) AddLabels(_ context.Context, _ ghapp.Repo, n int, labels ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record("AddLabels %d %s", n, strings.Join(labels, ","))
	return nil
}

func (g *stepGitHub) RequestReviewers(_ context.Context, _ ghapp.Repo, n int, users ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record("RequestReviewers %d %s", n, strings.Join(users, ","))
	return nil
}

// stepApp is the App over one installation's stepGitHub, its files on
// default branches those of readableFiles.
type stepApp struct {
	*readableFiles
	gh *stepGitHub
}

func (a stepApp) Installation(int64) (GitHub, error) { return a.gh, nil }
func (a stepApp) Token(context.Context, int64, ghapp.Repo) (ghapp.Token, error) {
	return ghapp.Token{Value: "ghs_step", ExpiresAt: time.Now().Add(time.Hour)}, nil
}
func (a stepApp) Identity(context.Context) (ghapp.Identity, error) {
	return ghapp.Identity{BotLogin: stepBot}, nil
}
func (a stepApp) Forget(int64) {}

var _ Installations = stepApp{}

// stepRepoCache is the host's repository cache over a local git
// repository, whose branches are the remote's. No step of these tests
// pushes or diffs.
type stepRepoCache struct {
	RepoCache

	t   *testing.T
	dir string
}

// newStepRepoCache makes the repository with files committed on main.
func newStepRepoCache(t *testing.T, files map[string]string) *stepRepoCache {
	t.Helper()
	c := &stepRepoCache{t: t, dir: t.TempDir()}
	c.git("init", "-q", "-b", "main")
	c.commit("main", files)
	return c
}

func (c *stepRepoCache) git(args ...string) string {
	c.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit commits files on branch (made from main when new) and returns
// the commit.
func (c *stepRepoCache) commit(branch string, files map[string]string) string {
	c.t.Helper()
	if branch != "main" {
		c.git("checkout", "-q", "-B", branch)
	}
	for name, content := range files {
		p := filepath.Join(c.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	c.git("add", "-A")
	c.git("commit", "-q", "--allow-empty", "-m", "files on "+branch)
	sha := c.git("rev-parse", "HEAD")
	c.git("checkout", "-q", "main")
	return sha
}

func (c *stepRepoCache) Fetch(context.Context, string, workspace.Remote) (workspace.Fetched, error) {
	out := c.git("for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
	branches := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			branches[name] = sha
		}
	}
	return workspace.Fetched{Dir: filepath.Join(c.dir, ".git"), Branches: branches}, nil
}

func (c *stepRepoCache) Checkout(ctx context.Context, _ string, commit string, o workspace.WorkTreeOptions) (*workspace.WorkTree, error) {
	return workspace.NewWorkTreeFromBare(ctx, filepath.Join(c.dir, ".git"), commit, o)
}

// stepSessions stands in for session.Run: it records the options of each
// run the agent step starts, and answers with answer (a run that ended
// without a change when nil).
type stepSessions struct {
	mu     sync.Mutex
	runs   []session.Options
	answer func(session.Options) (session.Result, error)
}

func (s *stepSessions) run(_ context.Context, o session.Options) (session.Result, error) {
	s.mu.Lock()
	s.runs = append(s.runs, o)
	answer := s.answer
	s.mu.Unlock()
	if answer == nil {
		return session.Result{Agent: agent.Result{RunID: o.RunID, Status: agent.Submitted}}, nil
	}
	return answer(o)
}

// only returns the options of the one run started, failing the test
// when there was not exactly one.
func (s *stepSessions) only(t *testing.T) session.Options {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.runs) != 1 {
		t.Fatalf("sessions started = %d, want 1", len(s.runs))
	}
	return s.runs[0]
}

// stepWorld is a Worker made by New over the step fakes: one repository
// (hRepo, installation hInstall) whose default branch has files and whose
// configuration files are yml (by "owner/name:path"), the harness's
// operator limits (20 steps, $1, 5m), a real Redis and run store, and the
// recording session.
type stepWorld struct {
	w        *Worker
	gh       *stepGitHub
	cache    *stepRepoCache
	sessions *stepSessions
	budget   *budget.Budget
	logs     *syncBuffer
	// models are the names the ModelFactory was asked to build.
	models []string
}

func newStepWorld(t *testing.T, files, yml map[string]string) *stepWorld {
	t.Helper()
	rdb := newRedis(t)
	cfg := config.Defaults()
	cfg.DataDir, cfg.Model = t.TempDir(), hModel
	cfg.MaxSteps, cfg.MaxCostUSD, cfg.MaxDuration = 20, 1, 5*time.Minute
	b, err := budget.New(rdb, budget.LimitsFrom(cfg), budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runs.New(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: rdb, Retention: cfg.RunRetention})
	if err != nil {
		t.Fatal(err)
	}
	sw := &stepWorld{gh: newStepGitHub(), cache: newStepRepoCache(t, files), sessions: &stepSessions{}, budget: b, logs: &syncBuffer{}}
	var mu sync.Mutex
	sw.w, err = New(Options{
		Config: cfg, Redis: rdb, GitHub: stepApp{readableFiles: &readableFiles{files: yml}, gh: sw.gh}, Cache: sw.cache, Runs: rs,
		Sandbox: func(workspace.Options) (tools.Sandbox, error) {
			t.Error("a sandbox was built: the session is the recording one")
			return nil, fmt.Errorf("no sandbox in step tests")
		},
		Model: func(name string) (agent.Model, error) {
			mu.Lock()
			defer mu.Unlock()
			sw.models = append(sw.models, name)
			return nil, nil
		},
		Budget: b, Registry: prometheus.NewRegistry(),
		Logger: slogText(sw.logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	sw.w.agent.runSession = sw.sessions.run
	return sw
}

// fix is the fix job of issue #1 that a label by the harness's requester
// asked for, as handleFix makes it.
func (sw *stepWorld) fix() *fix {
	taskID := jobs.FixTaskID(hRepo, 1)
	delivery := "d-step-1"
	return &fix{w: sw.w, j: job{
		kind: jobs.TypeFix, taskID: taskID, key: store.JobKey(taskID, delivery), delivery: delivery,
		install: hInstall, repo: ghapp.Repo{Owner: "octo", Name: "widget"}, clone: jobs.Repo{FullName: hRepo},
		requester: jobs.User{Login: hRequester, ID: hUserID, Type: "User"}, trigger: jobs.Trigger{Kind: jobs.TriggerLabel},
		number: 1, thread: 1, gh: sw.gh, started: sw.w.now(), branch: BranchPrefix + "1", log: sw.w.log,
	}}
}

// slogText is a logger of every level into w.
func slogText(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// runAgent runs the agent step for j as workOn does once the working copy
// is made: with its run record opened, and the default branch's files
// from; there is no working copy (the session is the recording one).
func (sw *stepWorld) runAgent(t *testing.T, j *job, from defaultBranchFiles) (session.Result, error) {
	t.Helper()
	rec, err := sw.w.openRun(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	j.rec = rec
	t.Cleanup(func() { rec.Close() })
	return sw.w.agent.run(t.Context(), j, nil, agent.Task{Repo: j.repo.String(), Issue: j.number, Title: j.issue.Title}, from)
}
