package worker

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs"
)

// Automatic rounds as a whole: on the pipeline world (its checks in
// pipeworld_ci_test.go), and one end to end — the webhook edge, the
// worker, the fake GitHub with its check suites, Actions jobs and logs, a
// scripted model and the real sandbox.

// wrongCalc is calc.go as the bot's first, wrong, fix left it.
var wrongCalc = strings.Replace(hFiles["calc.go"], "a - b", "a * b", 1)

// testLog is what the failing test step of the PR's CI job printed.
const testLog = "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: Add(2, 2) = 4, Add(2, 3) = 6, want 5\nFAIL\nFAIL\texample.com/calc\t0.002s"

// ciPR opens the bot's pull request for the harness issue with its
// wrong fix, committed as the bot, and returns its number and branch.
func (h *harness) ciPR() (int, string) {
	h.t.Helper()
	branch := fmt.Sprintf("agent-fix/issue-%d", h.issue)
	h.f.CommitAs(hRepo, branch, map[string]string{"calc.go": wrongCalc}, fmt.Sprintf("Fix #%d: Add subtracts", h.issue),
		h.f.BotLogin(), strings.ToLower(h.f.BotLogin())+"@users.noreply.github.com")
	pr := h.f.AddPR(hRepo, ghfake.PR{
		Title: fmt.Sprintf("Fix #%d: Add subtracts", h.issue), Head: branch, Author: h.f.BotLogin(),
		Body: fmt.Sprintf("Fixes #%d\n\n## Summary\n\nFixed Add.", h.issue),
	})
	return pr, branch
}

// failingJob adds the failing GitHub Actions test job of commit sha, its
// log served, and returns its id.
func (h *harness) failingJob(sha string) int64 {
	return h.f.AddJob(hRepo, ghfake.Job{HeadSHA: sha, Workflow: "CI", Name: "test", Conclusion: "failure",
		Steps: []ghfake.Step{{Name: "actions/checkout@v4", Log: "Syncing repository: octo/widget"}, {Name: "go test ./...", Conclusion: "failure", Log: testLog}}})
}

// file returns path on branch of the repository.
func (h *harness) file(branch, path string) (string, bool) {
	b, ok := h.f.Files(hRepo, branch)[path]
	return b, ok
}

// suiteOf returns the check suite check run id belongs to.
func (h *harness) suiteOf(sha, app string) int64 {
	h.t.Helper()
	for _, s := range h.f.CheckSuites(hRepo) {
		if s.HeadSHA == sha && s.App.Slug == app {
			return s.ID
		}
	}
	h.t.Fatalf("no check suite of %s on %s", app, sha)
	return 0
}

// checksDone delivers the completion of the check suite of app on sha and
// returns the delivery's id.
func (h *harness) checksDone(sha, app string) string {
	h.t.Helper()
	return h.deliver("check_suite", h.f.CheckSuiteEvent(hRepo, h.suiteOf(sha, app)))
}

