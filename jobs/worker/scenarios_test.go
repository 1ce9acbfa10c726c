package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/hibiken/asynq"
)

// gitCalls counts the requests the fake's git server got.
func gitCalls(f *ghfake.Fake) int {
	n := 0
	for _, c := range f.Calls() {
		if strings.HasPrefix(c.Path, "/git/") {
			n++
		}
	}
	return n
}

// await waits for ch or fails the test.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-nearDeadline(t):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestRequesterWithoutWriteAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.SetPermission(hRepo, "mallory", "read")
	h.startWorker()
	h.label("mallory")
	h.comment("mallory", "/agent-fix please do it anyway")
	h.waitFor("both notices, the refusal and the job to end", func() bool {
		st := h.taskState()
		return len(h.f.Reactions(hRepo)) == 2 && len(h.commentsWith(h.issue, "only people with write access")) > 0 && (st == "" || st == "archived")
	})
	refusals := h.commentsWith(h.issue, "only people with write access")
	if len(refusals) != 1 || !strings.Contains(refusals[0].Body, "@mallory") {
		t.Errorf("refusals = %+v, want exactly one to @mallory", refusals)
	}
	if n := len(h.botComments(h.issue)); n != 1 {
		t.Errorf("bot comments = %d, want only the refusal", n)
	}
	if n := gitCalls(h.f); n != 0 {
		t.Errorf("the git server got %d requests, want none (no clone)", n)
	}
	if len(h.prs()) != 0 || h.model.calls() != 0 {
		t.Errorf("PRs %d, model calls %d; want none", len(h.prs()), h.model.calls())
	}
}

func TestSameIssueTwiceThenAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	release := make(chan struct{})
	reached := make(chan struct{})
	script := fixScript(h.markers)
	script[0].before = func() { close(reached) }
	script[0].block = release
	h.model.add(script...)
	h.startWorker()
	h.label(hRequester)
	await(t, reached, "the first job's agent")

	// A second trigger while the job runs: "already working" with a link.
	h.comment(hRequester, "/agent-fix")
	h.waitForComments("the already-working reply", h.issue, "already working", 1)
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	link := fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", h.f.URL(), hRepo, h.issue, status[0].ID)
	if reply := h.commentsWith(h.issue, "already working")[0]; !strings.Contains(reply.Body, link) {
		t.Errorf("already-working reply lacks the status comment link %s:\n%s", link, reply.Body)
	}
	close(release)
	h.waitFor("the first job to end", func() bool {
		return len(h.commentsWith(h.issue, "agentfix:final")) == 1 && h.taskState() == "completed"
	})
	first := h.f.HeadCommit(hRepo, "agent-fix/issue-1")

	// A trigger after the job ended runs again, on the same branch and PR:
	// as a round of the PR's revise task.
	h.model.add(
		turn{calls: []call{{"str_replace_editor", map[string]string{"command": "str_replace", "path": "README.md", "old_str": "# widget", "new_str": "# widget\n\nAdd adds."}}}},
		submit("Documented Add."), submit(""),
	)
	h.comment(hRequester, "/agent-fix document it too")
	prs := h.prs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1", len(prs))
	}
	pr := prs[0].Number
	h.waitForComments("the round's reply on the PR", pr, "agentfix:final revise:", 1)
	second := h.f.HeadCommit(hRepo, "agent-fix/issue-1")
	if len(second.Parents) != 1 || second.Parents[0] != first.SHA {
		t.Errorf("second commit's parents = %v, want the first commit %s (no force push)", second.Parents, first.SHA)
	}
	files := h.f.Files(hRepo, "agent-fix/issue-1")
	if !strings.Contains(files["calc.go"], "a + b") || !strings.Contains(files["README.md"], "Add adds.") {
		t.Errorf("branch files = %v, want both rounds' changes", files)
	}
	if reply := h.commentsWith(pr, "agentfix:final revise:")[0]; !strings.Contains(reply.Body, "@alice, I pushed `"+second.SHA[:12]+"` to this pull request.") {
		t.Errorf("round reply on the PR:\n%s", reply.Body)
	}
	status = h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 2 || !strings.Contains(status[1].Body, "➡️ **Continuing on #2**") {
		t.Errorf("status comments on the issue = %+v, want the second saying the work moved to #2", status)
	}
	if n := len(h.commentsWith(h.issue, "agentfix:final")); n != 1 {
		t.Errorf("final comments on the issue = %d, want only the first job's", n)
	}
}

func TestShutdownMidJobThenRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	reached := make(chan struct{})
	h.model.add(bash("ls"), turn{before: func() { close(reached) }, block: make(chan struct{})})
	h.model.add(fixScript(h.markers)...)
	_, stop := h.startWorker()
	h.label(hRequester)
	await(t, reached, "the agent's second step")
	stop()
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "Interrupted") {
		t.Fatalf("after the shutdown the status comments are %+v, want one saying Interrupted", status)
	}
	if st := h.taskState(); st != "pending" {
		t.Errorf("task state after the shutdown = %q, want pending (put back by asynq)", st)
	}

	h.startWorker()
	h.waitForComments("the retried job's final comment", h.issue, "agentfix:final", 1)
	again := h.commentsWith(h.issue, "agentfix:status")
	if len(again) != 1 || again[0].ID != status[0].ID || !strings.Contains(again[0].Body, "Done") {
		t.Errorf("status comments after the retry = %+v, want the same comment, done", again)
	}
	if len(h.prs()) != 1 {
		t.Errorf("pull requests = %d, want 1", len(h.prs()))
	}
	if h.model.calls() != 7 {
		t.Errorf("model calls = %d, want 2 before the shutdown and 5 after", h.model.calls())
	}
}

// TestGitHubFailuresAfterTheAgent: the pull request creation answers 502
// after creating it, then the final comment fails until the attempt gives
// up; a new worker's retry publishes the saved result without running the
// agent again, and finds its branch, status comment and pull request.
func TestGitHubFailuresAfterTheAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	script := fixScript(h.markers)
	script[4].before = func() {
		h.f.Inject(ghfake.Fault{Method: http.MethodPost, Path: "/repos/*/*/pulls", Status: http.StatusBadGateway, AfterEffect: true})
		for range 3 {
			h.f.FailNext(http.MethodPost, "/repos/*/*/issues/*/comments", http.StatusBadGateway, nil)
		}
	}
	h.model.add(script...)
	// The retry waits until the test lets it run, so the test sees the
	// task between its attempts however fast asynq looks for due tasks.
	_, stop := h.startWorker(func(o *Options) { o.RetryDelay = func(int, error) time.Duration { return time.Hour } })
	h.label(hRequester)
	// The first attempt fails after opening the pull request; its worker
	// goes away and a new one takes the retry.
	h.waitFor("the first attempt to fail", func() bool { return h.taskState() == "retry" })
	if len(h.prs()) != 1 {
		t.Fatalf("pull requests after the first attempt = %d, want 1", len(h.prs()))
	}
	stop()
	if err := asynq.NewInspectorFromRedisClient(h.rdb).RunTask(jobs.QueueAgent, jobs.FixTaskID(hRepo, h.issue)); err != nil {
		t.Fatal(err)
	}
	h.startWorker()
	h.waitFor("the final comment after the retry", func() bool {
		return len(h.commentsWith(h.issue, "agentfix:final")) == 1 && h.taskState() == "completed"
	})
	if h.f.PendingFaults() != 0 {
		t.Errorf("%d faults did not fire", h.f.PendingFaults())
	}
	if n := h.model.calls(); n != 5 {
		t.Errorf("model calls = %d, want 5: the agent ran once", n)
	}
	if n := len(h.prs()); n != 1 {
		t.Errorf("pull requests = %d, want 1", n)
	}
	if n := h.f.CountCalls(http.MethodPost, "/git/octo/widget.git/git-receive-pack"); n != 1 {
		t.Errorf("pushes = %d, want 1 (the retry's commit is the same, already there)", n)
	}
	if n := len(h.commentsWith(h.issue, "agentfix:status")); n != 1 {
		t.Errorf("status comments = %d, want 1", n)
	}
	list, err := h.store.List(t.Context(), 10)
	if err != nil || len(list) != 1 || list[0].Status != string(outcome.PROpened) {
		t.Errorf("runs = %+v, %v; want the one run, pr_opened", list, err)
	}
}

