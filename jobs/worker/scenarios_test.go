package worker

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// The scenarios of a job as a whole, in the pipeline world
// (pipeworld_test.go): how the steps compose, run by the handlers or by
// the whole worker with asynq's servers.

// await waits for ch or fails the test.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-nearDeadline(t):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestRequesterWithoutWriteAccess: a label, then a command, by someone
// with read access get their 👀 and one refusal between the notices and
// the job (the job checks again when it started before its notice
// removed it); nothing is cloned, no model called, no pull request opened.
func TestRequesterWithoutWriteAccess(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.setPermission("mallory", ghapp.PermissionRead)
	w := p.worker()
	p.label(w, "mallory")
	job := p.command(w, "mallory", "please do it anyway")
	if err := w.handleFix(t.Context(), job); !errors.Is(err, asynq.SkipRetry) {
		t.Errorf("the fix job of a requester without write access = %v, want it ended for good", err)
	}
	if st := p.taskState(); st != "" {
		t.Errorf("fix task state = %q, want it removed by the notices", st)
	}
	refusals := p.gh.commentsWith(p.issue, "only people with write access")
	if len(refusals) != 1 || !strings.Contains(refusals[0].Body, "@mallory") {
		t.Errorf("refusals = %+v, want exactly one to @mallory", refusals)
	}
	if n := len(p.gh.botComments(p.issue)); n != 1 {
		t.Errorf("bot comments = %d, want only the refusal", n)
	}
	if n := len(p.gh.allReactions()); n != 2 {
		t.Errorf("reactions = %q, want 👀 on the label and the comment", p.gh.allReactions())
	}
	if fetches, _, _ := p.git.counts(); fetches != 0 {
		t.Errorf("fetches = %d, want none (no clone)", fetches)
	}
	if len(p.gh.botPRs()) != 0 || p.model.calls() != 0 {
		t.Errorf("PRs %d, model calls %d; want none", len(p.gh.botPRs()), p.model.calls())
	}
}

// TestSameIssueTwiceThenAgain: the life of the issue's asynq task id — a
// trigger while the task is active gets "already working" with the link
// its payload leads to; one after the task completed replaces it — and the
// hand-over of the work to the pull request's revise task through the
// agent queue.
func TestSameIssueTwiceThenAgain(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	release := make(chan struct{})
	reached := make(chan struct{})
	script := fixScript(t.TempDir())
	script[0].before = func() { close(reached) }
	script[0].block = release
	p.model.add(script...)
	p.start(p.worker())
	p.enqueue(p.labeled(hRequester))
	await(t, reached, "the first job's agent")

	// A second trigger while the job runs: "already working" with a link.
	p.issueCommand(hRequester, "")
	p.waitForComments("the already-working reply", p.issue, "already working", 1)
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	if reply := p.gh.commentsWith(p.issue, "already working")[0]; !strings.Contains(reply.Body, status[0].HTMLURL) {
		t.Errorf("already-working reply lacks the status comment link %s:\n%s", status[0].HTMLURL, reply.Body)
	}
	close(release)
	p.waitFor("the first job to end", func() bool {
		return len(p.gh.commentsWith(p.issue, "agentfix:final")) == 1 && p.taskState() == "completed"
	})
	branch := p.botBranch()
	first := p.git.headCommit(t, branch)

	// A trigger after the job ended runs again, on the same branch and PR:
	// as a round of the PR's revise task.
	p.model.add(edit("README.md", "# widget", "# widget\n\nAdd adds."), submit("Documented Add."), submit(""))
	p.issueCommand(hRequester, "document it too")
	prs := p.gh.botPRs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1", len(prs))
	}
	pr := prs[0].Number
	p.waitForComments("the round's reply on the PR", pr, "agentfix:final revise:", 1)
	second := p.git.headCommit(t, branch)
	if len(second.Parents) != 1 || second.Parents[0] != first.SHA {
		t.Errorf("second commit's parents = %v, want the first commit %s (no force push)", second.Parents, first.SHA)
	}
	if calc, readme := p.file(branch, "calc.go"), p.file(branch, "README.md"); !strings.Contains(calc, "a + b") || !strings.Contains(readme, "Add adds.") {
		t.Errorf("branch files calc.go:\n%s\nREADME.md:\n%s\nwant both rounds' changes", calc, readme)
	}
	if reply := p.gh.commentsWith(pr, "agentfix:final revise:")[0]; !strings.Contains(reply.Body, "@alice, I pushed `"+second.SHA[:12]+"` to this pull request.") {
		t.Errorf("round reply on the PR:\n%s", reply.Body)
	}
	status = p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 2 || !strings.Contains(status[1].Body, "➡️ **Continuing on #2**") {
		t.Errorf("status comments on the issue = %+v, want the second saying the work moved to #2", status)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:final")); n != 1 {
		t.Errorf("final comments on the issue = %d, want only the first job's", n)
	}
}

