package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// The pipeline world: the worker's steps composed as New makes them, with
// GitHub in memory (pipeGitHub), the repository a bare git repository in
// t.TempDir() (bareCache), real Redis, run store, budget and bwrap
// sandboxes, and the harness's scripted model. There is no webhook edge:
// a test puts tasks in Redis as the edge would (jobs.Client) and runs them
// with the worker's handlers, or with an asynq server (serve) where the
// attempt count or asynq's cancellation is part of the story.
type pipeWorld struct {
	t     *testing.T
	rdb   redis.UniversalClient
	gh    *pipeGitHub
	git   *bareCache
	model *fakeModel
	cfg   *config.App
	logs  *syncBuffer
	runs  *runs.Store
	queue *jobs.Client
	issue int

	mu         sync.Mutex
	deliveries int
}

func newPipeWorld(t *testing.T, script ...turn) *pipeWorld {
	t.Helper()
	p := &pipeWorld{t: t, rdb: newRedis(t), gh: newPipeGitHub(), git: newBareCache(t, hFiles),
		model: newFakeModel(t, script...), logs: &syncBuffer{}}
	p.gh.git = p.git
	p.issue = p.gh.addIssue("Add subtracts", "calc.Add(2, 2) returns 0, want 4.")
	p.gh.setPermission(hRequester, ghapp.PermissionWrite)
	cfg := config.Defaults()
	cfg.AppID, cfg.DataDir, cfg.Model = 1, filepath.Join(t.TempDir(), "data"), hModel
	cfg.MaxSteps, cfg.MaxCostUSD, cfg.MaxDuration = 20, 1, 5*time.Minute
	cfg.AgentConcurrency, cfg.InteractiveConcurrency = 1, 2
	p.cfg = cfg
	var err error
	if p.runs, err = runs.New(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: p.rdb, Retention: cfg.RunRetention}); err != nil {
		t.Fatal(err)
	}
	p.queue = jobs.NewClient(p.rdb, cfg.MaxDuration)
	return p
}

func (p *pipeWorld) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// worker returns a Worker of the world, as New makes it; edit adjusts its
// options first. Workers of one world share its Redis, GitHub and git.
func (p *pipeWorld) worker(edit ...func(*Options)) *Worker {
	p.t.Helper()
	reg := prometheus.NewRegistry()
	b, err := budget.New(p.rdb, budget.LimitsFrom(p.cfg), budget.Options{Registerer: reg})
	if err != nil {
		p.t.Fatal(err)
	}
	o := Options{
		Config: p.cfg, Redis: p.rdb, GitHub: p.gh, Cache: p.git, Runs: p.runs,
		Sandbox: func(o workspace.Options) (tools.Sandbox, error) { return workspace.NewBwrap(o) },
		Model:   p.newModel, Registry: reg, Logger: p.logger(), Budget: b,
		ShutdownTimeout: 300 * time.Millisecond, GitHubTimeout: time.Minute,
		RetryDelay: func(int, error) time.Duration { return 10 * time.Millisecond },
		Poll:       20 * time.Millisecond,
		// serve's asynq server looks for new and due tasks this often.
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond,
	}
	for _, e := range edit {
		e(&o)
	}
	w, err := New(o)
	if err != nil {
		p.t.Fatal(err)
	}
	return w
}

// newModel is the ModelFactory: the real OpenAI provider against the fake
// endpoint.
func (p *pipeWorld) newModel(name string) (agent.Model, error) {
	return llm.New(name, llm.Options{
		APIKey: "sk-test", BaseURL: p.model.srv.URL + "/v1", Prices: map[string]llm.Price{hModel: {Input: 1, Output: 2}, hRepoModel: {Input: 3, Output: 6}},
		MaxRetries: -1, Getenv: func(string) string { return "" }, Logger: p.logger(),
	})
}

// delivery returns a new delivery id.
func (p *pipeWorld) delivery() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deliveries++
	return fmt.Sprintf("d-%d", p.deliveries)
}

func (p *pipeWorld) repo() jobs.Repo {
	return jobs.Repo{ID: 7, Owner: "octo", Name: "widget", FullName: hRepo, DefaultBranch: "main"}
}

func user(login string) jobs.User { return jobs.User{Login: login, ID: hUserID, Type: "User"} }

