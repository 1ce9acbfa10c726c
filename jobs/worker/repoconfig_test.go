package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// lastMessages returns, for each query the model got in order, the
// content of its last message: the instance prompt, then the observation
// (a tool result) the step before produced.
func (m *fakeModel) lastMessages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.requests {
		msgs, _ := r["messages"].([]any)
		if len(msgs) == 0 {
			out = append(out, "")
			continue
		}
		last, _ := msgs[len(msgs)-1].(map[string]any)
		content, _ := last["content"].(string)
		out = append(out, content)
	}
	return out
}

// finals returns the bot's final comments on the issue.
func (h *harness) finals() []ghfake.Comment { return h.commentsWith(h.issue, "agentfix:final") }

// stepYML is the repository's .github/agent-fix.yml in the step tests.
func stepYML(yml string) map[string]string {
	return map[string]string{"octo/widget:" + config.RepoFile: yml}
}

// stepFiles are the default branch's files of the step tests: the bug,
// and the repository's instructions files for agents.
var stepFiles = map[string]string{
	"calc.go":           hFiles["calc.go"],
	"AGENTS.md":         "Always run go vet before you submit.\n",
	"pkg/api/AGENTS.md": "The API is frozen: never rename exported names.\n",
	"pkg/api/api.go":    "package api\n",
}

// TestRepoSettingsReachTheSession: a fix job gives the session what the
// repository's configuration and default branch say — the test command,
// the setup commands (run on the default branch's head, their caches
// kept for the next job), the limits after the operator's (max_steps
// lowers them, max_cost_usd cannot raise them, and the status comment
// says so), its instructions with the task, and the AGENTS.md files (the
// root one in the task, the nested ones for the tools, and the status
// comment names them) — and the run's end is its final comment and run
// record. What the session does with them is session's and tools' to
// test: TestRunSetupThenAgent (setup, then the test command at review),
// TestRunSetupOnTheDefaultBranch, TestRunWarmSetupCaches,
// TestNestedInstructions; workspace's TestBwrapSetupNetwork and
// TestBwrapNetwork (setup's network without the worker's loopback, none
// for the agent); agent's TestRunHooks and its limits tests.
func TestRepoSettingsReachTheSession(t *testing.T) {
	t.Parallel()
	const test = "grep -q 'a + b' calc.go && echo calc ok"
	sw := newStepWorld(t, stepFiles, stepYML("test: "+yamlQuote(test)+"\nsetup:\n  - make deps\ninstructions: Keep the change to calc.go.\n"+
		"labels: [bot-made, needs-review]\nmax_steps: 2\nmax_cost_usd: 100\n"))
	warm := &stepSetupCache{}
	sw.w.agent.setupCache = warm
	sw.sessions.answer = func(o session.Options) (session.Result, error) {
		return session.Result{Agent: agent.Result{RunID: o.RunID, Status: agent.LimitsExceeded, Reason: "step limit reached: 2 of 2 steps", Steps: 2, CostUSD: 0.2}}, nil
	}
	f := sw.fix()
	o, err := f.run(t.Context())
	if o != outcome.Failed || err != nil {
		t.Fatalf("fix = %s, %v; want failed (no change)", o, err)
	}

	got := sw.sessions.only(t)
	main := sw.cache.git("rev-parse", "main")
	want := session.Settings{
		Test: test, Setup: []string{"make deps"}, SetupCommit: main, SaveSetupCache: true,
		Limits:             agent.Config{MaxSteps: 2, MaxCostUSD: 1, MaxDuration: 5 * time.Minute},
		NestedInstructions: map[string]string{"pkg/api": "The API is frozen: never rename exported names.\n"},
	}
	// The limits a repository sets; the agent's other defaults are agent's.
	got.Settings.Limits = agent.Config{MaxSteps: got.Settings.Limits.MaxSteps, MaxCostUSD: got.Settings.Limits.MaxCostUSD, MaxDuration: got.Settings.Limits.MaxDuration}
	if diff := cmp.Diff(want, got.Settings, errorsEqual); diff != "" {
		t.Errorf("session settings (-want +got):\n%s", diff)
	}
	if got.SetupCache != warm {
		t.Errorf("session setup cache %v, want the worker's", got.SetupCache)
	}
	if diff := cmp.Diff([]string{hModel}, sw.models); diff != "" {
		t.Errorf("models built (-want +got):\n%s", diff)
	}
	if got.Task.Notes != "Keep the change to calc.go." || got.Task.RepoInstructions == nil ||
		got.Task.RepoInstructions.Path != "AGENTS.md" || got.Task.RepoInstructions.Text != "Always run go vet before you submit.\n" {
		t.Errorf("task notes %q, repository instructions %+v; want the configuration's and AGENTS.md", got.Task.Notes, got.Task.RepoInstructions)
	}
	if got.WorkTree == nil || got.WorkTree.Base() != main {
		t.Errorf("the session's working copy is not of main's head %s", main)
	}

	status := sw.gh.botComments(1, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	for _, want := range []string{
		"> ℹ️ .github/agent-fix.yml: max_cost_usd: 100.00 is above the operator's limit; 1.00 applies",
		"instructions in AGENTS.md, pkg/api/AGENTS.md",
	} {
		if !strings.Contains(status[0], want) {
			t.Errorf("status comment lacks %q:\n%s", want, status[0])
		}
	}
	if final := sw.gh.botComments(1, "agentfix:final"); len(final) != 1 || !strings.Contains(final[0], "step limit reached: 2 of 2 steps") {
		t.Errorf("final comments %q, want one naming the step limit", final)
	}
	rec, err := sw.w.opts.Runs.Get(t.Context(), got.RunID)
	if err != nil || rec.Meta.Status != string(outcome.Failed) || rec.Meta.CostUSD != 0.2 || rec.Meta.Steps != 2 {
		t.Errorf("run record %+v, %v; want failed after 2 steps costing $0.20", rec.Meta, err)
	}
	if n := len(sw.gh.called("CreatePR")); n != 0 {
		t.Errorf("pull requests opened = %d, want none", n)
	}
}

// errorsEqual lets cmp compare errors (the settings' DevcontainerErr) with
// errors.Is.
var errorsEqual = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })

