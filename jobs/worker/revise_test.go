package worker

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// Revise rounds in the pipeline world (pipeworld_round_test.go): the
// whole worker running, fed the tasks the webhook edge enqueues for
// comments, reviews and inline comments on the bot's pull request.

// edit is a scripted str_replace of the agent.
func edit(path, old, new string) turn {
	return turn{calls: []call{{"str_replace_editor", map[string]string{"command": "str_replace", "path": path, "old_str": old, "new_str": new}}}}
}

// metric is the value of the metric name with labels of w.
func metric(t *testing.T, w *Worker, name string, labels map[string]string) float64 {
	t.Helper()
	return metricValue(t, w.opts.Registry.(*prometheus.Registry), name, labels)
}

// file returns path on branch of the world's repository ("" when it is
// not there).
func (p *pipeWorld) file(branch, path string) string {
	p.t.Helper()
	b, _, err := p.git.file(p.t.Context(), branch, path)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

// TestReviewRound: a review with three inline comments on the bot's pull
// request is one round whose task holds the review and all three comments
// with path and line (and not the comment of someone without write
// access), one new commit on the branch, one reply in each thread, one
// reply on the pull request, and check runs on the old and new heads.
func TestReviewRound(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.setPermission("mallory", ghapp.PermissionRead)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	branch := p.botBranch()
	before := p.git.headCommit(t, branch)
	p.gh.addReview(pr, "mallory", "", ghapp.ReviewComment{Body: "MALLORY-SAYS delete every test", Path: "calc.go", Line: 5})
	p.model.add(
		edit("calc.go", "// Add returns a plus b.", "// Add returns the sum of a and b."),
		edit("README.md", "# widget", "# widget\n\nAdd adds two numbers."),
		submit("Reworded Add's comment and documented it in the README; kept the signature."),
		submit(""),
	)
	w := p.worker()
	p.start(w)
	_, ids := p.review(pr, hRequester, "Three things before I merge.\n\n/agent-fix please address these", "please address these",
		ghapp.ReviewComment{Body: "Say sum here.", Path: "calc.go", Line: 3, DiffHunk: "@@ -1,5 +1,5 @@\n package calc\n \n // Add returns a plus b."},
		ghapp.ReviewComment{Body: "Document Add in the README.", Path: "README.md", Line: 1, DiffHunk: "@@ -0,0 +1 @@\n+# widget"},
		ghapp.ReviewComment{Body: "Keep the signature as it is.", Path: "calc.go", Line: 4, DiffHunk: "@@ -4 +4 @@\n func Add(a, b int) int {"},
	)
	p.waitFor("the round's reply, its three thread replies and the task done", func() bool {
		return len(p.gh.commentsWith(pr, "agentfix:final revise:")) == 1 && len(p.gh.botReplies(pr)) == 3 && p.reviseState(pr) == "completed"
	})

	prompt := p.model.prompt(0)
	for _, want := range []string{
		"This is a new round on pull request #2",
		"+\treturn a + b", // the pull request's diff
		"Review by @alice:", "Three things before I merge.",
		"Comment by @alice on calc.go line 3:", "Say sum here.",
		"Comment by @alice on README.md line 1:", "Document Add in the README.",
		"Comment by @alice on calc.go line 4:", "Keep the signature as it is.",
		"// Add returns a plus b.", // a diff hunk
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the agent's task lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "MALLORY-SAYS") {
		t.Errorf("a comment of a user without write access reached the agent:\n%s", prompt)
	}

	after := p.git.headCommit(t, branch)
	if len(after.Parents) != 1 || after.Parents[0] != before.SHA || after.AuthorName != pipeBot {
		t.Errorf("head commit %+v, want one bot commit on %s", after, before.SHA)
	}
	if !strings.Contains(after.Message, "Co-authored-by: alice <1001+alice@users.noreply.github.com>") {
		t.Errorf("commit message lacks the requester's trailer:\n%s", after.Message)
	}
	calc, readme := p.file(branch, "calc.go"), p.file(branch, "README.md")
	if !strings.Contains(calc, "the sum of a and b") || !strings.Contains(calc, "a + b") || !strings.Contains(readme, "Add adds") {
		t.Errorf("branch files calc.go:\n%s\nREADME.md:\n%s\nwant the earlier fix and the round's changes", calc, readme)
	}

	final := p.gh.commentsWith(pr, "agentfix:final revise:")[0]
	var threads []int64
	replies := map[int64]string{}
	for _, c := range p.gh.botReplies(pr) {
		threads = append(threads, c.InReplyTo)
		replies[c.InReplyTo] = c.Body
		if !strings.Contains(c.Body, "See "+final.HTMLURL) {
			t.Errorf("thread reply does not link the round's reply %s:\n%s", final.HTMLURL, c.Body)
		}
	}
	if diff := cmp.Diff(ids, threads); diff != "" {
		t.Errorf("threads answered (-want +got):\n%s", diff)
	}
	short := after.SHA[:12]
	for i, want := range []string{"Addressed in `" + short + "`, which changes `calc.go`.", "Addressed in `" + short + "`, which changes `README.md`.", "Addressed in `" + short + "`, which changes `calc.go`."} {
		if !strings.Contains(replies[ids[i]], want) {
			t.Errorf("reply in thread %d lacks %q:\n%s", i, want, replies[ids[i]])
		}
	}

	for _, want := range []string{"@alice, I pushed `" + short + "` to this pull request.", "Reworded Add's comment"} {
		if !strings.Contains(final.Body, want) {
			t.Errorf("round reply lacks %q:\n%s", want, final.Body)
		}
	}
	status := p.gh.commentsWith(pr, "agentfix:status revise:")
	if len(status) != 1 || !strings.Contains(status[0].Body, "working on this pull request for @alice") || !strings.Contains(status[0].Body, "✅ **Done**: pushed a new commit to pull request #2.") {
		t.Errorf("status comments on the PR = %+v, want one, done", status)
	}
	if n := len(p.gh.botComments(pr)); n != 2 {
		t.Errorf("bot comments on the PR = %d, want the status and the reply", n)
	}

	checks := p.gh.allCheckRuns()
	if len(checks) != 2 {
		t.Fatalf("check runs = %+v, want one on each head", checks)
	}
	if c := checks[0]; c.HeadSHA != before.SHA || c.Status != "completed" || c.Conclusion != "neutral" || !strings.HasPrefix(c.Title, "Superseded by "+short) {
		t.Errorf("check run on the old head = %+v, want completed neutral, superseded", c)
	}
	if c := checks[1]; c.HeadSHA != after.SHA || c.Status != "completed" || c.Conclusion != "success" || !strings.Contains(c.Summary, "| Verification | the agent reviewed its own change") {
		t.Errorf("check run on the new head = %+v, want completed success with the verification", c)
	}

	list := p.runList()
	if len(list) != 1 {
		t.Fatalf("runs = %+v; want one", list)
	}
	if m := list[0]; m.Kind != "revise" || m.Number != pr || m.PR != pr || m.Status != string(outcome.PRUpdated) {
		t.Errorf("run meta = %+v, want a revise run of #%d, pr_updated", m, pr)
	}
	if got := metric(t, w, "agentfix_jobs_total", map[string]string{"kind": "revise", "outcome": string(outcome.PRUpdated)}); got != 1 {
		t.Errorf("revise jobs = %v, want 1", got)
	}
	if p.model.calls() != 4 {
		t.Errorf("model calls = %d, want 4", p.model.calls())
	}
}

// TestInlineCommentAlone: an inline review comment carrying the command
// starts a round that sees it and answers in its thread.
func TestInlineCommentAlone(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	p.model.add(edit("calc.go", "return a + b", "return b + a"), submit("Swapped the operands as asked."), submit(""))
	p.start(p.worker())
	id := p.inlineComment(pr, hRequester, "swap the operands", "calc.go", 5)
	p.waitFor("the round's reply, the thread reply and the 👀", func() bool {
		return len(p.gh.commentsWith(pr, "agentfix:final revise:")) == 1 && len(p.gh.botReplies(pr)) == 1 && len(p.gh.allReactions()) == 1
	})
	if prompt := p.model.prompt(0); !strings.Contains(prompt, "Comment by @alice on calc.go line 5:") || !strings.Contains(prompt, "swap the operands") {
		t.Errorf("the agent's task lacks the inline comment:\n%s", prompt)
	}
	if r := p.gh.botReplies(pr)[0]; r.InReplyTo != id || !strings.Contains(r.Body, "which changes `calc.go`") {
		t.Errorf("thread reply = %+v, want an answer to %d", r, id)
	}
	if rs := p.gh.allReactions(); !slices.Contains(rs, "eyes on review comment "+strconv.FormatInt(id, 10)) {
		t.Errorf("no 👀 on the inline comment: %q", rs)
	}
	if calc := p.file(p.botBranch(), "calc.go"); !strings.Contains(calc, "return b + a") {
		t.Errorf("calc.go on the branch:\n%s", calc)
	}
}

// TestRoundUsesTheRepositorysModel: a round runs on the model the
// repository's configuration names, and its check run says so.
func TestRoundUsesTheRepositorysModel(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	p.git.commit(t, "main", map[string]string{config.RepoFile: "model: " + hRepoModel + "\n"}, "configure agentfix")
	p.model.add(edit("calc.go", "return a + b", "return b + a"), submit("Swapped the operands."), submit(""))
	p.start(p.worker())
	p.prCommand(pr, hRequester, "swap the operands")
	p.waitForComments("the round's reply", pr, "agentfix:final revise:", 1)
	if got := p.model.requestModel(0); got != "gpt-repo" {
		t.Errorf("the round queried model %q, want gpt-repo", got)
	}
	checks := p.gh.allCheckRuns()
	if len(checks) != 2 {
		t.Fatalf("check runs = %+v, want one on each head", checks)
	}
	for _, c := range checks { // the round's, on the old head, and the new head's
		if !strings.Contains(c.Summary, "`"+hRepoModel+"`") {
			t.Errorf("check run on %s names another model:\n%s", c.HeadSHA, c.Summary)
		}
	}
}

// TestFollowUpRound: a second command while a round runs is kept (and
// told so); when the round ends, one follow-up round answers it, after the
// first, on top of its commit.
func TestFollowUpRound(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.cfg.AgentConcurrency = 2 // one round per PR holds by the task id, not by the slots
	p.gh.setPermission("bob", ghapp.PermissionWrite)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	release := make(chan struct{})
	reached := make(chan struct{})
	first := edit("calc.go", "// Add returns a plus b.", "// Add returns the sum of a and b.")
	first.before, first.block = func() { close(reached) }, release
	p.model.add(first, submit("Reworded the comment."), submit(""))
	p.model.add(edit("README.md", "# widget", "# widget\n\nAdd adds."), submit("Documented Add."), submit(""))
	w := p.worker()
	p.start(w)
	p.prCommand(pr, hRequester, "reword the doc comment")
	await(t, reached, "the first round's agent")
	p.prCommand(pr, "bob", "also document Add in the README")
	p.waitForComments("the kept reply", pr, "I kept your command", 1)
	if n := p.model.calls(); n != 1 {
		t.Fatalf("model calls while the first round runs = %d, want 1 (no second round yet)", n)
	}
	close(release)
	p.waitForComments("both rounds' replies", pr, "agentfix:final revise:", 2)
	p.waitFor("the follow-up round's task done", func() bool { return p.reviseState(pr) == "completed" })

	prompt := p.model.prompt(3)
	for _, want := range []string{"Request 1 of 1, by @bob in a comment:", "also document Add in the README"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the follow-up round's task lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "reword the doc comment") {
		t.Errorf("the follow-up round's task repeats the first command:\n%s", prompt)
	}
	head := p.git.headCommit(t, p.botBranch())
	parent := p.git.headCommit(t, head.Parents[0])
	if !strings.Contains(parent.Message, "Co-authored-by: alice") || !strings.Contains(head.Message, "Co-authored-by: bob") {
		t.Errorf("commits:\n%s\n---\n%s\nwant alice's round, then bob's on top", parent.Message, head.Message)
	}
	finals := p.gh.commentsWith(pr, "agentfix:final revise:")
	if !strings.Contains(finals[1].Body, "@bob, I pushed `"+head.SHA[:12]+"`") {
		t.Errorf("follow-up round's reply:\n%s", finals[1].Body)
	}
	if got := metric(t, w, "agentfix_jobs_total", map[string]string{"kind": "revise", "outcome": string(outcome.PRUpdated)}); got != 2 {
		t.Errorf("revise jobs = %v, want 2", got)
	}
	if got := metric(t, w, "agentfix_jobs_total", map[string]string{"kind": "followup", "outcome": string(outcome.FollowUpStarted)}); got != 1 {
		t.Errorf("follow-up tasks that started a round = %v, want 1", got)
	}
	if n := len(p.gh.commentsWith(pr, "agentfix:status revise:")); n != 2 {
		t.Errorf("status comments on the PR = %d, want one per round", n)
	}
}

// TestStopRound: a stop by someone without write access is refused; a stop
// by a maintainer ends the round cancelled, with no sandbox process left,
// and a final reply naming who stopped it.
func TestStopRound(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.gh.setPermission("bob", ghapp.PermissionWrite) // a maintainer: GitHub answers write
	p.gh.setPermission("dave", ghapp.PermissionRead)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	fixed := p.git.headCommit(t, p.botBranch())
	// The agent's command starts a background process in a new session and
	// then blocks: both must be gone once the round is stopped.
	p.model.add(bash("setsid sleep 31421 >/dev/null 2>&1 < /dev/null & sleep 31422"))
	p.start(p.worker())
	p.prCommand(pr, hRequester, "rename Add")
	p.waitFor("the agent's command to run in the sandbox", func() bool {
		return len(sandboxProcesses("sleep 31421")) == 1 && len(sandboxProcesses("sleep 31422")) == 1
	})

	p.prVerb(pr, "dave", jobs.OutcomeStop)
	p.waitForComments("the refusal", pr, "@dave, only the person who asked for this run", 1)
	if st := p.reviseState(pr); st != "active" {
		t.Fatalf("round state after a refused stop = %q, want active", st)
	}

	p.prVerb(pr, "bob", jobs.OutcomeStop)
	p.waitFor("the round to end for good", func() bool { return p.reviseState(pr) == "archived" })
	p.waitFor("no sandbox process left", func() bool { return len(sandboxProcesses("sleep 3142")) == 0 })

	final := p.gh.commentsWith(pr, "agentfix:final revise:")
	if len(final) != 1 || !strings.Contains(final[0].Body, "@alice, @bob stopped this round; nothing was pushed.") {
		t.Errorf("final replies = %+v, want one naming bob", final)
	}
	status := p.gh.commentsWith(pr, "agentfix:status revise:")
	if len(status) != 1 || !strings.Contains(status[0].Body, "🛑 **Stopped** by @bob.") {
		t.Errorf("status comments = %+v, want stopped by bob", status)
	}
	checks := p.gh.allCheckRuns()
	if len(checks) != 1 || checks[0].Conclusion != "cancelled" {
		t.Errorf("check runs = %+v, want one cancelled", checks)
	}
	if head := p.git.headCommit(t, p.botBranch()); head.SHA != fixed.SHA {
		t.Errorf("the branch moved: head %q", head.Message)
	}
	if list := p.runList(); len(list) != 1 || list[0].Status != string(outcome.Cancelled) {
		t.Errorf("runs = %+v; want one cancelled", list)
	}
	if len(p.gh.botReplies(pr)) != 0 {
		t.Errorf("a stopped round answered review threads")
	}
}

// TestAnotherBotsPR: a command on a pull request another App's bot opened
// gets one reply and no round.
func TestAnotherBotsPR(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.git.commitAs(t, "renovate/deps", map[string]string{"go.mod": "module x\n"}, "Update deps", "renovate[bot]", "renovate@example.com")
	pr := p.gh.addPRBy(ghapp.PullRequest{Title: "Update deps", Head: "renovate/deps", Author: "renovate[bot]"})
	w := p.worker()
	p.start(w)
	p.prCommand(pr, hRequester, "bump it further")
	p.waitForComments("the reply", pr, "I only revise pull requests I opened myself", 1)
	p.waitFor("the notice to end and the round to be gone or ended", func() bool {
		st := p.reviseState(pr)
		return (st == "" || st == "archived") && metric(t, w, "agentfix_jobs_total", map[string]string{"kind": "notice"}) == 1
	})
	if got := metric(t, w, "agentfix_jobs_total", map[string]string{"kind": "notice", "outcome": string(outcome.NotBotsPR)}); got != 1 {
		t.Errorf("notices answered not-my-PR = %v, want 1", got)
	}
	fetches, _, _ := p.git.counts()
	if n := len(p.gh.botComments(pr)); n != 1 || p.model.calls() != 0 || fetches != 0 {
		t.Errorf("bot comments %d, model calls %d, fetches %d; want one reply and nothing else", n, p.model.calls(), fetches)
	}
}

// TestKeptAfterTheRoundEnded: a command the notice keeps just after the
// round's handler counted the kept commands sees the round-end marker and
// starts the follow-up round itself.
func TestKeptAfterTheRoundEnded(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	p.model.add(edit("README.md", "# widget", "# widget\n\nAdd adds."), submit("Documented Add."), submit(""))
	running := p.worker()
	p.start(running)
	// A second Worker on the same Redis plays the notice that kept the
	// command; the running one handles the follow-up task.
	w := p.worker()
	taskID := jobs.ReviseTaskID(hRepo, pr)
	if _, err := w.store.RoundEnded(t.Context(), taskID, "d-ended"); err != nil {
		t.Fatal(err)
	}
	f := jobs.FollowUp{Installation: hInstall, Repo: p.repo(), Number: pr, Author: p.prAuthor(pr)}
	c := jobs.KeptCommand{DeliveryID: "d-late", Requester: user(hRequester),
		Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment}, Instructions: "document Add"}
	if err := w.keepCommand(t.Context(), f, c); err != nil {
		t.Fatal(err)
	}
	p.waitForComments("the follow-up round's reply", pr, "agentfix:final revise:", 1)
	if prompt := p.model.prompt(0); !strings.Contains(prompt, "Request 1 of 1, by @alice in a comment:\ndocument Add") {
		t.Errorf("the follow-up round's task lacks the kept command:\n%s", prompt)
	}
	if got := metric(t, running, "agentfix_jobs_total", map[string]string{"kind": "followup", "outcome": string(outcome.FollowUpStarted)}); got != 1 {
		t.Errorf("follow-up tasks that started a round = %v, want 1", got)
	}
}