// labeled is the fix task's payload of the trigger label added by sender.
func (p *pipeWorld) labeled(sender string) jobs.FixIssue {
	return jobs.FixIssue{DeliveryID: p.delivery(), Installation: hInstall, Repo: p.repo(), Number: p.issue,
		Trigger: jobs.Trigger{Kind: jobs.TriggerLabel}, Requester: user(sender)}
}

// label puts the fix task of the trigger label added by sender in Redis,
// with its notice, as the edge does, and runs the notice; it returns the
// fix task. A test runs that with w.handleFix, or serve runs it.
func (p *pipeWorld) label(w *Worker, sender string) *asynq.Task {
	p.t.Helper()
	return p.submit(w, p.labeled(sender))
}

// command is label for a comment by sender carrying the command with
// instructions.
func (p *pipeWorld) command(w *Worker, sender, instructions string) *asynq.Task {
	p.t.Helper()
	id := p.gh.addComment(p.issue, sender, "/agent-fix "+instructions)
	return p.submit(w, jobs.FixIssue{DeliveryID: p.delivery(), Installation: hInstall, Repo: p.repo(), Number: p.issue,
		Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: id}, Requester: user(sender), Instructions: instructions})
}

// submit is enqueue, then the notice of fi's delivery.
func (p *pipeWorld) submit(w *Worker, fi jobs.FixIssue) *asynq.Task {
	p.t.Helper()
	task := p.enqueue(fi)
	p.runNotice(w, fi.DeliveryID)
	return task
}

// enqueue puts the fix task of fi and its notice in Redis, as the edge
// does, and returns the fix task.
func (p *pipeWorld) enqueue(fi jobs.FixIssue) *asynq.Task {
	p.t.Helper()
	if _, err := p.queue.SubmitFix(p.t.Context(), fi); err != nil {
		p.t.Fatal(err)
	}
	task, err := jobs.NewFixTask(fi, p.cfg.MaxDuration)
	if err != nil {
		p.t.Fatal(err)
	}
	return task
}

// notice puts the notice of a comment by sender on number carrying a
// command (outcome says which, as the edge decided) in Redis and runs it.
func (p *pipeWorld) notice(w *Worker, number int, sender, body string, o jobs.Outcome) {
	p.t.Helper()
	id := p.gh.addComment(number, sender, body)
	n := jobs.Notice{DeliveryID: p.delivery(), Installation: hInstall, Repo: p.repo(), Number: number,
		Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: id}, Requester: user(sender), Outcome: o}
	if pr, ok := p.gh.pr(number); ok {
		n.IsPR, n.Author = true, &jobs.User{Login: pr.Author, Type: "User"}
	}
	if err := p.queue.SubmitNotice(p.t.Context(), n); err != nil {
		p.t.Fatal(err)
	}
	p.runNotice(w, n.DeliveryID)
}

// runNotice runs the notice of delivery with w's handler, as the
// interactive queue would; a notice that fails fails the test.
func (p *pipeWorld) runNotice(w *Worker, delivery string) {
	p.t.Helper()
	info, err := w.inspector.GetTaskInfo(jobs.QueueInteractive, jobs.NoticeTaskID(delivery))
	if err != nil {
		p.t.Fatalf("the notice of %s: %v", delivery, err)
	}
	if err := w.handleNotice(p.t.Context(), asynq.NewTask(info.Type, info.Payload)); err != nil {
		p.t.Fatalf("notice of %s: %v\nlogs:\n%s", delivery, err, tail(p.logs.String(), 6000))
	}
}

// cancel runs the cancel task c as the interactive queue would.
func (p *pipeWorld) cancel(w *Worker, c jobs.Cancel) {
	p.t.Helper()
	c.DeliveryID = p.delivery()
	task, err := jobs.NewCancelTask(c)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := w.handleCancel(p.t.Context(), task); err != nil {
		p.t.Fatalf("cancel: %v", err)
	}
}

// serve runs the agent tasks in Redis with an asynq server of w (as Run
// makes it) until the test ends, and sends what the handler of each
// attempt returned on the channel.
func (p *pipeWorld) serve(w *Worker) <-chan error {
	p.t.Helper()
	attempts := make(chan error, 16)
	srv := w.server(jobs.QueueAgent, 1)
	h := w.Handler()
	err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		err := h.ProcessTask(ctx, t)
		attempts <- err
		return err
	}))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(srv.Shutdown)
	return attempts
}

