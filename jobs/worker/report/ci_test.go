package report

import (
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// TestAutoRoundGolden: the reply of ci and conflict rounds, and the notes
// of automatic rounds said once.
func TestAutoRoundGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	test := CheckRef{Name: "test", App: "GitHub Actions", URL: "https://github.com/octo/widget/actions/runs/7/job/8"}
	lint := CheckRef{Name: "lint", App: "Other CI"}
	base := AutoRound{
		Final: Final{Marker: ghapp.Marker("final revise:octo/widget#2:ci-0123"), Requester: "agentfix[bot]", Command: "/agent-fix",
			Summary: hostileSummary, RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, Model: "openai/gpt-5",
			Outcome: outcome.PRUpdated},
		Checks: []CheckRef{test}, Head: "0123456789ab", Commit: "456789abcdef", Round: 1, MaxRounds: 2,
		TestCommand: "go test ./...", TestVerdict: "passed", TestPassed: true, ConfigFile: ".github/agent-fix.yml",
	}
	round := func(edit func(*AutoRound)) AutoRound {
		d := base
		edit(&d)
		return d
	}
	out := goldenCases(t, x, tmplAutoRound, []golden{
		{"ci: pushed", base},
		{"ci: pushed, a pre-existing failure, a flaky check, a log that could not be read", round(func(d *AutoRound) {
			no := test
			no.NoLog = "GitHub answered 410 Gone: logs expire after a while"
			d.Checks, d.PreExisting, d.Flaky = []CheckRef{no, {Name: "build", App: "GitHub Actions"}}, []CheckRef{lint}, []string{"e2e"}
			d.TestVerdict, d.Round = "", 2
		})},
		{"ci: incomplete", round(func(d *AutoRound) {
			d.Draft, d.Detail, d.TestVerdict, d.TestPassed = true, "step limit reached: 75 of 75 steps", "failed with exit code 1", false
		})},
		{"ci: no change", round(func(d *AutoRound) { d.Outcome, d.Commit = outcome.NoChanges, "" })},
		{"ci: stopped", round(func(d *AutoRound) { d.Outcome, d.Commit, d.Summary, d.StoppedBy = outcome.Cancelled, "", "", "alice" })},
		{"ci: failed", round(func(d *AutoRound) {
			d.Outcome, d.Commit, d.Summary = outcome.Failed, "", ""
			d.Detail = "someone else pushed to `agent-fix/issue-1` while the agent worked; ask again to start from the new state."
		})},
		{"conflict: pushed", round(func(d *AutoRound) {
			d.Checks, d.Base, d.Conflicts, d.Marker = nil, "main", []string{"calc.go", "README.md"}, ghapp.Marker("final revise:octo/widget#2:conflict-0123-4567")
		})},
		{"conflict: markers left", round(func(d *AutoRound) {
			d.Checks, d.Base, d.Conflicts, d.Outcome, d.Commit, d.Summary = nil, "main", []string{"calc.go"}, outcome.Failed, "", ""
			d.Detail, d.Patch = "conflict markers remain in `calc.go`, so I did not push the merge.", "diff --git a/calc.go b/calc.go\n"
		})},
	})
	note := AutoNote{Marker: ghapp.Marker("ci-limit octo/widget#2"), Head: "0123456789ab", Checks: []CheckRef{test, lint}, MaxRounds: 2,
		Command: "/agent-fix", ConfigFile: ".github/agent-fix.yml"}
	one := note
	one.Checks, one.MaxRounds = []CheckRef{test}, 1
	none := note
	none.Checks = nil
	out += goldenCases(t, x, tmplCILimit, []golden{{"limit reached", note}, {"limit of one reached", one}, {"limit reached, nothing failing named", none}})
	out += goldenCases(t, x, tmplCIFlaky, []golden{{"flaky", one}, {"flaky, two", note}})
	reply := Reply{Marker: ghapp.Marker("reply d-9"), Requester: "bob", Command: "/agent-fix"}
	resumed, onPR := reply, reply
	resumed.StoppedBy, resumed.IsPR = "alice", true
	onPR.IsPR = true
	out += goldenCases(t, x, tmpl(ReplyAutoStopped), []golden{{"automatic rounds stopped", reply}})
	out += goldenCases(t, x, tmpl(ReplyAutoResumed), []golden{{"automatic rounds resumed", resumed}})
	out += goldenCases(t, x, tmpl(ReplyNothingToResume), []golden{{"nothing to resume", onPR}, {"resume on an issue", reply}})
	out += goldenCases(t, x, tmpl(ReplyResumeRefused), []golden{{"resume refused", onPR}})
	checkGolden(t, "auto_round", out)
}