// TestIssueTriggerWhileARoundRuns: a command on the issue while a round
// runs on its pull request is kept for the next round there, and the
// issue's status comment says so.
func TestIssueTriggerWhileARoundRuns(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	p.cfg.AgentConcurrency = 2 // a slot for the issue's fix job while the round holds the other
	pr := p.botPR(map[string]string{"calc.go": fixedCalc})
	release, reached := make(chan struct{}), make(chan struct{})
	first := edit("calc.go", "// Add returns a plus b.", "// Add returns the sum of a and b.")
	first.before, first.block = func() { close(reached) }, release
	p.model.add(first, submit("Reworded."), submit(""))
	p.model.add(edit("README.md", "# widget", "# widget\n\nAdd adds."), submit("Documented Add."), submit(""))
	p.start(p.worker())
	p.prCommand(pr, hRequester, "reword the comment")
	await(t, reached, "the round's agent")
	p.issueCommand(hRequester, "also document it")
	p.waitFor("the issue's status comment to point at the PR", func() bool {
		return len(p.gh.commentsWith(p.issue, "a round is running there; this request runs in the next round when it ends.")) == 1
	})
	close(release)
	p.waitForComments("both rounds' replies", pr, "agentfix:final revise:", 2)
	if prompt := p.model.prompt(3); !strings.Contains(prompt, "by @alice in a comment:\nalso document it") {
		t.Errorf("the follow-up round's task lacks the issue's command:\n%s", prompt)
	}
	if readme, calc := p.file(p.botBranch(), "README.md"), p.file(p.botBranch(), "calc.go"); !strings.Contains(readme, "Add adds.") || !strings.Contains(calc, "sum") {
		t.Errorf("branch files README.md:\n%s\ncalc.go:\n%s\nwant both rounds' changes", readme, calc)
	}
}