// taskState returns the state of the issue's fix task ("" when there is
// none).
func (p *pipeWorld) taskState() string {
	info, err := asynq.NewInspectorFromRedisClient(p.rdb).GetTaskInfo(jobs.QueueAgent, jobs.FixTaskID(hRepo, p.issue))
	if err != nil {
		return ""
	}
	return info.State.String()
}

// waitFor polls cond until it holds, failing the test a little before its
// deadline, saying what it waited for.
func (p *pipeWorld) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := nearDeadline(p.t)
	for !cond() {
		select {
		case <-deadline:
			p.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, tail(p.logs.String(), 6000))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nextAttempt waits for the next attempt serve ran and returns its error.
func (p *pipeWorld) nextAttempt(attempts <-chan error, what string) error {
	p.t.Helper()
	select {
	case err := <-attempts:
		return err
	case <-nearDeadline(p.t):
		p.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, tail(p.logs.String(), 6000))
		return nil
	}
}

// isFinal reports whether err, a handler's, ends its task for good: nil or
// wrapping asynq.SkipRetry.
func isFinal(err error) bool { return err == nil || errors.Is(err, asynq.SkipRetry) }

// runList returns the run records, newest first.
func (p *pipeWorld) runList() []runs.Meta {
	p.t.Helper()
	list, err := p.runs.List(p.t.Context(), 10)
	if err != nil {
		p.t.Fatal(err)
	}
	return list
}

// ---- GitHub in memory ----

// pipeBot is the App's bot account in the pipeline world.
const pipeBot = "agentfix[bot]"

// pipeGitHub is the App's GitHub in the pipeline world: installation
// hInstall of repository hRepo, in memory and stateful (prow's fakegithub
// is the model). It records what the worker did — comments as their last
// edit left them, reactions, pull requests, check runs, review requests,
// forgotten installations — and fails the calls a test chooses
// (failNext, failAfterEffect). Pull requests, reviews and their threads
// are in pipeworld_round_test.go, other Apps' checks and the commits of
// pull requests in pipeworld_ci_test.go. The calls no pipeline-world test
// makes are the embedded interface's: nil.
type pipeGitHub struct {
	GitHub

	mu          sync.Mutex
	number      int // the last issue or pull request number
	commentID   int64
	issues      map[int]*ghapp.Issue
	comments    []pipeComment
	reactions   []string // "eyes on issue 1", "eyes on comment 7"
	prs         []*ghapp.PullRequest
	checkRuns   []*ghapp.CheckRun
	reviewers   map[int][]string
	permissions map[string]ghapp.Permission
	noDrafts    bool
	forgotten   []int64
	git         *bareCache // the repository whose main DefaultBranchFile reads
	faults      map[string][]pipeFault

	reviews        []pipeReview
	reviewComments []pipeReviewComment // inline comments and their replies
	ci             pipeCI              // other Apps' checks (pipeworld_ci_test.go)
}

// pipeComment is a comment on issue or pull request number, as its last
// edit left it.
type pipeComment struct {
	ghapp.Comment
	number int
}

// pipeFault is one failure of a call: err, before the call does anything,
// or after it did (GitHub acted, its answer was lost).
type pipeFault struct {
	err         error
	afterEffect bool
}

var _ Installations = (*pipeGitHub)(nil)

func newPipeGitHub() *pipeGitHub {
	return &pipeGitHub{issues: map[int]*ghapp.Issue{}, reviewers: map[int][]string{},
		permissions: map[string]ghapp.Permission{}, faults: map[string][]pipeFault{}}
}

// apiError is GitHub's answer status to method path, as ghapp returns it
// once its own retries are spent.
func apiError(method, path string, status int) error {
	return &ghapp.APIError{Method: method, Path: path, Status: status}
}

// failNext makes the next n calls of method (a GitHub method's name) fail
// with err.
func (g *pipeGitHub) failNext(method string, n int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for range n {
		g.faults[method] = append(g.faults[method], pipeFault{err: err})
	}
}

// failAfterEffect makes the next call of method do what it does, then fail
// with err.
func (g *pipeGitHub) failAfterEffect(method string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[method] = append(g.faults[method], pipeFault{err: err, afterEffect: true})
}

// pendingFaults counts the failures that did not happen yet.
func (g *pipeGitHub) pendingFaults() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, f := range g.faults {
		n += len(f)
	}
	return n
}