// interactiveDone waits until the interactive task id has ended (asynq
// keeps no finished interactive task).
func (h *harness) interactiveDone(what, id string) {
	h.t.Helper()
	insp := asynq.NewInspectorFromRedisClient(h.rdb)
	h.waitFor(what, func() bool {
		_, err := insp.GetTaskInfo(jobs.QueueInteractive, id)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
}

// roundDone waits until pull request pr's round task has completed.
func (h *harness) roundDone(pr int) {
	h.t.Helper()
	h.waitFor("the round's task to complete", func() bool { return h.reviseState(pr) == "completed" })
}

// instancePrompt returns the instance prompt of the model's request i:
// the task as the agent first saw it.
func (m *fakeModel) instancePrompt(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.requests) {
		m.t.Fatalf("the model got %d requests, want request %d", len(m.requests), i)
	}
	msgs, _ := m.requests[i]["messages"].([]any)
	for _, msg := range msgs {
		mm := msg.(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		switch c := mm["content"].(type) {
		case string:
			return c
		case []any:
			var b strings.Builder
			for _, part := range c {
				if text, ok := part.(map[string]any)["text"].(string); ok {
					b.WriteString(text)
				}
			}
			return b.String()
		}
	}
	return ""
}

// normalize makes a text of a test stable: the fake's address as the
// pipeline world's, and what normalizeText makes stable.
func (h *harness) normalize(s string) string {
	return normalizeText(strings.ReplaceAll(s, h.f.URL(), "https://github.example"))
}

// normalizeText makes a text of a test stable: commit ids, run ids, the
// numbers of runs and jobs, a run's duration.
func normalizeText(s string) string {
	for _, r := range []struct{ re, to string }{
		{`\b[0-9a-f]{40}\b`, "<sha>"},
		{"`[0-9a-f]{12}`", "`<short sha>`"},
		{`\b\d{8}T\d{6}Z-[0-9a-f]{8}\b`, "<run id>"},
		{`/runs/\d+/job/\d+`, "/runs/<run>/job/<job>"},
		{`/runs/\d+\b`, "/runs/<id>"},
		{`· (\d+m)?\d+(\.\d+)?s ·`, "· <duration> ·"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.to)
	}
	return s
}

// golden compares text, normalized, with testdata/name.golden (-update
// rewrites it).
func (h *harness) golden(name, text string) {
	h.t.Helper()
	goldenFile(h.t, name, h.normalize(text))
}

// TestCIRoundFixesFailingCheck: a GitHub Actions job that failed on the
// bot's pull request leads, once its check suite completed, to one ci
// round — however many times the completion is delivered — whose task
// holds the failed step's error line, and to a new commit on the pull
// request by the bot, and one reply naming the check.
func TestCIRoundFixesFailingCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pr, branch := h.ciPR()
	head := h.f.HeadCommit(hRepo, branch).SHA
	job := h.failingJob(head)
	h.model.add(edit("calc.go", "return a * b", "return a + b"), submit("Add multiplied its operands; it adds them now."), submit(""))
	h.startWorker()

	first := h.checksDone(head, ghfake.Actions.Slug)
	again := h.checksDone(head, ghfake.Actions.Slug) // a redelivery
	h.deliver("check_run", h.f.CheckRunEvent(hRepo, job))
	h.waitForComments("the ci round's reply", pr, "agentfix:final revise:", 1)
	h.roundDone(pr)
	h.interactiveDone("the first checks task", jobs.ChecksTaskID(first))
	h.interactiveDone("the redelivered checks task", jobs.ChecksTaskID(again))

	round := h.f.HeadCommit(hRepo, branch)
	if len(round.Parents) != 1 || round.Parents[0] != head || !strings.HasPrefix(round.Message, fmt.Sprintf("Fix the failing checks of #%d", pr)) ||
		round.AuthorName != h.f.BotLogin() {
		t.Errorf("the round's commit = %+v, want the bot's commit on %s", round, head)
	}
	if b, ok := h.file(branch, "calc.go"); !ok || !strings.Contains(b, "return a + b") {
		t.Errorf("calc.go on the branch = %q, want the agent's fix", b)
	}
	prompt := h.model.instancePrompt(0)
	for _, want := range []string{"Check test (GitHub Actions): failure.", "calc_test.go:9: Add(2, 2) = 4, Add(2, 3) = 6, want 5", "Failed steps: go test ./..."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the ci round's task lacks %q:\n%s", want, prompt)
		}
	}
	h.golden("ci_round_task", prompt)
	h.golden("ci_round_reply", h.commentsWith(pr, "agentfix:final revise:")[0].Body)
	if n := h.model.calls(); n != 3 {
		t.Errorf("the model got %d requests, want the 3 of one round", n)
	}
	type check struct{ sha, title, conclusion string }
	var got []check
	for _, c := range h.f.CheckRuns(hRepo) {
		if c.AppID == h.f.AppID() {
			got = append(got, check{c.HeadSHA, c.Title, c.Conclusion})
		}
	}
	want := []check{
		{head, fmt.Sprintf("Superseded by %s, which has this round's result", round.SHA[:12]), "neutral"},
		{round.SHA, "The agent submitted this change", "success"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(check{})); diff != "" {
		t.Errorf("the bot's check runs (-want +got):\n%s", diff)
	}

	// The completion delivered once more, after the round: its head moved
	// on, so nothing starts.
	late := h.checksDone(head, ghfake.Actions.Slug)
	h.interactiveDone("the late checks task", jobs.ChecksTaskID(late))
	if n := len(h.commentsWith(pr, "agentfix:")); n != 1 || h.model.calls() != 3 {
		t.Errorf("after a late delivery: %d comments of the bot, %d model requests; want 1 and 3", n, h.model.calls())
	}
	if !strings.Contains(h.logs.String(), "no ci round: the pull request's head moved on") {
		t.Error("the late delivery's checks task did not say why it started nothing")
	}
}

// ciPR opens the bot's pull request for the world's issue with its wrong
// fix, committed as the bot, and returns its number and head.
func (p *pipeWorld) ciPR() (int, string) {
	p.t.Helper()
	pr := p.botPR(map[string]string{"calc.go": wrongCalc})
	head, _ := p.git.branch(p.botBranch())
	return pr, head
}

// failingJob adds the failing GitHub Actions test job of commit sha, its
// log served, and returns its id.
func (p *pipeWorld) failingJob(sha string) int64 {
	return p.gh.addJob(pipeJob{sha: sha, name: "test", conclusion: "failure",
		steps: []pipeStep{{name: "actions/checkout@v4", log: "Syncing repository: octo/widget"}, {name: "go test ./...", conclusion: "failure", log: testLog}}})
}

// TestCIRoundPreExistingAndMissingLog: a check that also fails on the base
// branch's head is named pre-existing in the task and the reply, and left
// alone; a job whose log GitHub no longer keeps is worked on from its
// check's output, and the task and the reply say so.
func TestCIRoundPreExistingAndMissingLog(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr, head := p.ciPR()
	mainHead, _ := p.git.branch("main")
	lint := ghapp.CheckRun{Name: "lint", Conclusion: "failure", Title: "1 problem", Summary: "vet found 1 problem"}
	note := ghapp.Annotation{Path: "README.md", StartLine: 1, EndLine: 1, Level: "failure", Message: "no licence section"}
	p.gh.addCheck(mainHead, pipeOtherCI, lint, note)
	p.gh.addCheck(head, pipeOtherCI, lint, note)
	p.gh.addJob(pipeJob{sha: head, name: "test", conclusion: "failure", logStatus: http.StatusGone,
		title: "Tests failed", summary: "1 test failed",
		annotations: []ghapp.Annotation{{Path: "calc_test.go", StartLine: 9, EndLine: 9, Level: "failure", Message: "Add(2, 3) = 6, want 5"}},
		steps:       []pipeStep{{name: "go test ./...", conclusion: "failure"}}})
	p.model.add(edit("calc.go", "return a * b", "return a + b"), submit("Add adds now."), submit(""))
	p.start(p.worker())

	p.checkSuiteDone(head, pipeOtherCI)
	p.checkSuiteDone(head, pipeActions)
	reply := p.waitForComments("the ci round's reply", pr, "agentfix:final revise:", 1)[0]
	prompt := p.model.instancePrompt(0)
	for _, want := range []string{
		"Check lint (Other CI): failure. It fails on the base branch's latest commit too, so this pull request did not cause it: do not try to fix it.",
		"calc_test.go:9: Add(2, 3) = 6, want 5",
		"The job's log could not be read (GitHub answered 410: it no longer keeps it)",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the ci round's task lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "no licence section") {
		t.Errorf("the task holds the pre-existing check's report:\n%s", prompt)
	}
	p.golden("ci_round_preexisting_reply", reply.Body)
}

// TestCIFlakyRerun: with ci.rerun_failed the failed jobs are re-run once
// first; when they pass, the bot says once that they look flaky and
// starts no round.
func TestCIFlakyRerun(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.git.commit(t, "main", map[string]string{".github/agent-fix.yml": "ci:\n  rerun_failed: true\n"}, "Re-run failed jobs")
	pr, head := p.ciPR()
	p.gh.addJob(pipeJob{sha: head, name: "test", conclusion: "failure", rerunConclusion: "success",
		steps: []pipeStep{{name: "go test ./...", conclusion: "failure", log: "connection reset by peer"}}})
	p.start(p.worker())

	d := p.checkSuiteDone(head, pipeActions)
	p.interactiveDone("the checks task that re-runs", jobs.ChecksTaskID(d))
	if n := len(p.gh.reran()); n != 1 {
		t.Fatalf("re-runs = %d, want 1", n)
	}
	// The re-run passed: its suite completes again.
	for range 2 {
		d := p.checkSuiteDone(head, pipeActions)
		p.interactiveDone("the checks task after the re-run", jobs.ChecksTaskID(d))
	}
	notes := p.gh.commentsWith(pr, "agentfix:ci-flaky")
	if len(notes) != 1 {
		t.Fatalf("flaky notes = %d, want 1; comments: %+v", len(notes), p.gh.botComments(pr))
	}
	p.golden("ci_flaky_note", notes[0].Body)
	if n := len(p.gh.reran()); n != 1 || p.model.calls() != 0 || len(p.gh.botComments(pr)) != 1 {
		t.Errorf("re-runs %d, model requests %d, comments %d; want 1, 0, 1", n, p.model.calls(), len(p.gh.botComments(pr)))
	}
}

// TestCIMaxRoundsSaidOnce: with ci.max_rounds 1, the round's commit
// failing again gets no round, and the limit is said once however often
// its checks are reported.
func TestCIMaxRoundsSaidOnce(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.git.commit(t, "main", map[string]string{".github/agent-fix.yml": "ci:\n  max_rounds: 1\n"}, "One round")
	pr, head := p.ciPR()
	p.failingJob(head)
	p.model.add(edit("calc.go", "return a * b", "return b * a"), submit("Swapped the operands."), submit(""))
	p.start(p.worker())

	p.checkSuiteDone(head, pipeActions)
	p.waitForComments("the ci round's reply", pr, "agentfix:final revise:", 1)
	p.roundDone(pr)
	next, _ := p.git.branch(p.botBranch())
	if next == head {
		t.Fatal("the round pushed nothing")
	}
	job := p.failingJob(next)
	d := p.checkSuiteDone(next, pipeActions)
	p.interactiveDone("the checks task of the round's commit", jobs.ChecksTaskID(d))
	d = p.checkRunDone(job)
	p.interactiveDone("the check run's task", jobs.ChecksTaskID(d))
	notes := p.gh.commentsWith(pr, "agentfix:ci-limit")
	if len(notes) != 1 {
		t.Fatalf("limit notes = %d, want 1; comments: %+v", len(notes), p.gh.botComments(pr))
	}
	p.golden("ci_limit_note", notes[0].Body)
	if now, _ := p.git.branch(p.botBranch()); p.model.calls() != 3 || now != next {
		t.Errorf("model requests %d, head moved: %v; want 3 and no second round", p.model.calls(), now != next)
	}
}

// TestCIRoundsResume: a stop turns the automatic rounds of the bot's pull
// request off, for good, until someone with write access comments
// resume: a resume by someone without it is refused, the resume lifts the
// stop and looks at the head's checks at once, so the check that failed
// while the rounds were off gets its round; a second resume has nothing
// to lift.
func TestCIRoundsResume(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr, head := p.ciPR()
	p.failingJob(head)
	p.model.add(edit("calc.go", "return a * b", "return a + b"), submit("Add multiplied its operands; it adds them now."), submit(""))
	p.start(p.worker())

	d := p.prVerb(pr, hRequester, jobs.OutcomeStop)
	p.interactiveDone("the stop", jobs.NoticeTaskID(d))
	d = p.checkSuiteDone(head, pipeActions)
	p.interactiveDone("the checks task while stopped", jobs.ChecksTaskID(d))
	if p.model.calls() != 0 || !strings.Contains(p.logs.String(), "no ci round: @alice stopped the automatic rounds") {
		t.Fatalf("a round ran while the rounds were stopped (%d model requests)", p.model.calls())
	}

	d = p.prVerb(pr, "mallory", jobs.OutcomeResume)
	p.interactiveDone("mallory's resume", jobs.NoticeTaskID(d))
	if n := len(p.gh.commentsWith(pr, "only someone with write access to this repository can turn my own rounds")); n != 1 {
		t.Errorf("refusals of mallory's resume = %d, want 1: %+v", n, p.gh.botComments(pr))
	}
	d = p.prVerb(pr, hRequester, jobs.OutcomeResume)
	p.interactiveDone("the resume", jobs.NoticeTaskID(d))
	resumed := p.gh.commentsWith(pr, "I start rounds on this pull request on my own again (@alice had stopped them)")
	if len(resumed) != 1 {
		t.Fatalf("replies to the resume = %d, want 1: %+v", len(resumed), p.gh.botComments(pr))
	}
	p.waitForComments("the ci round's reply", pr, "agentfix:final revise:", 1)
	p.roundDone(pr)
	if b := p.file(p.botBranch(), "calc.go"); !strings.Contains(b, "return a + b") {
		t.Errorf("calc.go on the branch = %q, want the ci round's fix", b)
	}

	d = p.prVerb(pr, hRequester, jobs.OutcomeResume)
	p.interactiveDone("the second resume", jobs.NoticeTaskID(d))
	if n := len(p.gh.commentsWith(pr, "were not stopped, so there is nothing to resume")); n != 1 {
		t.Errorf("replies to the second resume = %d, want 1: %+v", n, p.gh.botComments(pr))
	}
}

// TestConflictRound: a push to the default branch that makes the bot's
// pull request conflict starts one conflict round (the push delivered
// twice): the worker merges the base branch, the agent resolves the
// conflict, and the bot pushes a merge commit without markers on top of
// the pull request's head.
func TestConflictRound(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	// Setup runs on the default branch's files, and must leave the merge
	// in place for the agent.
	p.git.commit(t, "main", map[string]string{".github/agent-fix.yml": "setup: [\"cat README.md\"]\ntest: \"! grep -rn '<<<<<<<' README.md\"\n"}, "Setup and test commands")
	pr, _ := p.ciPR()
	branch := p.botBranch()
	head := p.git.commitAs(t, branch, map[string]string{"README.md": "# widget\n\nAdd adds.\n"}, "Document Add", pipeBot, pipeBotEmail)
	p.git.commit(t, "main", map[string]string{"README.md": "# widget\n\nA small calculator.\n"}, "Describe the widget")
	mainHead, _ := p.git.branch("main")
	p.model.add(
		bash("grep -c '<<<<<<< HEAD' README.md && printf '# widget\\n\\nA small calculator. Add adds.\\n' > README.md"),
		submit("Kept both descriptions."), submit(""),
	)
	p.start(p.worker())

	p.basePushed()
	p.basePushed()
	reply := p.waitForComments("the conflict round's reply", pr, "agentfix:final revise:", 1)[0]
	p.roundDone(pr)

	merge := p.git.headCommit(t, branch)
	if diff := cmp.Diff([]string{head, mainHead}, merge.Parents); diff != "" {
		t.Errorf("the merge commit's parents (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(merge.Message, "Merge branch 'main' into "+branch) {
		t.Errorf("the merge commit's message = %q", merge.Message)
	}
	if b := p.file(branch, "README.md"); b != "# widget\n\nA small calculator. Add adds.\n" {
		t.Errorf("README.md after the merge = %q, want the agent's resolution", b)
	}
	if b := p.file(branch, "calc.go"); b != wrongCalc {
		t.Errorf("calc.go after the merge = %q, want the pull request's", b)
	}
	prompt := p.model.instancePrompt(0)
	for _, want := range []string{"These files conflict", "- README.md", "<<<<<<< and |||||||", "+A small calculator."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the conflict round's task lacks %q:\n%s", want, prompt)
		}
	}
	p.golden("conflict_round_task", prompt)
	p.golden("conflict_round_reply", reply.Body)
	if n := p.model.calls(); n != 3 {
		t.Errorf("the model got %d requests, want the 3 of one round", n)
	}
}

// TestConflictRoundRefusesMarkers: a conflict round whose agent leaves
// conflict markers pushes nothing and says where they are.
func TestConflictRoundRefusesMarkers(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr, _ := p.ciPR()
	branch := p.botBranch()
	head := p.git.commitAs(t, branch, map[string]string{"README.md": "# widget\n\nAdd adds.\n"}, "Document Add", pipeBot, pipeBotEmail)
	p.git.commit(t, "main", map[string]string{"README.md": "# widget\n\nA small calculator.\n"}, "Describe the widget")
	p.model.add(bash("head -3 README.md"), submit("Looked at it."), submit(""))
	p.start(p.worker())

	p.basePushed()
	reply := p.waitForComments("the conflict round's reply", pr, "agentfix:final revise:", 1)[0].Body
	if !strings.Contains(reply, "I pushed nothing: conflict markers remain in `README.md`, so I did not push the merge.") {
		t.Errorf("the reply does not say the markers remain:\n%s", reply)
	}
	if got, _ := p.git.branch(branch); got != head {
		t.Errorf("the branch moved to %s", got)
	}
}
