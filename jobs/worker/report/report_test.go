package report

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// tmpl is the template of reply k.
func tmpl(k ReplyKind) string { return string(k) + ".md.tmpl" }

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// checkGolden compares got with testdata/name.golden.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from its golden file (-want +got):\n%s", path, diff)
	}
}

// goldenCases renders each case and joins them, headed by their names.
func goldenCases(t *testing.T, x *Texts, tmpl string, cases []struct {
	name string
	data any
}) string {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		var out string
		var err error
		switch d := c.data.(type) {
		case Final:
			out, err = x.Final(d) // with its patch cut, as posted
		default:
			out, err = x.render(tmpl, c.data)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, out)
	}
	return b.String()
}

type golden = struct {
	name string
	data any
}

// hostileSummary is model-written text trying every trick Neutralize
// defuses, and a fence it leaves open.
const hostileSummary = "Fixed the parser. Thanks @octocat! This fixes #99.\n<img src=x onerror=alert(1)>\n![x](https://evil.example/x.png)\n```\nunclosed fence with @admin"

func mustTexts(t *testing.T) *Texts {
	t.Helper()
	x, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestStatusGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	base := Status{Marker: ghapp.Marker("status fix:octo/widget#12:d-1"), Requester: "alice",
		Branch: "agent-fix/issue-12", MaxSteps: 75, MaxCostUSD: 3, RunID: "20250102T150405Z-1a2b3c4d"}
	with := func(edit func(*Status)) Status {
		d := base
		edit(&d)
		return d
	}
	cases := []golden{
		{"queued", with(func(d *Status) { d.Phase, d.RunID = PhaseQueued, "" })},
		{"cloning", with(func(d *Status) { d.Phase, d.RunID = PhaseCloning, "" })},
		{"setup", with(func(d *Status) { d.Phase = PhaseSetup })},
		{"working", with(func(d *Status) {
			d.Phase, d.Step, d.CostUSD, d.Elapsed = PhaseWorking, 7, 0.4213, 3*time.Minute+12*time.Second
			d.LastAction = "bash: grep -rn `@admin <b>` src/ | head"
		})},
		{"reviewing", with(func(d *Status) { d.Phase, d.Step, d.CostUSD, d.Elapsed = PhaseReviewing, 12, 0.9, 5*time.Minute })},
		{"pushing", with(func(d *Status) { d.Phase = PhasePushing })},
		{"done pr", with(func(d *Status) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL = PhaseDone, outcome.PROpened, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"done draft", with(func(d *Status) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL, d.Draft, d.Detail = PhaseDone, outcome.DraftOpened, 13, "https://github.com/octo/widget/pull/13", true, "step limit reached: 75 of 75 steps"
		})},
		{"done pr updated", with(func(d *Status) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL = PhaseDone, outcome.PRUpdated, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"done no changes", with(func(d *Status) {
			d.Phase, d.Outcome, d.Detail = PhaseDone, outcome.NoChanges, "the agent finished without changing any file."
		})},
		{"failed", with(func(d *Status) {
			d.Phase, d.Outcome, d.Detail = PhaseFailed, outcome.Failed, "the model provider kept failing before the agent had a change."
		})},
		{"cancelled by user", with(func(d *Status) { d.Phase, d.Outcome, d.StoppedBy = PhaseCancelled, outcome.Cancelled, "bob" })},
		{"cancelled issue closed", with(func(d *Status) {
			d.Phase, d.Outcome, d.Detail = PhaseCancelled, outcome.Cancelled, "the issue was closed."
		})},
		{"interrupted", with(func(d *Status) { d.Phase = PhaseInterrupted })},
		{"setup in an image, a devcontainer passed over", with(func(d *Status) {
			d.Phase = PhaseSetup
			d.Environment = "image `golang:1.26` (`index.docker.io/library/golang@sha256:0123`), named in `.github/agent-fix.yml`"
			d.Notes = []string{"`.devcontainer/devcontainer.json` is not used: `.github/agent-fix.yml` names an image."}
		})},
		{"image failed", with(func(d *Status) {
			d.Phase, d.Outcome = PhaseFailed, outcome.ImageFailed
			d.Detail = ImageFailure("ghcr.io/octo/env:1", "named in .github/agent-fix.yml", "ghcr.io/octo/env:1: not found: the registry has no such tag (MANIFEST_UNKNOWN)")
		})},
	}
	checkGolden(t, "status", goldenCases(t, x, tmplStatus, cases))
}

func TestFinalGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	base := Final{Marker: ghapp.Marker("final fix:octo/widget#12:d-1"), Requester: "alice", Command: "/agent-fix",
		RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, Model: "openai/gpt-5",
		Summary: "Fixed the off-by-one in `parse()` and added a regression test."}
	with := func(edit func(*Final)) Final {
		d := base
		edit(&d)
		return d
	}
	cases := []golden{
		{"pr opened", with(func(d *Final) {
			d.Outcome, d.PRNumber, d.PRURL = outcome.PROpened, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"draft opened", with(func(d *Final) {
			d.Outcome, d.PRNumber, d.Draft, d.Detail = outcome.DraftOpened, 13, true, "step limit reached: 75 of 75 steps"
		})},
		{"pr updated", with(func(d *Final) { d.Outcome, d.PRNumber = outcome.PRUpdated, 13 })},
		{"no changes", with(func(d *Final) {
			d.Outcome, d.Detail = outcome.NoChanges, "the agent finished without changing any file."
		})},
		{"workflows refused", with(func(d *Final) {
			d.Outcome, d.Detail = outcome.WorkflowsRefused, "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository."
			d.Patch = "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n-on: push\n+on: [push]\n+# ``` fence inside\n"
		})},
		{"cancelled", with(func(d *Final) { d.Outcome, d.StoppedBy, d.Summary = outcome.Cancelled, "bob", "" })},
		{"gave up before a run", with(func(d *Final) {
			d.Outcome, d.Summary, d.RunID = outcome.Failed, "", ""
			d.Detail = "an internal error stopped the job after 3 attempts; the worker's logs have the details."
		})},
		{"gave up after the agent finished", with(func(d *Final) {
			d.Outcome = outcome.Failed
			d.Detail = "an internal error stopped the job after 3 attempts, after the agent finished; its change is below, and the worker's logs have the details."
			d.Patch = "diff --git a/calc.go b/calc.go\n-\treturn a - b\n+\treturn a + b\n" + strings.Repeat("+// padding\n", 2000)
		})},
		{"image failed", with(func(d *Final) {
			d.Outcome, d.Summary, d.Steps, d.CostUSD = outcome.ImageFailed, "", 0, 0
			d.Detail = ImageFailure("ghcr.io/octo/env:1", "named in .github/agent-fix.yml", "ghcr.io/octo/env:1: not found: the registry has no such tag (MANIFEST_UNKNOWN)")
		})},
		{"hostile summary", with(func(d *Final) {
			d.Outcome, d.PRNumber, d.Summary = outcome.PROpened, 13, hostileSummary
		})},
	}
	for _, status := range []agent.ExitStatus{agent.LimitsExceeded, agent.FormatErrorExit, agent.ContextExceeded, agent.EnvDead, agent.APIError, agent.Stuck, agent.ModelAuth, agent.Error} {
		res := agent.Result{Status: status, Reason: "step limit reached: 75 of 75 steps"}
		cases = append(cases, golden{"failed " + string(status), with(func(d *Final) {
			d.Outcome, d.Detail, d.Summary = outcome.Failed, NoPRDetail(res), ""
		})})
	}
	checkGolden(t, "final", goldenCases(t, x, tmplFinal, cases))
}

func TestPRBodyGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	base := PRBody{Issue: 12, Summary: hostileSummary, ReviewRounds: 1, Requester: "alice", Model: "openai/gpt-5",
		Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix"}
	incomplete := base
	incomplete.Incomplete, incomplete.Detail, incomplete.Summary = true, "step limit reached: 75 of 75 steps", ""
	tested := base
	tested.Summary, tested.ReviewRounds, tested.ReviewStages = "Fixed it.", 2, 2
	tested.TestCommand, tested.TestRan, tested.TestPassed, tested.TestVerdict, tested.TestFinal = "go test ./...", true, true, "passed", true
	proven := tested
	proven.Evidence = &Evidence{Command: "go test ./...", Base: "failed with exit code 1", Change: "passed",
		Proven:      []string{"TestParseEmpty in parse_test.go: `parse_test.go:12: Parse(\"\") = 3, want 0`"},
		Preexisting: []string{"example.com/m/mime TestTypeByExtension"},
		Notes:       []string{"One failure also fails on the base commit; it does not make this pull request a draft."}}
	inImage := tested
	inImage.Environment = "image `golang:1.26` (`index.docker.io/library/golang@sha256:0123`), named in `.github/agent-fix.yml`"
	flagged := tested
	flagged.DraftReason = "the change weakens the tests: parse_test.go:30: adds t.Skip to TestParseLong"
	flagged.Evidence = &Evidence{Command: "go test ./...", Base: "failed with exit code 1", Change: "passed",
		NoProof: "the change adds or edits no test", Flags: []string{"parse_test.go:30: adds t.Skip to TestParseLong", "parse_test.go: deletes TestParseOld"}}
	var b strings.Builder
	for _, c := range []golden{{"submitted", base}, {"incomplete", incomplete}, {"with test command", tested},
		{"with a proven regression test and a pre-existing failure", proven}, {"with weakened tests", flagged},
		{"in an image", inImage}} {
		out, err := x.PRBody(c.data.(PRBody))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, out)
	}
	checkGolden(t, "pr_body", b.String())
}

func TestPRBodyCap(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	tests := []struct {
		name    string
		summary string
	}{
		{"ascii", strings.Repeat("a", 100000)},
		{"multibyte", strings.Repeat("é€😀", 40000)},
		{"just over", strings.Repeat("b", MaxPRBody)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := x.PRBody(PRBody{Issue: 1, Summary: tt.summary, Requester: "a", Model: "m", RunID: "r", Command: "/agent-fix"})
			if err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(body); n > MaxPRBody {
				t.Errorf("body has %d characters, want at most %d", n, MaxPRBody)
			}
			if !strings.Contains(body, "… (truncated: ") || !strings.HasPrefix(body, "Fixes #1\n") || !strings.Contains(body, "| Run | `r` |") {
				t.Errorf("capped body lacks the truncation note, Fixes #1 or the run table:\n%s", body[len(body)-600:])
			}
		})
	}
	short, err := x.PRBody(PRBody{Issue: 1, Summary: "short", Requester: "a", Model: "m", RunID: "r", Command: "/agent-fix"})
	if err != nil || strings.Contains(short, "truncated") {
		t.Errorf("a short body = %v, %q; want no truncation", err, short)
	}
}

func TestRepliesGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	base := Reply{Marker: ghapp.Marker("reply d-1"), Requester: "mallory", Label: "agent-fix", Command: "/agent-fix",
		Limits: []string{Limits(75, 3, 45*time.Minute)}}
	with := func(edit func(*Reply)) Reply {
		d := base
		edit(&d)
		return d
	}
	var b strings.Builder
	for _, c := range []struct {
		name, tmpl string
		data       Reply
	}{
		{"refusal on an issue", tmpl(ReplyRefusal), base},
		{"refusal on a pull request", tmpl(ReplyRefusal), with(func(d *Reply) { d.IsPR = true })},
		{"already working", tmpl(ReplyAlreadyWorking), with(func(d *Reply) { d.Link = "https://github.com/octo/widget/issues/12#issuecomment-5" })},
		{"not my pull request", tmpl(ReplyNotMyPR), base},
		{"closed", tmpl(ReplyClosed), base},
		{"locked", tmpl(ReplyClosed), with(func(d *Reply) { d.Locked = true })},
		{"help", tmpl(ReplyHelp), base},
		{"stop refused", tmpl(ReplyStopRefused), base},
		{"nothing to stop", tmpl(ReplyNothingToStop), base},
		{"nothing to stop on a pull request", tmpl(ReplyNothingToStop), with(func(d *Reply) { d.IsPR = true })},
	} {
		out, err := x.render(c.tmpl, c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, out)
	}
	checkGolden(t, "replies", b.String())
}

func TestCheckRunGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	check := Check{Issue: 12, Requester: "alice", Model: "openai/gpt-5", Steps: 9, CostUSD: 0.42,
		Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d"}
	running, success, neutral := check, check, check
	running.Running = true
	success.ExitStatus = string(agent.Submitted)
	neutral.ExitStatus, neutral.Detail = string(agent.Autosubmitted), "step limit reached: 75 of 75 steps"
	evidence := success
	evidence.Evidence = &Evidence{Command: "pytest", Base: "failed with exit code 1", Change: "passed", Proven: []string{"test_empty in tests/test_parse.py"}}
	evidence.Environment = "image `python:3.12` (`index.docker.io/library/python@sha256:4567`), the operator's default"
	auto := running
	auto.Requester, auto.Doing = "agentfix[bot]", "fixing the failing checks of #14 on its own, for issue #12"
	out := goldenCases(t, x, tmplCheckRun, []golden{{"running", running}, {"running, a round of its own", auto},
		{"success", success}, {"neutral", neutral}, {"with evidence", evidence}})
	checkGolden(t, "check_run", out)
}

func TestTemplatesRefuseMissingFields(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	if _, err := x.render(tmplFinal, map[string]any{"Marker": "m"}); err == nil {
		t.Errorf("rendering with missing fields succeeded, want an error (missingkey=error)")
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, got, want string }{
		{"code plain", Code("go test ./..."), "`go test ./...`"},
		{"code with backtick", Code("echo `date`"), "`` echo `date` ``"},
		{"code with inner backtick", Code("a ` b"), "``a ` b``"},
		{"code multiline", Code("a\nb"), "`a b`"},
		{"fence", Fence("diff", "a\n```\nb\n"), "````diff\na\n```\nb\n````"},
		{"duration s", Duration(42 * time.Second), "42s"},
		{"duration m", Duration(192 * time.Second), "3m12s"},
		{"duration h", Duration(64 * time.Minute), "1h04m"},
		{"title", PlainTitle("Crash  when parsing;\nfixes #3"), "Crash when parsing; fixes #\u200b3"},
		{"neutralize closes fence", neutralizeBlock("```\ncode"), "```\ncode\n```"},
		{"clip", clip(3, "abcdef"), "abc\n\n… (truncated: 3 more characters)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestRoundGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	base := Final{
		Marker: ghapp.Marker("final revise:octo/widget#2:d-3"), Requester: "alice", Command: "/agent-fix",
		Summary: hostileSummary, RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42,
		Duration: 192 * time.Second, Model: "openai/gpt-5",
	}
	final := func(edit func(*RoundFinal)) RoundFinal {
		d := RoundFinal{Final: base, Requesters: []string{"alice"}, Commit: "0123456789ab"}
		edit(&d)
		return d
	}
	out := goldenCases(t, x, tmplRoundFinal, []golden{
		{"pushed", final(func(d *RoundFinal) { d.Outcome = outcome.PRUpdated })},
		{"pushed incomplete, follow-up of two", final(func(d *RoundFinal) {
			d.Outcome, d.Draft, d.Detail, d.Requesters = outcome.PRUpdated, true, "step limit reached: 75 of 75 steps", []string{"alice", "bob"}
		})},
		{"pushed, marked ready", final(func(d *RoundFinal) { d.Outcome, d.MarkedReady = outcome.PRUpdated, true })},
		{"pushed, could not mark ready", final(func(d *RoundFinal) {
			d.Outcome, d.NotReady = outcome.PRUpdated, "GitHub answered: Resource not accessible by integration"
		})},
		{"no change", final(func(d *RoundFinal) { d.Outcome, d.Commit = outcome.NoChanges, "" })},
		{"refused", final(func(d *RoundFinal) {
			d.Outcome, d.Commit, d.Summary = outcome.WorkflowsRefused, "", ""
			d.Detail, d.Patch = "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository.", "diff --git a/x b/x\n"
		})},
		{"stopped, kept commands dropped", final(func(d *RoundFinal) {
			d.Outcome, d.Commit, d.Summary, d.StoppedBy, d.Dropped = outcome.Cancelled, "", "", "bob", []string{"carol", "dave"}
		})},
	})
	thread := ThreadReply{Marker: ghapp.Marker("thread revise:octo/widget#2:d-3 77"), Commit: "0123456789ab", Path: "calc.go",
		Link: "https://github.com/octo/widget/pull/2#issuecomment-9"}
	with := func(edit func(*ThreadReply)) ThreadReply {
		d := thread
		edit(&d)
		return d
	}
	out += goldenCases(t, x, tmplThreadReply, []golden{
		{"thread: changed", with(func(d *ThreadReply) { d.Outcome, d.Changed = outcome.PRUpdated, true })},
		{"thread: other files changed", with(func(d *ThreadReply) { d.Outcome = outcome.PRUpdated })},
		{"thread: no change", with(func(d *ThreadReply) { d.Outcome, d.Commit = outcome.NoChanges, "" })},
		{"thread: failed", with(func(d *ThreadReply) {
			d.Outcome, d.Commit, d.Detail = outcome.Failed, "", "someone else pushed to `agent-fix/issue-1` while the agent worked; ask again to start from the new state."
		})},
	})
	reply := Reply{Marker: ghapp.Marker("reply d-4"), Requester: "bob", Label: "agent-fix", Command: "/agent-fix"}
	kept, closed, merged := reply, reply, reply
	kept.Link = "https://github.com/octo/widget/pull/2#issuecomment-8"
	merged.Merged = true
	out += goldenCases(t, x, tmpl(ReplyKept), []golden{{"kept", kept}, {"kept without a link", reply}})
	out += goldenCases(t, x, tmpl(ReplyPRClosed), []golden{{"pull request closed", closed}, {"pull request merged", merged}})
	out += goldenCases(t, x, tmpl(ReplyNoIssue), []golden{{"no issue", reply}})
	status := Status{Marker: ghapp.Marker("status revise:octo/widget#2:d-3"), Requester: "alice", OnPR: true,
		Branch: "agent-fix/issue-1", MaxSteps: 75, MaxCostUSD: 3}
	withStatus := func(edit func(*Status)) Status {
		d := status
		edit(&d)
		return d
	}
	out += goldenCases(t, x, tmplStatus, []golden{
		{"status on the PR: queued", withStatus(func(d *Status) { d.Phase = PhaseQueued })},
		{"status on the PR: pushing", withStatus(func(d *Status) { d.Phase, d.RunID = PhasePushing, "20250102T150405Z-1a2b3c4d" })},
		{"status on the PR: no change", withStatus(func(d *Status) {
			d.Phase, d.Outcome, d.Detail = PhaseDone, outcome.NoChanges, "the agent finished without changing any file."
		})},
		{"status on the issue: moved", withStatus(func(d *Status) {
			d.OnPR, d.Phase, d.PRNumber, d.PRURL, d.Detail = false, PhaseMoved, 2, "https://github.com/octo/widget/pull/2", "the work goes on there as a new round."
		})},
	})
	check := Check{Issue: 1, Requester: "alice", Model: "openai/gpt-5", RunID: "20250102T150405Z-1a2b3c4d"}
	stopped := check
	stopped.Verification = Verification(agent.Result{})
	superseded := check
	superseded.ExitStatus, superseded.Steps, superseded.CostUSD, superseded.Duration = string(agent.Submitted), 9, 0.42, 192*time.Second
	superseded.Verification = Verification(agent.Result{Status: agent.Submitted})
	out += goldenCases(t, x, tmplCheckRun, []golden{{"round check: superseded", superseded}, {"round check: stopped before the agent ran", stopped}})
	checkGolden(t, "round", out)
}

// TestPRCompletedGolden: a round that completes a draft replaces the
// notice the body opened with (as pr_body.md.tmpl renders it) and keeps
// the rest.
func TestPRCompletedGolden(t *testing.T) {
	t.Parallel()
	x := mustTexts(t)
	opened := PRBody{Issue: 12, Summary: "Fixed the parser.", ReviewRounds: 1, Requester: "alice", Model: "openai/gpt-5",
		Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix", TestCommand: "make test"}
	incomplete := opened
	incomplete.Incomplete, incomplete.Detail, incomplete.ReviewRounds = true, "This job's budget of $1.00 is nearly used up: $0.97 spent, and the next model call could cost up to $0.05.", 0
	failed := opened
	failed.TestRan, failed.TestVerdict, failed.TestFinal, failed.TestOutput = true, "failed with exit code 2", true, "FAIL\n"
	failed.DraftReason = "the repository's test command `make test` failed with exit code 2 on the change"
	round := Completed{Commit: "0123456789ab", PRBody: PRBody{RunID: "20250103T090000Z-5e6f7a8b", TestCommand: "make test",
		TestRan: true, TestPassed: true, TestVerdict: "passed", TestFinal: true}}
	linked, lastReviewed, untested := round, round, round
	linked.RunURL = "https://bot.example.com/runs/20250103T090000Z-5e6f7a8b?exp=1736000000&sig=abc"
	lastReviewed.TestFinal = false
	untested.TestCommand, untested.TestRan, untested.TestVerdict = "", false, ""
	var b strings.Builder
	for _, c := range []struct {
		name   string
		opened PRBody
		round  Completed
	}{
		{"incomplete, completed with the test passing, signed run link", incomplete, linked},
		{"draft after a failed test, completed with the test passing as last reviewed", failed, lastReviewed},
		{"incomplete, completed without a test command", incomplete, untested},
	} {
		body, err := x.PRBody(c.opened)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := x.CompletedBody(body, c.round)
		if err != nil || !ok {
			t.Fatalf("%s: completedBody = %v, %v; want the notice replaced", c.name, ok, err)
		}
		_, rest, _ := strings.Cut(body, "## Summary")
		if !strings.HasSuffix(got, rest) || !strings.HasPrefix(got, "Fixes #12\n\n> [!NOTE]\n") {
			t.Errorf("%s: the body around the notice changed:\n%s", c.name, got)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, got)
	}
	checkGolden(t, "pr_completed", b.String())

	body, err := x.PRBody(incomplete)
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll(body, "\n", "\r\n") // as GitHub keeps a body edited on the web
	if got, ok, err := x.CompletedBody(crlf, linked); err != nil || !ok || strings.Contains(got, "This change is incomplete:") {
		t.Errorf("CRLF body: completedBody = %v, %v; want the notice replaced:\n%s", ok, err, got)
	}
	for _, plain := range []string{"Fixes #12\n\n## Summary\n\nDone.\n", strings.Replace(body, "> [!WARNING]", "> [!CAUTION]", 1)} {
		if got, ok, err := x.CompletedBody(plain, linked); err != nil || ok || got != plain {
			t.Errorf("body without the notice: completedBody = %v, %v, changed %v; want it left alone", ok, err, got != plain)
		}
	}
}

func TestCutDraftMark(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title, want string
		marked      bool
	}{
		{"[incomplete] Fix #1: crash", "Fix #1: crash", true},
		{"[draft] Fix #1: crash", "Fix #1: crash", true},
		{"Fix #1: crash", "Fix #1: crash", false},
		{"Fix #1: [draft] crash", "Fix #1: [draft] crash", false},
		{"[incomplete]Fix #1", "[incomplete]Fix #1", false},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			got, marked := CutDraftMark(tt.title)
			if got != tt.want || marked != tt.marked {
				t.Errorf("CutDraftMark(%q) = %q, %v; want %q, %v", tt.title, got, marked, tt.want, tt.marked)
			}
		})
	}
}