// fault returns the error the call of method being made fails with,
// before its effect or after it; both are nil when no fault is due. The
// caller holds g.mu.
func (g *pipeGitHub) fault(method string) (before, after error) {
	f := g.faults[method]
	if len(f) == 0 {
		return nil, nil
	}
	g.faults[method] = f[1:]
	if f[0].afterEffect {
		return nil, f[0].err
	}
	return f[0].err, nil
}

func (g *pipeGitHub) url(number int) string {
	return fmt.Sprintf("https://github.example/%s/issues/%d", hRepo, number)
}

func (g *pipeGitHub) addIssue(title, body string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.number++
	g.issues[g.number] = &ghapp.Issue{Number: g.number, Title: title, Body: body, State: "open", Author: "carol", HTMLURL: g.url(g.number)}
	return g.number
}

func (g *pipeGitHub) closeIssue(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.issues[n].State = "closed"
}

// addPR opens a person's pull request from head.
func (g *pipeGitHub) addPR(title, head, author string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.number++
	g.prs = append(g.prs, &ghapp.PullRequest{Number: g.number, Title: title, State: "open", Author: author, Head: head, Base: "main", HTMLURL: g.url(g.number)})
	return g.number
}

func (g *pipeGitHub) setPermission(login string, p ghapp.Permission) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.permissions[login] = p
}

// addComment is a person's comment on number.
func (g *pipeGitHub) addComment(number int, author, body string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addCommentLocked(number, author, body).ID
}

func (g *pipeGitHub) addCommentLocked(number int, author, body string) ghapp.Comment {
	g.commentID++
	c := ghapp.Comment{ID: g.commentID, Body: body, Author: author, HTMLURL: fmt.Sprintf("%s#issuecomment-%d", g.url(number), g.commentID)}
	g.comments = append(g.comments, pipeComment{Comment: c, number: number})
	return c
}

// botComments returns the bot's comments on number.
func (g *pipeGitHub) botComments(number int) []ghapp.Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ghapp.Comment
	for _, c := range g.comments {
		if c.number == number && c.Author == pipeBot {
			out = append(out, c.Comment)
		}
	}
	return out
}

// commentsWith returns the bot's comments on number containing s.
func (g *pipeGitHub) commentsWith(number int, s string) []ghapp.Comment {
	var out []ghapp.Comment
	for _, c := range g.botComments(number) {
		if strings.Contains(c.Body, s) {
			out = append(out, c)
		}
	}
	return out
}

func (g *pipeGitHub) allReactions() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reactions)
}

// botPRs returns the bot's pull requests.
func (g *pipeGitHub) botPRs() []ghapp.PullRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ghapp.PullRequest
	for _, pr := range g.prs {
		if pr.Author == pipeBot {
			out = append(out, *pr)
		}
	}
	return out
}

func (g *pipeGitHub) pr(number int) (ghapp.PullRequest, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, pr := range g.prs {
		if pr.Number == number {
			return *pr, true
		}
	}
	return ghapp.PullRequest{}, false
}

func (g *pipeGitHub) allCheckRuns() []ghapp.CheckRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ghapp.CheckRun
	for _, r := range g.checkRuns {
		out = append(out, *r)
	}
	return out
}

// requestedReviewers returns whom the bot asked to review pull request
// number.
func (g *pipeGitHub) requestedReviewers(number int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reviewers[number])
}

func (g *pipeGitHub) forgot() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.forgotten)
}

// Installations.

func (g *pipeGitHub) Installation(id int64) (GitHub, error) {
	if id != hInstall {
		return nil, fmt.Errorf("installation %d: %w", id, ghapp.ErrNotFound)
	}
	return g, nil
}

func (g *pipeGitHub) Token(context.Context, int64, ghapp.Repo) (ghapp.Token, error) {
	return ghapp.Token{Value: "ghs_pipeworld", ExpiresAt: time.Now().Add(time.Hour)}, nil
}

func (g *pipeGitHub) Identity(context.Context) (ghapp.Identity, error) {
	return ghapp.Identity{ID: 1, Slug: "agentfix", Name: "agentfix", BotLogin: pipeBot}, nil
}

func (g *pipeGitHub) Forget(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgotten = append(g.forgotten, id)
}

// DefaultBranchFile reads path from main of the world's repository.
func (g *pipeGitHub) DefaultBranchFile(ctx context.Context, _ int64, _ ghapp.Repo, path string) ([]byte, bool, error) {
	if g.git == nil {
		return nil, false, nil
	}
	return g.git.file(ctx, "main", path)
}