func TestRateLimitedComment(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.FailNext(http.MethodPost, "/repos/*/*/issues/*/comments", http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}})
	h.model.add(fixScript(h.markers)...)
	h.startWorker()
	h.label(hRequester)
	h.waitForComments("the final comment", h.issue, "agentfix:final", 1)
	if !slices.Contains(h.waits.all(), 7*time.Second) {
		t.Errorf("waits = %v, want the 7 s GitHub asked for", h.waits.all())
	}
	if n := len(h.commentsWith(h.issue, "agentfix:status")); n != 1 {
		t.Errorf("status comments = %d, want 1 (nothing lost, nothing doubled)", n)
	}
	if len(h.prs()) != 1 {
		t.Errorf("pull requests = %d, want 1", len(h.prs()))
	}
}

// stopMidRun starts a job whose agent blocks in its second step, calls
// stop, and waits until the task is archived.
func stopMidRun(t *testing.T, h *harness, stop func()) {
	t.Helper()
	reached := make(chan struct{})
	h.model.add(fixCalc(), turn{before: func() { close(reached) }, block: make(chan struct{})})
	h.startWorker()
	h.label(hRequester)
	await(t, reached, "the agent's second step")
	stop()
	h.waitFor("the task to end for good", func() bool { return h.taskState() == "archived" })
	if len(h.prs()) != 0 {
		t.Errorf("pull requests = %d, want none", len(h.prs()))
	}
	if _, ok := h.f.Branch(hRepo, "agent-fix/issue-1"); ok {
		t.Errorf("the branch was pushed")
	}
	list, err := h.store.List(t.Context(), 10)
	if err != nil || len(list) != 1 || list[0].Status != string(outcome.Cancelled) {
		t.Errorf("runs = %+v, %v; want one cancelled", list, err)
	}
	if h.model.calls() != 2 {
		t.Errorf("model calls = %d, want 2", h.model.calls())
	}
}

func TestIssueClosedMidRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	stopMidRun(t, h, h.closeIssue)
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "🛑 **Stopped**: the issue was closed.") {
		t.Errorf("status comments = %+v, want one saying the issue was closed", status)
	}
	if n := len(h.commentsWith(h.issue, "agentfix:final")); n != 0 {
		t.Errorf("final comments = %d, want none on a closed issue", n)
	}
}

func TestStopCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.SetPermission(hRepo, "bob", "maintain")
	stopMidRun(t, h, func() { h.comment("bob", "/agent-fix stop") })
	final := h.commentsWith(h.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "@alice, @bob stopped this run; no pull request was opened.") {
		t.Errorf("final comments = %+v, want one naming bob", final)
	}
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "Stopped** by @bob.") {
		t.Errorf("status comments = %+v, want stopped by bob", status)
	}
}

func TestInstallationDeletedMidRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	stopMidRun(t, h, func() {
		raw, err := os.ReadFile(filepath.Join("testdata", "webhooks", "installation.deleted.json"))
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		p["installation"].(map[string]any)["id"] = hInstall
		h.deliver("installation", p)
	})
}

func TestIncompleteRunOpensDraft(t *testing.T) {
	t.Parallel()
	for _, drafts := range []bool{true, false} {
		t.Run(fmt.Sprintf("drafts %v", drafts), func(t *testing.T) {
			h := newHarness(t)
			if !drafts {
				h.f.DisableDrafts(hRepo)
			}
			h.cfg.MaxSteps = 3
			h.model.add(fixCalc(), bash("ls"), bash("cat calc.go"))
			h.startWorker()
			h.label(hRequester)
			h.waitForComments("the final comment", h.issue, "agentfix:final", 1)
			prs := h.prs()
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
			checks := h.f.CheckRuns(hRepo)
			if len(checks) != 1 || checks[0].Conclusion != "neutral" {
				t.Errorf("check runs = %+v, want one neutral", checks)
			}
			if final := h.commentsWith(h.issue, "agentfix:final")[0]; !strings.Contains(final.Body, "marked incomplete") {
				t.Errorf("final comment:\n%s", final.Body)
			}
		})
	}
}

func TestNoPullRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(h *harness)
		script []turn
		want   string // in the final comment (or the reply)
		patch  bool   // the final comment shows the agent's change
	}{
		{
			name:   "limit without a change",
			setup:  func(h *harness) { h.cfg.MaxSteps = 2 },
			script: []turn{bash("ls"), bash("cat calc.go")},
			want:   "I did not open a pull request: the agent reached a limit before it had a change (step limit reached: 2 of 2 steps).",
		},
		{
			name:   "workflow change",
			setup:  func(h *harness) { h.cfg.MaxSteps = 2 },
			script: []turn{bash("echo '  workflow_dispatch:' >> .github/workflows/ci.yml"), bash("ls")},
			want:   "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository.",
			patch:  true,
		},
		{
			name:  "closed issue",
			setup: func(h *harness) { h.f.CloseIssue(hRepo, h.issue) },
			want:  "this issue is closed, so I am not working on it.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(h)
			h.model.add(tt.script...)
			h.startWorker()
			h.label(hRequester)
			answers := func() []ghfake.Comment {
				var out []ghfake.Comment
				for _, c := range h.commentsWith(h.issue, tt.want) {
					if !strings.Contains(c.Body, "agentfix:status") {
						out = append(out, c)
					}
				}
				return out
			}
			h.waitFor("the answer", func() bool { return len(answers()) == 1 })
			h.waitFor("the task to end", func() bool { st := h.taskState(); return st == "completed" || st == "archived" })
			if len(h.prs()) != 0 {
				t.Errorf("pull requests = %d, want none", len(h.prs()))
			}
			if _, ok := h.f.Branch(hRepo, "agent-fix/issue-1"); ok {
				t.Errorf("the branch was pushed")
			}
			body := answers()[0].Body
			if got := strings.Contains(body, "The agent's change"); got != tt.patch {
				t.Errorf("final comment shows the agent's change: %v, want %v:\n%s", got, tt.patch, body)
			}
			for _, c := range h.commentsWith(h.issue, "agentfix:status") {
				if !strings.Contains(c.Body, "Stopped") && !strings.Contains(c.Body, "Failed") {
					t.Errorf("the status comment is not in a final state:\n%s", c.Body)
				}
			}
		})
	}
}

// TestGivesUpAfterTheLastAttempt: GitHub fails the same call on every
// attempt of the job; after the last one the status comment and a final
// comment say so instead of showing a phase forever.
func TestGivesUpAfterTheLastAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for range 9 { // 3 calls of 3 attempts each
		h.f.FailNext(http.MethodGet, "/repos/*/*", http.StatusInternalServerError, nil)
	}
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the task to be archived", func() bool { return h.taskState() == "archived" })
	final := h.commentsWith(h.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "an internal error stopped the job after 3 attempts") {
		t.Fatalf("final comments = %+v, want one giving up after 3 attempts", final)
	}
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "❌ **Failed**") {
		t.Errorf("status comments = %+v, want one saying it failed", status)
	}
	if h.model.calls() != 0 || len(h.prs()) != 0 {
		t.Errorf("model calls %d, PRs %d; want none", h.model.calls(), len(h.prs()))
	}
	if strings.Contains(final[0].Body, "500") || strings.Contains(final[0].Body, "GET") {
		t.Errorf("the final comment shows internal detail:\n%s", final[0].Body)
	}
}