// TestShutdownMidJobThenRetry: asynq's shutdown puts the running task
// back, and a new worker's servers take it: the retry finishes the job in
// the same status comment.
func TestShutdownMidJobThenRetry(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	reached := make(chan struct{})
	p.model.add(bash("ls"), turn{before: func() { close(reached) }, block: make(chan struct{})})
	p.model.add(fixScript(t.TempDir())...)
	stop := p.start(p.worker())
	p.enqueue(p.labeled(hRequester))
	await(t, reached, "the agent's second step")
	stop()
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "Interrupted") {
		t.Fatalf("after the shutdown the status comments are %+v, want one saying Interrupted", status)
	}
	if st := p.taskState(); st != "pending" {
		t.Errorf("task state after the shutdown = %q, want pending (put back by asynq)", st)
	}

	p.start(p.worker())
	p.waitForComments("the retried job's final comment", p.issue, "agentfix:final", 1)
	again := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(again) != 1 || again[0].ID != status[0].ID || !strings.Contains(again[0].Body, "Done") {
		t.Errorf("status comments after the retry = %+v, want the same comment, done", again)
	}
	if n := len(p.gh.botPRs()); n != 1 {
		t.Errorf("pull requests = %d, want 1", n)
	}
	if p.model.calls() != 7 {
		t.Errorf("model calls = %d, want 2 before the shutdown and 5 after", p.model.calls())
	}
}

// TestGitHubFailuresAfterTheAgent: the pull request creation fails (502,
// ghapp's own tries spent) after GitHub created it; the retry, by a new worker, publishes the saved result
// without running the agent again and finds its branch, status comment and
// pull request, and fails on the final comment; the retry after that posts
// it.
func TestGitHubFailuresAfterTheAgent(t *testing.T) {
	t.Parallel()
	script := fixScript(t.TempDir())
	p := newPipeWorld(t)
	script[4].before = func() {
		p.gh.failAfterEffect("CreatePR", apiError(http.MethodPost, "/repos/octo/widget/pulls", http.StatusBadGateway))
		p.gh.failNext("CreateComment", 1, apiError(http.MethodPost, "/repos/octo/widget/issues/1/comments", http.StatusBadGateway))
	}
	p.model.add(script...)
	w := p.worker()
	task := p.label(w, hRequester)
	if err := w.handleFix(t.Context(), task); isFinal(err) {
		t.Fatalf("the attempt whose pull request creation failed = %v, want it retried", err)
	}
	if n, f := len(p.gh.botPRs()), p.gh.pendingFaults(); n != 1 || f != 1 {
		t.Fatalf("after the first attempt: pull requests %d, faults to come %d; want 1 and 1 (the final comment's)", n, f)
	}
	// Each retry is a new worker's: what an attempt did is in Redis and on
	// GitHub, not in the worker.
	if err := p.worker().handleFix(t.Context(), task); isFinal(err) || p.gh.pendingFaults() != 0 {
		t.Fatalf("the attempt whose final comment failed = %v (%d faults to come), want it retried", err, p.gh.pendingFaults())
	}
	if err := p.worker().handleFix(t.Context(), task); err != nil {
		t.Fatalf("the last retry = %v, want success\nlogs:\n%s", err, tail(p.logs.String(), 6000))
	}
	if n := p.gh.pendingFaults(); n != 0 {
		t.Errorf("%d faults did not fire", n)
	}
	if n := p.model.calls(); n != 5 {
		t.Errorf("model calls = %d, want 5: the agent ran once", n)
	}
	if n := len(p.gh.botPRs()); n != 1 {
		t.Errorf("pull requests = %d, want 1", n)
	}
	if _, _, pushes := p.git.counts(); len(pushes) != 1 {
		t.Errorf("pushes that moved the branch = %q, want 1 (the retries' commit is the same, already there)", pushes)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:status")); n != 1 {
		t.Errorf("status comments = %d, want 1", n)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:final")); n != 1 {
		t.Errorf("final comments = %d, want 1", n)
	}
	if list := p.runList(); len(list) != 1 || list[0].Status != string(outcome.PROpened) {
		t.Errorf("runs = %+v; want the one run, pr_opened", list)
	}
}