// GitHub.

func (g *pipeGitHub) FindComment(_ context.Context, _ ghapp.Repo, number int, marker string) (ghapp.Comment, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("FindComment"); failed != nil {
		return ghapp.Comment{}, false, failed
	}
	for _, c := range g.comments {
		if c.number == number && c.Author == pipeBot && strings.Contains(c.Body, marker) {
			return c.Comment, true, nil
		}
	}
	return ghapp.Comment{}, false, nil
}

func (g *pipeGitHub) CreateComment(_ context.Context, _ ghapp.Repo, number int, body string) (ghapp.Comment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("CreateComment")
	if failed != nil {
		return ghapp.Comment{}, failed
	}
	c := g.addCommentLocked(number, pipeBot, body)
	return c, after
}

func (g *pipeGitHub) EditComment(_ context.Context, _ ghapp.Repo, id int64, body string) (ghapp.Comment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("EditComment")
	if failed != nil {
		return ghapp.Comment{}, failed
	}
	for i := range g.comments {
		if c := &g.comments[i]; c.ID == id {
			c.Body = body
			return c.Comment, after
		}
	}
	return ghapp.Comment{}, apiError(http.MethodPatch, fmt.Sprintf("/repos/%s/issues/comments/%d", hRepo, id), http.StatusNotFound)
}

func (g *pipeGitHub) react(method, what string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault(method)
	if failed != nil {
		return failed
	}
	g.reactions = append(g.reactions, what)
	return after
}

func (g *pipeGitHub) ReactToIssue(_ context.Context, _ ghapp.Repo, number int, content string) error {
	return g.react("ReactToIssue", fmt.Sprintf("%s on issue %d", content, number))
}

func (g *pipeGitHub) ReactToComment(_ context.Context, _ ghapp.Repo, id int64, content string) error {
	return g.react("ReactToComment", fmt.Sprintf("%s on comment %d", content, id))
}

func (g *pipeGitHub) Permission(_ context.Context, _ ghapp.Repo, user string) (ghapp.Permission, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("Permission"); failed != nil {
		return "", failed
	}
	if p, ok := g.permissions[user]; ok {
		return p, nil
	}
	return ghapp.PermissionNone, nil
}

func (g *pipeGitHub) Issue(_ context.Context, _ ghapp.Repo, number int) (ghapp.Issue, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("Issue"); failed != nil {
		return ghapp.Issue{}, failed
	}
	if i, ok := g.issues[number]; ok {
		return *i, nil
	}
	for _, pr := range g.prs {
		if pr.Number == number {
			return ghapp.Issue{Number: number, Title: pr.Title, State: pr.State, Author: pr.Author, IsPullRequest: true}, nil
		}
	}
	return ghapp.Issue{}, apiError(http.MethodGet, fmt.Sprintf("/repos/%s/issues/%d", hRepo, number), http.StatusNotFound)
}

func (g *pipeGitHub) FindPR(_ context.Context, _ ghapp.Repo, branch string) (ghapp.PullRequest, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("FindPR"); failed != nil {
		return ghapp.PullRequest{}, false, failed
	}
	for _, pr := range g.prs {
		if pr.State == "open" && pr.Author == pipeBot && pr.Head == branch {
			return *pr, true, nil
		}
	}
	return ghapp.PullRequest{}, false, nil
}

func (g *pipeGitHub) GetRepository(context.Context, ghapp.Repo) (ghapp.Repository, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("GetRepository"); failed != nil {
		return ghapp.Repository{}, failed
	}
	return ghapp.Repository{ID: 7, Owner: "octo", Name: "widget", FullName: hRepo, DefaultBranch: "main",
		CloneURL: "https://github.example/octo/widget.git", HTMLURL: "https://github.example/octo/widget"}, nil
}

func (g *pipeGitHub) CreatePR(_ context.Context, _ ghapp.Repo, n ghapp.NewPullRequest) (ghapp.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("CreatePR")
	if failed != nil {
		return ghapp.PullRequest{}, failed
	}
	if n.Draft && g.noDrafts {
		return ghapp.PullRequest{}, ghapp.ErrDraftUnsupported
	}
	g.number++
	pr := &ghapp.PullRequest{Number: g.number, Title: n.Title, Body: n.Body, State: "open", Draft: n.Draft,
		Author: pipeBot, Head: n.Head, Base: n.Base, HTMLURL: g.url(g.number)}
	g.prs = append(g.prs, pr)
	return *pr, after
}