// TestPushFailsForGood: the git server answers every push with 502; each
// attempt tries the push several times, and when the last attempt gives up
// the agent's change is not lost: the final comment carries it and the
// run record keeps it. The agent ran once.
func TestPushFailsForGood(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fixScript(t.TempDir())...)
	for range 3 * 4 { // 3 attempts of 4 tries each
		h.f.FailNext(http.MethodPost, "/git/*/*/git-receive-pack", http.StatusBadGateway, nil)
	}
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the task to be archived", func() bool { return h.taskState() == "archived" })
	final := h.commentsWith(h.issue, "agentfix:final")
	if len(final) != 1 || !strings.Contains(final[0].Body, "after the agent finished; its change is below") ||
		!strings.Contains(final[0].Body, "+\treturn a + b") {
		t.Fatalf("final comments = %+v, want one with the agent's change", final)
	}
	if h.model.calls() != 5 || len(h.prs()) != 0 {
		t.Errorf("model calls %d, PRs %d; want 5 (one run) and none", h.model.calls(), len(h.prs()))
	}
	list, err := h.store.List(t.Context(), 10)
	if err != nil || len(list) != 1 || list[0].Status != string(outcome.Failed) {
		t.Fatalf("runs = %+v, %v; want the one run, failed", list, err)
	}
	run, err := h.store.Get(t.Context(), list[0].RunID)
	if err != nil || !strings.Contains(run.Patch, "+\treturn a + b") {
		t.Errorf("the run record's patch = %q, %v; want the agent's change", run.Patch, err)
	}
	if h.f.PendingFaults() != 0 {
		t.Errorf("%d push faults did not fire", h.f.PendingFaults())
	}
}

func TestInteractiveReplies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.SetPermission(hRepo, "dave", "read")
	h.f.Commit(hRepo, "feature", map[string]string{"x.txt": "x\n"}, "a person's change")
	pr := h.f.AddPR(hRepo, ghfake.PR{Title: "A person's PR", Head: "feature", Author: "erin"})
	h.startWorker()
	h.comment("dave", "/agent-fix help")
	h.comment("dave", "/agent-fix help")
	h.comment(hRequester, "/agent-fix stop")
	h.commentOn(pr, "erin", hRequester, "/agent-fix please rename x")
	h.waitFor("👀 on the four comments and the three replies", func() bool {
		return len(h.f.Reactions(hRepo)) == 4 && len(h.botComments(h.issue)) == 2 && len(h.botComments(pr)) == 1
	})
	for _, c := range []struct {
		number int
		want   string
		count  int
	}{
		{h.issue, "@dave, I am **agentfix**", 1}, // the second help within 10 minutes is not answered
		{h.issue, "@alice, nothing is running for this issue, so there is nothing to stop.", 1},
		{pr, "@alice, I only revise pull requests I opened myself.", 1},
	} {
		if got := len(h.commentsWith(c.number, c.want)); got != c.count {
			t.Errorf("comments on #%d with %q = %d, want %d", c.number, c.want, got, c.count)
		}
	}
	if h.taskState() != "" || h.model.calls() != 0 {
		t.Errorf("a job was queued (%q) or the model called (%d)", h.taskState(), h.model.calls())
	}
}

// TestStopWhileWaiting stops a job that waits for an agent slot: it is
// removed before it starts, and its status comment says who stopped it.
func TestStopWhileWaiting(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.AgentConcurrency = 1
	first := h.issue
	reached := make(chan struct{})
	h.model.add(turn{before: func() { close(reached) }, block: make(chan struct{})})
	h.startWorker()
	h.label(hRequester)
	await(t, reached, "the first job's agent")

	h.issue = h.f.AddIssue(hRepo, ghfake.Issue{Title: "Second", Body: "another bug"})
	h.label(hRequester)
	h.waitForComments("the second job's status comment", h.issue, "⏳ **Queued**", 1)
	if st := h.taskState(); st != "pending" {
		t.Fatalf("second task state = %q, want pending behind the first", st)
	}
	h.f.SetPermission(hRepo, "bob", "write")
	h.comment("bob", "/agent-fix stop")
	h.waitFor("the second job's status comment to say it was stopped", func() bool {
		return len(h.commentsWith(h.issue, "🛑 **Stopped** by @bob: before it started.")) == 1
	})
	if st := h.taskState(); st != "" {
		t.Errorf("second task state = %q, want it deleted", st)
	}
	if n := len(h.commentsWith(first, "Stopped")); n != 0 {
		t.Errorf("the first job was stopped too")
	}
}