// TestRateLimitedComment: the job got to its status comment before its
// notice, and GitHub's rate limit outlasted ghapp's wait for it (ghapp's
// TestRateLimitsAreWaitedFor shows the wait for a Retry-After); the attempt
// is retried with the rate limit as its error, and nothing is lost or
// doubled: one status comment, one pull request, one final comment.
func TestRateLimitedComment(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t, fixScript(t.TempDir())...)
	limit := &ghapp.RateLimitError{Reset: time.Now().Add(time.Minute)}
	p.gh.failNext("CreateComment", 1, limit)
	w := p.worker()
	fi := p.labeled(hRequester)
	task := p.enqueue(fi)
	err := w.handleFix(t.Context(), task)
	var rl *ghapp.RateLimitError
	if isFinal(err) || !errors.As(err, &rl) {
		t.Fatalf("the rate-limited attempt = %v, want it retried with the rate limit", err)
	}
	p.runNotice(w, fi.DeliveryID)
	if err := w.handleFix(t.Context(), task); err != nil {
		t.Fatalf("the retry = %v, want success\nlogs:\n%s", err, tail(p.logs.String(), 6000))
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:status")); n != 1 {
		t.Errorf("status comments = %d, want 1 (nothing lost, nothing doubled)", n)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:final")); n != 1 {
		t.Errorf("final comments = %d, want 1", n)
	}
	if n := len(p.gh.botPRs()); n != 1 {
		t.Errorf("pull requests = %d, want 1", n)
	}
	if n := p.model.calls(); n != 5 {
		t.Errorf("model calls = %d, want 5: the agent ran once", n)
	}
}

// stopMidRun starts a job whose agent blocks in its second step, with an
// asynq server (a running task is what a stop or a cancel finds and
// cancels), calls stop, and waits until the task ends for good.
func stopMidRun(t *testing.T, p *pipeWorld, w *Worker, stop func()) {
	t.Helper()
	reached := make(chan struct{})
	p.model.add(fixCalc(), turn{before: func() { close(reached) }, block: make(chan struct{})})
	p.label(w, hRequester)
	attempts := p.serve(w)
	await(t, reached, "the agent's second step")
	stop()
	if err := p.nextAttempt(attempts, "the stopped attempt to return"); !isFinal(err) {
		t.Errorf("the stopped attempt = %v, want it ended for good", err)
	}
	p.waitFor("the task to end for good", func() bool { return p.taskState() == "archived" })
	if n := len(p.gh.botPRs()); n != 0 {
		t.Errorf("pull requests = %d, want none", n)
	}
	if _, ok := p.git.branch("agent-fix/issue-1"); ok {
		t.Errorf("the branch was pushed")
	}
	if list := p.runList(); len(list) != 1 || list[0].Status != string(outcome.Cancelled) {
		t.Errorf("runs = %+v; want one cancelled", list)
	}
	if n := p.model.calls(); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

func TestIssueClosedMidRun(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker()
	stopMidRun(t, p, w, func() {
		p.gh.closeIssue(p.issue)
		p.cancel(w, jobs.Cancel{Installation: hInstall, Reason: jobs.CancelIssueClosed, Repos: []jobs.Repo{p.repo()}, Number: p.issue})
	})
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "🛑 **Stopped**: the issue was closed.") {
		t.Errorf("status comments = %+v, want one saying the issue was closed", status)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:final")); n != 0 {
		t.Errorf("final comments = %d, want none on a closed issue", n)
	}
}