func (g *pipeGitHub) UpdatePR(_ context.Context, _ ghapp.Repo, number int, u ghapp.PullRequestUpdate) (ghapp.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("UpdatePR")
	if failed != nil {
		return ghapp.PullRequest{}, failed
	}
	for _, pr := range g.prs {
		if pr.Number != number {
			continue
		}
		if u.Title != nil {
			pr.Title = *u.Title
		}
		if u.Body != nil {
			pr.Body = *u.Body
		}
		if u.State != nil {
			pr.State = *u.State
		}
		return *pr, after
	}
	return ghapp.PullRequest{}, apiError(http.MethodPatch, fmt.Sprintf("/repos/%s/pulls/%d", hRepo, number), http.StatusNotFound)
}

func (g *pipeGitHub) RequestReviewers(_ context.Context, _ ghapp.Repo, number int, users ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("RequestReviewers")
	if failed != nil {
		return failed
	}
	g.reviewers[number] = append(g.reviewers[number], users...)
	return after
}

func (g *pipeGitHub) AddLabels(context.Context, ghapp.Repo, int, ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, _ := g.fault("AddLabels") // no repository of the world configures labels
	return failed
}

func (g *pipeGitHub) CreateCheckRun(_ context.Context, _ ghapp.Repo, n ghapp.NewCheckRun) (ghapp.CheckRun, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("CreateCheckRun")
	if failed != nil {
		return ghapp.CheckRun{}, failed
	}
	r := &ghapp.CheckRun{ID: int64(len(g.checkRuns) + 1), Name: n.Name, HeadSHA: n.HeadSHA, Status: n.Status,
		ExternalID: n.ExternalID, Title: n.Title, Summary: n.Summary}
	g.checkRuns = append(g.checkRuns, r)
	return *r, after
}

func (g *pipeGitHub) UpdateCheckRun(_ context.Context, _ ghapp.Repo, id int64, u ghapp.CheckRunUpdate) (ghapp.CheckRun, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("UpdateCheckRun")
	if failed != nil {
		return ghapp.CheckRun{}, failed
	}
	for _, r := range g.checkRuns {
		if r.ID != id {
			continue
		}
		// As GitHub: empty fields are left as they are; a conclusion
		// completes the run.
		if u.Status != "" {
			r.Status = u.Status
		}
		if u.Conclusion != "" {
			r.Status, r.Conclusion = "completed", u.Conclusion
		}
		if u.Title != "" {
			r.Title, r.Summary = u.Title, u.Summary
		}
		return *r, after
	}
	return ghapp.CheckRun{}, apiError(http.MethodPatch, fmt.Sprintf("/repos/%s/check-runs/%d", hRepo, id), http.StatusNotFound)
}

// ---- the repository ----

// bareCache is the host's repository cache in the pipeline world: one
// bare repository that is the git server's and the cache's at once.
// Fetch lists its branches, Checkout makes a working copy of it, Push
// pushes a working copy's commit into it and records the pushes that moved
// a branch; failPushes makes the next pushes fail.
type bareCache struct {
	bare string

	mu       sync.Mutex
	fetches  int
	pushes   []string // "branch commit" of each push that moved a branch
	tries    int      // every push, failed or not
	failures int      // pushes still to fail
}

var _ RepoCache = (*bareCache)(nil)