func TestGitHubTrouble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"graphql", fmt.Errorf("mark: %w", &ghapp.GraphQLError{Messages: []string{"Resource not accessible by integration", "Second."}}),
			"GitHub answered: Resource not accessible by integration; Second"},
		{"rest", fmt.Errorf("mark: %w", &ghapp.APIError{Method: "POST", Path: "/api/graphql", Status: 401, Message: "Bad credentials"}),
			"GitHub answered 401 Unauthorized: Bad credentials"},
		{"rate limit", &url.Error{Op: "Post", URL: "https://api.github.com/graphql", Err: &ghapp.RateLimitError{Reset: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}},
			"GitHub's rate limit is used up until 2026-03-01T12:00:00Z"},
		{"connection", &url.Error{Op: "Post", URL: "https://api.github.com/graphql", Err: errors.New("connection refused")}, "GitHub could not be reached"},
		{"other", errors.New("mark pull request octo/widget#2 ready for review: GitHub gave no node id"),
			"GitHub's answer was not as expected; the worker's logs have the details"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GitHubTrouble(tt.err); got != tt.want {
				t.Errorf("GitHubTrouble(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// editRecorder records the status comment edits; the rest of GitHub is
// not used by a statusComment.
type editRecorder struct {
	edits []string
}

func (e *editRecorder) EditComment(_ context.Context, _ ghapp.Repo, _ int64, body string) (ghapp.Comment, error) {
	e.edits = append(e.edits, body)
	return ghapp.Comment{}, nil
}

// TestStatusCommentPace: a phase change is shown at once, progress within a
// phase at most every interval, and an unchanged body never.
func TestStatusCommentPace(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	gh := &editRecorder{}
	s := NewStatusComment(gh, ghapp.Repo{Owner: "octo", Name: "widget"}, 5, mustTexts(t),
		Status{Requester: "alice", Phase: PhaseQueued, MaxSteps: 75, MaxCostUSD: 3}, DefaultStatusInterval,
		func() time.Time { return now }, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	step := func(n int) func(*Status) {
		return func(d *Status) { d.Step, d.CostUSD = n, float64(n)/100 }
	}
	tests := []struct {
		name    string
		advance time.Duration
		edit    func(*Status)
		force   bool
		edited  bool
	}{
		{"phase change", 0, func(d *Status) { d.Phase = PhaseWorking }, false, true},
		{"progress 10 s later", 10 * time.Second, step(1), false, false},
		{"progress 29 s after the edit", 19 * time.Second, step(2), false, false},
		{"progress 30 s after the edit", time.Second, step(3), false, true},
		{"phase change 1 s later", time.Second, func(d *Status) { d.Phase = PhaseReviewing }, false, true},
		{"forced but unchanged", 0, func(*Status) {}, true, false},
		{"forced change", 0, func(d *Status) { d.Phase = PhasePushing }, true, true},
	}
	for _, tt := range tests {
		now = now.Add(tt.advance)
		before := len(gh.edits)
		if err := s.Show(ctx, tt.edit, tt.force); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := len(gh.edits) > before; got != tt.edited {
			t.Errorf("%s: edited = %v, want %v", tt.name, got, tt.edited)
		}
	}
	if last := gh.edits[len(gh.edits)-1]; !strings.Contains(last, "📤 **Pushing**") {
		t.Errorf("last edit:\n%s", last)
	}
	if third := gh.edits[1]; !strings.Contains(third, "step 3 of 75 · $0.03") {
		t.Errorf("the 30 s edit shows the latest progress, got:\n%s", third)
	}
}

func TestCheckConclusion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		o          outcome.Outcome
		incomplete bool
		onPushed   bool
		conclusion string
		title      string
	}{
		{"submitted, on the pushed commit", outcome.PROpened, false, true, "success", "The agent submitted this change"},
		{"incomplete, on the pushed commit", outcome.DraftOpened, true, true, "neutral", "Incomplete: the run ended before the agent submitted"},
		{"round's start, superseded", outcome.PRUpdated, false, false, "neutral", "Superseded by 0123456789ab, which has this round's result"},
		{"no change", outcome.NoChanges, false, false, "neutral", "No change: the agent changed nothing"},
		{"stopped", outcome.Cancelled, false, false, "cancelled", "Stopped"},
		{"refused", outcome.WorkflowsRefused, false, false, "failure", "Refused: the change touches workflows"},
		{"failed", outcome.Failed, false, false, "failure", "Failed: the round pushed nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, title := CheckConclusion(tt.o, tt.incomplete, "0123456789abcdef", tt.onPushed)
			if c != tt.conclusion || title != tt.title {
				t.Errorf("CheckConclusion(%s) = %q, %q; want %q, %q", tt.o, c, title, tt.conclusion, tt.title)
			}
		})
	}
}