func TestStopCommand(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.setPermission("bob", ghapp.PermissionWrite)
	w := p.worker()
	stopMidRun(t, p, w, func() { p.notice(w, p.issue, "bob", "/agent-fix stop", jobs.OutcomeStop) })
	final := p.gh.commentsWith(p.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "@alice, @bob stopped this run; no pull request was opened.") {
		t.Errorf("final comments = %+v, want one naming bob", final)
	}
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "Stopped** by @bob.") {
		t.Errorf("status comments = %+v, want stopped by bob", status)
	}
}

func TestInstallationDeletedMidRun(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker()
	stopMidRun(t, p, w, func() {
		p.cancel(w, jobs.Cancel{Installation: hInstall, Reason: jobs.CancelInstallationDeleted})
	})
	if got := p.gh.forgot(); !slices.Equal(got, []int64{hInstall}) {
		t.Errorf("installations forgotten = %v, want [%d]", got, hInstall)
	}
}

// TestIncompleteRunOpensDraft: a run the step limit ended with a change
// opens a draft pull request saying it is incomplete and why, or, where
// GitHub refuses drafts, a regular one titled "[incomplete] …"; its check
// run is neutral and the final comment says the change is marked
// incomplete.
func TestIncompleteRunOpensDraft(t *testing.T) {
	t.Parallel()
	for _, drafts := range []bool{true, false} {
		t.Run(fmt.Sprintf("drafts %v", drafts), func(t *testing.T) {
			t.Parallel()
			p := newPipeWorld(t, fixCalc(), bash("ls"), bash("cat calc.go"))
			p.gh.noDrafts = !drafts
			p.cfg.MaxSteps = 3
			w := p.worker()
			if err := w.handleFix(t.Context(), p.label(w, hRequester)); err != nil {
				t.Fatalf("fix job: %v, want success\nlogs:\n%s", err, tail(p.logs.String(), 6000))
			}
			prs := p.gh.botPRs()
			if len(prs) != 1 {
				t.Fatalf("pull requests = %d, want 1", len(prs))
			}
			wantTitle := "Fix #1: Add subtracts"
			if !drafts {
				wantTitle = "[incomplete] " + wantTitle
			}
			if prs[0].Draft != drafts || prs[0].Title != wantTitle {
				t.Errorf("PR draft %v title %q, want draft %v title %q", prs[0].Draft, prs[0].Title, drafts, wantTitle)
			}
			if !strings.Contains(prs[0].Body, "This change is incomplete") || !strings.Contains(prs[0].Body, "step limit reached: 3 of 3 steps") {
				t.Errorf("PR body does not say it is incomplete and why:\n%s", prs[0].Body)
			}
			if got := p.gh.requestedReviewers(prs[0].Number); !slices.Equal(got, []string{hRequester}) {
				t.Errorf("review requested of %q, want the requester", got)
			}
			checks := p.gh.allCheckRuns()
			if len(checks) != 1 || checks[0].Conclusion != "neutral" {
				t.Errorf("check runs = %+v, want one neutral", checks)
			}
			final := p.gh.commentsWith(p.issue, "agentfix:final")
			if len(final) != 1 || !strings.Contains(final[0].Body, "marked incomplete") {
				t.Errorf("final comments = %+v, want one saying the change is marked incomplete", final)
			}
		})
	}
}