// newBareCache makes the bare repository with files on main.
func newBareCache(t *testing.T, files map[string]string) *bareCache {
	t.Helper()
	c := &bareCache{bare: filepath.Join(t.TempDir(), "widget.git")}
	work := t.TempDir()
	for name, body := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", c.bare},
		{"-C", work, "init", "--quiet", "--initial-branch=main"},
		{"-C", work, "add", "-A"},
		{"-C", work, "commit", "--quiet", "-m", "Initial commit"},
		{"-C", work, "push", "--quiet", c.bare, "main"},
	} {
		if _, err := gitIn(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// gitIn runs git with args, without the host's configuration or hooks,
// as Carol.
func gitIn(ctx context.Context, args ...string) (string, error) {
	return gitAs(ctx, "Carol", "carol@example.com", args...)
}

// gitBytes is gitIn with git's output as it is.
func gitBytes(ctx context.Context, args ...string) ([]byte, error) {
	return gitOutput(ctx, "Carol", "carol@example.com", args...)
}

// gitAs is gitIn as the person name with email.
func gitAs(ctx context.Context, name, email string, args ...string) (string, error) {
	out, err := gitOutput(ctx, name, email, args...)
	return strings.TrimSpace(string(out)), err
}

// gitOutput is gitAs with git's output as it is.
func gitOutput(ctx context.Context, name, email string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email, "GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.Bytes(), nil
}

func (c *bareCache) Fetch(ctx context.Context, _ string, _ workspace.Remote) (workspace.Fetched, error) {
	c.mu.Lock()
	c.fetches++
	c.mu.Unlock()
	out, err := gitIn(ctx, "--git-dir="+c.bare, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
	if err != nil {
		return workspace.Fetched{}, err
	}
	branches := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, commit, ok := strings.Cut(line, " "); ok {
			branches[name] = commit
		}
	}
	return workspace.Fetched{Dir: c.bare, Branches: branches}, nil
}

func (c *bareCache) Checkout(ctx context.Context, _ string, commit string, o workspace.WorkTreeOptions) (*workspace.WorkTree, error) {
	return workspace.NewWorkTreeFromBare(ctx, c.bare, commit, o)
}

// Push pushes p.Commit from the working copy's private git dir to p.Branch
// of the bare repository.
func (c *bareCache) Push(ctx context.Context, _ string, w *workspace.WorkTree, p workspace.PushOptions) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tries++
	if c.failures > 0 {
		c.failures--
		return fmt.Errorf("push %s: the git server answered 502 Bad Gateway", p.Branch)
	}
	before, _ := c.branchLocked(ctx, p.Branch)
	spec := p.Commit + ":refs/heads/" + p.Branch
	if p.Force {
		spec = "+" + spec
	}
	if _, err := gitIn(ctx, "--git-dir="+w.GitDir(), "push", "--quiet", c.bare, spec); err != nil {
		if strings.Contains(err.Error(), "non-fast-forward") || strings.Contains(err.Error(), "fetch first") {
			return fmt.Errorf("push %s: %w (%w)", p.Branch, workspace.ErrNonFastForward, err)
		}
		return err
	}
	if before != p.Commit {
		c.pushes = append(c.pushes, p.Branch+" "+p.Commit)
	}
	return nil
}

// commit commits files (path to content, over what branch has) on branch
// of the bare repository, as a person pushing.
func (c *bareCache) commit(t *testing.T, branch string, files map[string]string, message string) {
	t.Helper()
	c.commitAs(t, branch, files, message, "Carol", "carol@example.com")
}

// commitAs is commit by the person name with email; a branch that does
// not exist yet starts from main. It returns the new commit.
func (c *bareCache) commitAs(t *testing.T, branch string, files map[string]string, message, name, email string) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	work := filepath.Join(t.TempDir(), "work")
	from := branch
	if _, ok := c.branchLocked(t.Context(), branch); !ok {
		from = "main"
	}
	if _, err := gitIn(t.Context(), "clone", "--quiet", "--branch", from, c.bare, work); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-C", work, "add", "-A"},
		{"-C", work, "commit", "--quiet", "-m", message},
		{"-C", work, "push", "--quiet", "origin", "HEAD:refs/heads/" + branch},
	} {
		if _, err := gitAs(t.Context(), name, email, args...); err != nil {
			t.Fatal(err)
		}
	}
	sha, _ := c.branchLocked(t.Context(), branch)
	return sha
}

// file returns path on branch of the bare repository, if it is there.
func (c *bareCache) file(ctx context.Context, branch, path string) ([]byte, bool, error) {
	if _, err := gitIn(ctx, "--git-dir="+c.bare, "cat-file", "-e", branch+":"+path); err != nil {
		return nil, false, nil
	}
	out, err := gitBytes(ctx, "--git-dir="+c.bare, "cat-file", "blob", branch+":"+path)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// failPushes makes the next n pushes fail.
func (c *bareCache) failPushes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures += n
}

func (c *bareCache) counts() (fetches, tries int, pushes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches, c.tries, slices.Clone(c.pushes)
}

// branch returns the commit of branch, if there is one.
func (c *bareCache) branch(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.branchLocked(context.Background(), name)
}

func (c *bareCache) branchLocked(ctx context.Context, name string) (string, bool) {
	out, err := gitIn(ctx, "--git-dir="+c.bare, "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	return out, err == nil
}