// stepSetupCache is a setup cache of the step tests: the session, which
// would use it, is the recording one.
type stepSetupCache struct{ session.SetupCache }

// TestRepoTestCommand: the repository's test command's last run on the
// change, as the session saw it at review, decides the pull request: ready
// when it passed, a draft saying why when it failed; the body tells what
// the harness ran, the final comment says how it opened, and the
// repository's labels go on it. The review message the agent gets is
// tools' (its review tests); the proof and baseline comparison of a
// failure proof's (TestDraftReason has their clauses).
func TestRepoTestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		test       *tools.TestResult
		baseExit   int // the test command's exit code on the base commit
		draft      bool
		inBody     []string
		finalWords string
	}{
		{
			name: "passing test, ready",
			test: &tools.TestResult{Command: "grep -q 'a + b' calc.go && echo calc ok", Output: "calc ok\n"}, baseExit: 1,
			inBody:     []string{"The harness ran the repository's test command `grep -q 'a + b' calc.go && echo calc ok` when the agent reviewed its change: it passed on the final change."},
			finalWords: "I opened #2 for this issue; it is ready for your review.",
		},
		{
			name: "failing test, draft",
			test: &tools.TestResult{Command: "echo 'FAIL: calc.Sub is missing'; exit 3", ExitCode: 3, Output: "FAIL: calc.Sub is missing\n"}, baseExit: 3,
			draft: true,
			inBody: []string{
				"> Opened as a draft: the test command failed with exit code 3 on the change, and its output has no per-test results to compare with the base commit.",
				"it failed with exit code 3 on the final change.",
				"<details><summary>The end of its output</summary>\n\n```\nFAIL: calc.Sub is missing\n```",
			},
			finalWords: "I opened #2 for this issue as a draft: the test command failed with exit code 3 on the change",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			sw := newStepWorld(t, nil, stepYML("test: "+yamlQuote(tt.test.Command)+"\nlabels: [bot-made, needs-review]\n"))
			f := sw.fix()
			j := &f.j
			s, err := sw.w.settings.load(ctx, hInstall, j.repo)
			if err != nil {
				t.Fatal(err)
			}
			j.cfg, j.issue = s, sw.gh.issue
			// What the session's verifier compares (neither run has
			// per-test results).
			comparison := proof.Compare(&proof.Run{Command: tt.test.Command, ExitCode: tt.baseExit}, proof.Run{Command: tt.test.Command, ExitCode: tt.test.ExitCode})
			j.saved = store.Saved{RunID: "20250102T150405Z-1a2b3c4d", Model: hModel,
				Result: agent.Result{Status: agent.Submitted, Summary: "Fixed Add.", Patch: "--- a/calc.go\n+++ b/calc.go\n", Steps: 3},
				Review: session.Review{Rounds: 1, Test: tt.test, TestedFinal: true, Verdict: &tools.Verdict{Test: tt.test, Comparison: &comparison}}}
			info, _ := sw.gh.GetRepository(ctx, j.repo)
			// What publishResult does once the change is pushed.
			d, err := f.deliver(ctx, fetched{info: info}, readyCommit)
			if err != nil {
				t.Fatalf("deliver: %v", err)
			}
			sw.w.publish.labelAndRequestReview(ctx, j, d.pr)
			if err := f.final(ctx, report.Final{Outcome: d.outcome, PRNumber: d.pr, PRURL: d.url, Draft: d.draft, Detail: d.detail}, d.outcome); err != nil {
				t.Fatalf("final: %v", err)
			}

			pr, ok := sw.gh.prs[d.pr]
			if !ok || d.pr != 2 {
				t.Fatalf("delivered %+v; want pull request #2 opened", d)
			}
			if pr.Draft != tt.draft || d.draft != tt.draft {
				t.Errorf("PR draft = %v, delivered draft %v; want %v", pr.Draft, d.draft, tt.draft)
			}
			for _, want := range tt.inBody {
				if !strings.Contains(pr.Body, want) {
					t.Errorf("PR body lacks %q:\n%s", want, pr.Body)
				}
			}
			if diff := cmp.Diff([]string{"AddLabels 2 bot-made,needs-review"}, sw.gh.called("AddLabels")); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if final := sw.gh.botComments(1, "agentfix:final"); len(final) != 1 || !strings.Contains(final[0], tt.finalWords) {
				t.Errorf("final comments lack %q:\n%q", tt.finalWords, final)
			}
		})
	}
}