// TestNoPullRequest: a run that ends without a change to offer, or with
// one the bot may not push, or a closed issue, ends with a word saying why
// (with the agent's change when there is one) and a status comment in a
// final state; nothing is pushed.
func TestNoPullRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(p *pipeWorld)
		script []turn
		want   string // in the final comment (or the reply)
		patch  bool   // the final comment shows the agent's change
	}{
		{
			name:   "limit without a change",
			setup:  func(p *pipeWorld) { p.cfg.MaxSteps = 2 },
			script: []turn{bash("ls"), bash("cat calc.go")},
			want:   "I did not open a pull request: the agent reached a limit before it had a change (step limit reached: 2 of 2 steps).",
		},
		{
			name:   "workflow change",
			setup:  func(p *pipeWorld) { p.cfg.MaxSteps = 2 },
			script: []turn{bash("echo '  workflow_dispatch:' >> .github/workflows/ci.yml"), bash("ls")},
			want:   "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository.",
			patch:  true,
		},
		{
			name:  "closed issue",
			setup: func(p *pipeWorld) { p.gh.closeIssue(p.issue) },
			want:  "this issue is closed, so I am not working on it.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeWorld(t, tt.script...)
			tt.setup(p)
			w := p.worker()
			if err := w.handleFix(t.Context(), p.label(w, hRequester)); !isFinal(err) {
				t.Fatalf("fix job = %v, want it ended for good\nlogs:\n%s", err, tail(p.logs.String(), 6000))
			}
			var answers []ghapp.Comment
			for _, c := range p.gh.commentsWith(p.issue, tt.want) {
				if !strings.Contains(c.Body, "agentfix:status") {
					answers = append(answers, c)
				}
			}
			if len(answers) != 1 {
				t.Fatalf("answers with %q = %+v, want 1", tt.want, answers)
			}
			if n := len(p.gh.botPRs()); n != 0 {
				t.Errorf("pull requests = %d, want none", n)
			}
			if _, ok := p.git.branch("agent-fix/issue-1"); ok {
				t.Errorf("the branch was pushed")
			}
			if got := strings.Contains(answers[0].Body, "The agent's change"); got != tt.patch {
				t.Errorf("final comment shows the agent's change: %v, want %v:\n%s", got, tt.patch, answers[0].Body)
			}
			status := p.gh.commentsWith(p.issue, "agentfix:status")
			if len(status) != 1 {
				t.Errorf("status comments = %d, want 1", len(status))
			}
			for _, c := range status {
				if !strings.Contains(c.Body, "Stopped") && !strings.Contains(c.Body, "Failed") {
					t.Errorf("the status comment is not in a final state:\n%s", c.Body)
				}
			}
		})
	}
}

// TestGivesUpAfterTheLastAttempt: GitHub fails the same call on every
// attempt of the job (asynq's attempts: the count is in the handler's
// context, so an asynq server runs them); after the last one the status
// comment and a final comment say so instead of showing a phase forever,
// without GitHub's answer.
func TestGivesUpAfterTheLastAttempt(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.failNext("GetRepository", jobs.AgentMaxRetry+1, apiError(http.MethodGet, "/repos/octo/widget", http.StatusInternalServerError))
	w := p.worker()
	p.label(w, hRequester)
	attempts := p.serve(w)
	for i := range jobs.AgentMaxRetry + 1 {
		err := p.nextAttempt(attempts, fmt.Sprintf("attempt %d", i+1))
		if last := i == jobs.AgentMaxRetry; isFinal(err) != last {
			t.Errorf("attempt %d = %v; want it final only on the last attempt", i+1, err)
		}
	}
	p.waitFor("the task to be archived", func() bool { return p.taskState() == "archived" })
	final := p.gh.commentsWith(p.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "an internal error stopped the job after 3 attempts") {
		t.Fatalf("final comments = %+v, want one giving up after 3 attempts", final)
	}
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "❌ **Failed**") {
		t.Errorf("status comments = %+v, want one saying it failed", status)
	}
	if p.model.calls() != 0 || len(p.gh.botPRs()) != 0 {
		t.Errorf("model calls %d, PRs %d; want none", p.model.calls(), len(p.gh.botPRs()))
	}
	if strings.Contains(final[0].Body, "500") || strings.Contains(final[0].Body, "GET") {
		t.Errorf("the final comment shows internal detail:\n%s", final[0].Body)
	}
}

// TestPushFailsForGood: every push fails (workspace's
// TestPushRetriesPerCall shows the tries within one push); when the last
// attempt gives up the agent's change is not lost: the final comment
// carries it and the run record keeps it. The agent ran once.
func TestPushFailsForGood(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t, fixScript(t.TempDir())...)
	p.git.failPushes(jobs.AgentMaxRetry + 1)
	w := p.worker()
	p.label(w, hRequester)
	attempts := p.serve(w)
	for i := range jobs.AgentMaxRetry + 1 {
		p.nextAttempt(attempts, fmt.Sprintf("attempt %d", i+1))
	}
	p.waitFor("the task to be archived", func() bool { return p.taskState() == "archived" })
	final := p.gh.commentsWith(p.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "after the agent finished; its change is below") ||
		!strings.Contains(final[0].Body, "+\treturn a + b") {
		t.Fatalf("final comments = %+v, want one with the agent's change", final)
	}
	if p.model.calls() != 5 || len(p.gh.botPRs()) != 0 {
		t.Errorf("model calls %d, PRs %d; want 5 (one run) and none", p.model.calls(), len(p.gh.botPRs()))
	}
	list := p.runList()
	if len(list) != 1 || list[0].Status != string(outcome.Failed) {
		t.Fatalf("runs = %+v; want the one run, failed", list)
	}
	run, err := p.runs.Get(t.Context(), list[0].RunID)
	if err != nil || !strings.Contains(run.Patch, "+\treturn a + b") {
		t.Errorf("the run record's patch = %q, %v; want the agent's change", run.Patch, err)
	}
	if _, tries, pushes := p.git.counts(); tries != jobs.AgentMaxRetry+1 || len(pushes) != 0 {
		t.Errorf("pushes tried %d, landed %q; want one try per attempt, none landed", tries, pushes)
	}
}

