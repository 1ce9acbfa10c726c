package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// TestRepoSettingsGolden renders what the bot writes about a repository's
// configuration, its test command and its budgets: pull request bodies,
// status and final comments, replies.
func TestRepoSettingsGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	var b strings.Builder
	section := func(name, tmpl string, data any) {
		t.Helper()
		var out string
		var err error
		if tmpl == tmplPRBody {
			out, err = x.PRBody(data.(PRBody))
		} else {
			out, err = x.render(tmpl, data)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", name, out)
	}
	body := PRBody{Issue: 12, Summary: "Fixed the parser; `go test ./...` passes.", ReviewRounds: 1, ReviewStages: 1,
		Requester: "alice", Model: "openai/gpt-5", Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second,
		RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix", TestCommand: "make test"}
	withBody := func(edit func(*PRBody)) PRBody {
		d := body
		edit(&d)
		return d
	}
	section("pr body: test passed on the final change, signed run link", tmplPRBody, withBody(func(d *PRBody) {
		d.TestRan, d.TestPassed, d.TestVerdict, d.TestFinal = true, true, "passed", true
		d.RunURL = "https://bot.example.com/runs/20250102T150405Z-1a2b3c4d?exp=1736000000&sig=abc"
	}))
	section("pr body: test failed, draft", tmplPRBody, withBody(func(d *PRBody) {
		d.TestRan, d.TestVerdict, d.TestFinal = true, "failed with exit code 2", true
		d.TestOutput = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3, want 4\n```\nFAIL\n"
		d.DraftReason = "the repository's test command `make test` failed with exit code 2 on the change"
	}))
	section("pr body: test passed before the last edit, two review stages", tmplPRBody, withBody(func(d *PRBody) {
		d.TestRan, d.TestPassed, d.TestVerdict, d.ReviewRounds, d.ReviewStages = true, true, "passed", 2, 2
	}))
	section("pr body: the repository asks for drafts", tmplPRBody, withBody(func(d *PRBody) {
		d.TestCommand = ""
		d.DraftReason = "this repository's configuration asks for draft pull requests (draft: true)"
	}))
	section("pr body: incomplete before the review", tmplPRBody, withBody(func(d *PRBody) {
		d.Incomplete, d.Detail, d.ReviewRounds, d.Summary = true, "This job's budget of $1.00 is nearly used up: $0.97 spent, and the next model call could cost up to $0.05.", 0, ""
	}))
	section("pr body: incomplete after a review", tmplPRBody, withBody(func(d *PRBody) {
		d.Incomplete, d.Detail = true, "step limit reached: 20 of 20 steps"
		d.TestRan, d.TestPassed, d.TestVerdict = true, true, "passed"
	}))

	status := Status{Marker: ghapp.Marker("status fix:octo/widget#12:d-1"), Requester: "alice",
		Branch: "bot/issue-12", MaxSteps: 20, MaxCostUSD: 1}
	section("status: invalid configuration", tmplStatus, func() Status {
		d := status
		d.Phase, d.Outcome = PhaseFailed, outcome.InvalidConfig
		d.Detail = "the repository's configuration cannot be used. Fix .github/agent-fix.yml on the default branch and ask again."
		d.Problems = ".github/agent-fix.yml:2: max_steps: must be a positive integer, got the text \"many\"\n.github/agent-fix.yml:4: colour: unknown key; the keys are _extends, setup, test"
		return d
	}())
	section("status: limits the repository could not raise", tmplStatus, func() Status {
		d := status
		d.Phase = PhaseCloning
		d.Notes = []string{".github/agent-fix.yml: max_cost_usd: 5.00 is above the operator's limit; 1.00 applies"}
		return d
	}())
	section("status: draft because the test failed", tmplStatus, func() Status {
		d := status
		d.Phase, d.Outcome, d.PRNumber, d.PRURL, d.Draft = PhaseDone, outcome.PROpened, 13, "https://github.com/octo/widget/pull/13", true
		d.Detail = "the repository's test command `make test` failed with exit code 2 on the change"
		return d
	}())
	section("status: refused by the budget", tmplStatus, func() Status {
		d := status
		d.Phase, d.Outcome = PhaseCancelled, outcome.OverBudget
		d.Detail = "This repository's daily budget of $20.00 is used up: $20.00 spent today (UTC). It resets at 00:00 UTC (in 5 h 12 min)."
		return d
	}())

	final := Final{Marker: ghapp.Marker("final fix:octo/widget#12:d-1"), Requester: "alice", Command: "/agent-fix",
		RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, Model: "openai/gpt-5"}
	section("final: draft because the test failed", tmplFinal, func() Final {
		d := final
		d.Outcome, d.PRNumber, d.Draft = outcome.PROpened, 13, true
		d.Detail = "the repository's test command `make test` failed with exit code 2 on the change"
		return d
	}())
	section("final: setup failed", tmplFinal, func() Final {
		d := final
		d.Outcome, d.Steps, d.CostUSD = outcome.SetupFailed, 0, 0
		d.Detail = "the setup command `npm ci` of .github/agent-fix.yml failed with exit code 1, so the agent did not start."
		d.SetupOutput = "… (120 bytes before this left out)\nnpm ERR! code ENOTFOUND\nnpm ERR! network request failed\n"
		return d
	}())

	reply := Reply{Marker: ghapp.Marker("reply d-1"), Requester: "mallory", Label: "agent-fix", Command: "/agent-fix",
		ConfigFile: ".github/agent-fix.yml"}
	section("reply: not allowed on an issue", tmpl(ReplyNotAllowed), reply)
	pr := reply
	pr.IsPR = true
	section("reply: not allowed on a pull request", tmpl(ReplyNotAllowed), pr)
	over := reply
	over.Budget = "The daily budget of $100.00 for all repositories of this app installation is used up: $100.00 spent today (UTC). It resets at 00:00 UTC (in 40 min)."
	section("reply: over budget", tmpl(ReplyOverBudget), over)
	checkGolden(t, "repo_settings", b.String())
}