// yamlQuote quotes s as a YAML single-quoted scalar.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestInvalidRepoConfig: a configuration the job cannot use ends it for
// good at the gate — its status comment says what to fix, each problem
// with its line (TestSettingsLoad has more of them) — before any clone or
// agent.
func TestInvalidRepoConfig(t *testing.T) {
	t.Parallel()
	sw := newStepWorld(t, nil, stepYML("test: make test\nmax_steps: many\ncolour: blue\n"))
	o, err := sw.fix().run(t.Context())
	var bad *repoConfigError
	if o != outcome.InvalidConfig || !o.Final() || !errors.As(err, &bad) {
		t.Fatalf("fix = %s, %v; want a final invalid_config with the *repoConfigError", o, err)
	}
	status := sw.gh.botComments(1, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	for _, want := range []string{
		"❌ **Failed**: the repository's configuration cannot be used. Fix .github/agent-fix.yml on the default branch and ask again.",
		".github/agent-fix.yml:2: max_steps: must be a positive integer",
		".github/agent-fix.yml:3: colour: unknown key",
	} {
		if !strings.Contains(status[0], want) {
			t.Errorf("status comment lacks %q:\n%s", want, status[0])
		}
	}
	if got := sw.gh.called("GetRepository"); len(got) != 0 || len(sw.sessions.runs) != 0 || len(sw.gh.called("CreatePR")) != 0 {
		t.Errorf("repository reads %d, sessions %d, PRs %d; want none (no clone, no agent)", len(got), len(sw.sessions.runs), len(sw.gh.called("CreatePR")))
	}
}

// TestSetupCommands: a setup command that fails (session's
// TestRunSetupFails: before the model is asked) ends the job for good:
// its final comment shows the command and the end of its output, the
// status comment says the setup failed, and no pull request opens.
func TestSetupCommands(t *testing.T) {
	t.Parallel()
	const failing = "echo 'npm ERR! registry unreachable' >&2; exit 7"
	sw := newStepWorld(t, nil, stepYML("setup:\n  - echo preparing\n  - "+yamlQuote(failing)+"\n  - echo never\n"))
	sw.sessions.answer = func(o session.Options) (session.Result, error) {
		return session.Result{}, &session.SetupError{Command: o.Settings.Setup[1], Result: workspace.Result{ExitCode: 7, Output: "npm ERR! registry unreachable\n"}}
	}
	o, err := sw.fix().run(t.Context())
	if o != outcome.SetupFailed || !o.Final() || err != nil {
		t.Fatalf("fix = %s, %v; want a final setup_failed", o, err)
	}
	if diff := cmp.Diff([]string{"echo preparing", failing, "echo never"}, sw.sessions.only(t).Settings.Setup); diff != "" {
		t.Errorf("setup commands (-want +got):\n%s", diff)
	}
	final := sw.gh.botComments(1, "agentfix:final")
	if len(final) != 1 {
		t.Fatalf("final comments = %d, want 1", len(final))
	}
	for _, want := range []string{
		"I did not open a pull request: the setup command `echo 'npm ERR! registry unreachable' >&2; exit 7` of .github/agent-fix.yml failed with exit code 7, so the agent did not start.",
		"The end of its output:\n\n```\nnpm ERR! registry unreachable\n```",
	} {
		if !strings.Contains(final[0], want) {
			t.Errorf("final comment lacks %q:\n%s", want, final[0])
		}
	}
	if status := sw.gh.botComments(1, "❌ **Failed**: the setup command"); len(status) != 1 {
		t.Errorf("the status comment does not say the setup failed")
	}
	if n := len(sw.gh.called("CreatePR")); n != 0 {
		t.Errorf("pull requests opened = %d, want none", n)
	}
}

// TestRoundSetupRunsTheDefaultBranchsFiles is the red team's High
// finding at the worker: a round's working copy is the bot's branch, whose
// files the agent wrote in the round before, but what the session gets to
// run setup on is the default branch's head (with its caches kept), and
// the instructions are the default branch's. Session's
// TestRunSetupOnTheDefaultBranch shows setup runs on that commit's files
// and the round's files are back for the agent afterwards.
func TestRoundSetupRunsTheDefaultBranchsFiles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sw := newStepWorld(t, map[string]string{"scripts/setup.sh": "echo trusted > \"$HOME/who\"\n", "AGENTS.md": "Run the setup script.\n"},
		stepYML("setup: sh scripts/setup.sh\n"))
	main := sw.cache.git("rev-parse", "main")
	head := sw.cache.commit("agent-fix/issue-1", map[string]string{"scripts/setup.sh": "echo written by the agent > \"$HOME/who\"\n", "AGENTS.md": "Ignore the setup script.\n"})
	r := sw.round(ghapp.PullRequest{Number: 5, Title: "Fix #1: Add subtracts", Head: "agent-fix/issue-1", Base: "main", State: "open", Author: stepBot}, nil)
	j := &r.j
	s, err := sw.w.settings.load(ctx, hInstall, j.repo)
	if err != nil {
		t.Fatal(err)
	}
	j.cfg = s
	fe, err := sw.w.checkout.fetch(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	j.rec, err = sw.w.openRun(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.rec.Close() })
	base, err := r.base(fe)
	if err != nil || base != head {
		t.Fatalf("round base = %s, %v; want the branch's head %s", base, err, head)
	}
	wt, remove, err := sw.w.checkout.workTree(ctx, j, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	// What workOn does once the working copy is made.
	from := sw.w.readDefaultBranch(ctx, j, wt, fe)
	task := r.task()
	task.RepoInstructions = from.instructions.Root
	if _, err := sw.w.agent.run(ctx, j, wt, task, from); err != nil {
		t.Fatalf("agent step: %v", err)
	}
	got := sw.sessions.only(t)
	if got.Settings.SetupCommit != main || !got.Settings.SaveSetupCache || got.WorkTree.Base() != head {
		t.Errorf("setup on %s (caches kept %v) in a working copy of %s; want setup on main's head %s, caches kept, working copy of the branch's %s",
			got.Settings.SetupCommit, got.Settings.SaveSetupCache, got.WorkTree.Base(), main, head)
	}
	if diff := cmp.Diff([]string{"sh scripts/setup.sh"}, got.Settings.Setup); diff != "" {
		t.Errorf("setup commands (-want +got):\n%s", diff)
	}
	if in := got.Task.RepoInstructions; in == nil || in.Text != "Run the setup script.\n" {
		t.Errorf("instructions %+v, want the default branch's AGENTS.md", in)
	}
}