// TestInteractiveReplies: help (once per user per issue in ten minutes),
// a stop with nothing running, and a command on a person's pull request
// get their 👀 and a reply each; no job, no model call.
func TestInteractiveReplies(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.setPermission("dave", ghapp.PermissionRead)
	pr := p.gh.addPR("A person's PR", "feature", "erin")
	w := p.worker()
	p.notice(w, p.issue, "dave", "/agent-fix help", jobs.OutcomeHelp)
	p.notice(w, p.issue, "dave", "/agent-fix help", jobs.OutcomeHelp)
	p.notice(w, p.issue, hRequester, "/agent-fix stop", jobs.OutcomeStop)
	p.notice(w, pr, hRequester, "/agent-fix please rename x", jobs.OutcomeNotBotsPR)
	if n := len(p.gh.allReactions()); n != 4 {
		t.Errorf("reactions = %q, want 👀 on the four comments", p.gh.allReactions())
	}
	if n, m := len(p.gh.botComments(p.issue)), len(p.gh.botComments(pr)); n != 2 || m != 1 {
		t.Errorf("bot comments on the issue %d, on the PR %d; want 2 and 1", n, m)
	}
	for _, c := range []struct {
		number int
		want   string
		count  int
	}{
		{p.issue, "@dave, I am **agentfix**", 1}, // the second help within 10 minutes is not answered
		{p.issue, "@alice, nothing is running for this issue, so there is nothing to stop.", 1},
		{pr, "@alice, I only revise pull requests I opened myself.", 1},
	} {
		if got := len(p.gh.commentsWith(c.number, c.want)); got != c.count {
			t.Errorf("comments on #%d with %q = %d, want %d", c.number, c.want, got, c.count)
		}
	}
	if p.taskState() != "" || p.model.calls() != 0 {
		t.Errorf("a job was queued (%q) or the model called (%d)", p.taskState(), p.model.calls())
	}
}

// TestStopWhileWaiting stops a job that waits for an agent slot: it is
// removed before it starts, and its status comment says who stopped it;
// the other issue's job stays.
func TestStopWhileWaiting(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker()
	first := p.issue
	p.label(w, hRequester)
	p.issue = p.gh.addIssue("Second", "another bug")
	p.label(w, hRequester)
	if n := len(p.gh.commentsWith(p.issue, "⏳ **Queued**")); n != 1 {
		t.Fatalf("the second job's queued status comments = %d, want 1", n)
	}
	if st := p.taskState(); st != "pending" {
		t.Fatalf("second task state = %q, want pending", st)
	}
	p.gh.setPermission("bob", ghapp.PermissionWrite)
	p.notice(w, p.issue, "bob", "/agent-fix stop", jobs.OutcomeStop)
	if n := len(p.gh.commentsWith(p.issue, "🛑 **Stopped** by @bob: before it started.")); n != 1 {
		t.Errorf("status comments saying bob stopped the second job before it started = %d, want 1", n)
	}
	if st := p.taskState(); st != "" {
		t.Errorf("second task state = %q, want it deleted", st)
	}
	if n := len(p.gh.commentsWith(first, "Stopped")); n != 0 {
		t.Errorf("the first job was stopped too")
	}
	p.issue = first
	if st := p.taskState(); st != "pending" {
		t.Errorf("first task state = %q, want it pending still", st)
	}
}
