package worker

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
)

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
func goldenCases(t *testing.T, x texts, tmpl string, cases []struct {
	name string
	data any
}) string {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		out, err := x.render(tmpl, c.data)
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

func mustTexts(t *testing.T) texts {
	t.Helper()
	x, err := parseTexts()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestStatusGolden(t *testing.T) {
	x := mustTexts(t)
	base := statusData{Marker: ghapp.Marker("status fix:octo/widget#12:d-1"), Requester: "alice",
		Branch: "agent-fix/issue-12", MaxSteps: 75, MaxCostUSD: 3, RunID: "20250102T150405Z-1a2b3c4d"}
	with := func(edit func(*statusData)) statusData {
		d := base
		edit(&d)
		return d
	}
	cases := []golden{
		{"queued", with(func(d *statusData) { d.Phase, d.RunID = PhaseQueued, "" })},
		{"cloning", with(func(d *statusData) { d.Phase, d.RunID = PhaseCloning, "" })},
		{"setup", with(func(d *statusData) { d.Phase = PhaseSetup })},
		{"working", with(func(d *statusData) {
			d.Phase, d.Step, d.CostUSD, d.Elapsed = PhaseWorking, 7, 0.4213, 3*time.Minute+12*time.Second
			d.LastAction = "bash: grep -rn `@admin <b>` src/ | head"
		})},
		{"reviewing", with(func(d *statusData) { d.Phase, d.Step, d.CostUSD, d.Elapsed = PhaseReviewing, 12, 0.9, 5*time.Minute })},
		{"pushing", with(func(d *statusData) { d.Phase = PhasePushing })},
		{"done pr", with(func(d *statusData) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL = PhaseDone, outcomePROpened, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"done draft", with(func(d *statusData) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL, d.Draft, d.Detail = PhaseDone, outcomeDraftOpened, 13, "https://github.com/octo/widget/pull/13", true, "step limit reached: 75 of 75 steps"
		})},
		{"done pr updated", with(func(d *statusData) {
			d.Phase, d.Outcome, d.PRNumber, d.PRURL = PhaseDone, outcomePRUpdated, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"done no changes", with(func(d *statusData) {
			d.Phase, d.Outcome, d.Detail = PhaseDone, outcomeNoChanges, "the agent finished without changing any file."
		})},
		{"failed", with(func(d *statusData) {
			d.Phase, d.Outcome, d.Detail = PhaseFailed, outcomeFailed, "the model provider kept failing before the agent had a change."
		})},
		{"cancelled by user", with(func(d *statusData) { d.Phase, d.Outcome, d.StoppedBy = PhaseCancelled, outcomeCancelled, "bob" })},
		{"cancelled issue closed", with(func(d *statusData) {
			d.Phase, d.Outcome, d.Detail = PhaseCancelled, outcomeCancelled, "the issue was closed."
		})},
		{"interrupted", with(func(d *statusData) { d.Phase = PhaseInterrupted })},
	}
	checkGolden(t, "status", goldenCases(t, x, tmplStatus, cases))
}

func TestFinalGolden(t *testing.T) {
	x := mustTexts(t)
	base := finalData{Marker: ghapp.Marker("final fix:octo/widget#12:d-1"), Requester: "alice", Command: "/agent-fix",
		RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, Model: "openai/gpt-5",
		Summary: "Fixed the off-by-one in `parse()` and added a regression test."}
	with := func(edit func(*finalData)) finalData {
		d := base
		edit(&d)
		return d
	}
	cases := []golden{
		{"pr opened", with(func(d *finalData) {
			d.Outcome, d.PRNumber, d.PRURL = outcomePROpened, 13, "https://github.com/octo/widget/pull/13"
		})},
		{"draft opened", with(func(d *finalData) {
			d.Outcome, d.PRNumber, d.Draft, d.Detail = outcomeDraftOpened, 13, true, "step limit reached: 75 of 75 steps"
		})},
		{"pr updated", with(func(d *finalData) { d.Outcome, d.PRNumber = outcomePRUpdated, 13 })},
		{"no changes", with(func(d *finalData) {
			d.Outcome, d.Detail = outcomeNoChanges, "the agent finished without changing any file."
		})},
		{"workflows refused", with(func(d *finalData) {
			d.Outcome, d.Detail = outcomeRefused, "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository."
			d.Patch = "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n-on: push\n+on: [push]\n+# ``` fence inside\n"
		})},
		{"cancelled", with(func(d *finalData) { d.Outcome, d.StoppedBy, d.Summary = outcomeCancelled, "bob", "" })},
		{"gave up before a run", with(func(d *finalData) {
			d.Outcome, d.Summary, d.RunID = outcomeFailed, "", ""
			d.Detail = "an internal error stopped the job after 3 attempts; the worker's logs have the details."
		})},
		{"hostile summary", with(func(d *finalData) {
			d.Outcome, d.PRNumber, d.Summary = outcomePROpened, 13, hostileSummary
		})},
	}
	for _, status := range []agent.ExitStatus{agent.LimitsExceeded, agent.FormatErrorExit, agent.ContextExceeded, agent.EnvDead, agent.APIError, agent.Error} {
		res := agent.Result{Status: status, Reason: "step limit reached: 75 of 75 steps"}
		cases = append(cases, golden{"failed " + string(status), with(func(d *finalData) {
			d.Outcome, d.Detail, d.Summary = outcomeFailed, noPRDetail(res), ""
		})})
	}
	checkGolden(t, "final", goldenCases(t, x, tmplFinal, cases))
}

func TestPRBodyGolden(t *testing.T) {
	x := mustTexts(t)
	base := prBodyData{Issue: 12, Summary: hostileSummary, ReviewRounds: 1, Requester: "alice", Model: "openai/gpt-5",
		Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix"}
	incomplete := base
	incomplete.Incomplete, incomplete.Detail, incomplete.Summary = true, "step limit reached: 75 of 75 steps", ""
	tested := base
	tested.Summary, tested.ReviewRounds, tested.ReviewStages = "Fixed it.", 2, 2
	tested.TestCommand, tested.TestRan, tested.TestPassed, tested.TestVerdict, tested.TestFinal = "go test ./...", true, true, "passed", true
	var b strings.Builder
	for _, c := range []golden{{"submitted", base}, {"incomplete", incomplete}, {"with test command", tested}} {
		out, err := renderPRBody(x, c.data.(prBodyData))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, out)
	}
	checkGolden(t, "pr_body", b.String())
}

func TestPRBodyCap(t *testing.T) {
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
			body, err := renderPRBody(x, prBodyData{Issue: 1, Summary: tt.summary, Requester: "a", Model: "m", RunID: "r", Command: "/agent-fix"})
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
	short, err := renderPRBody(x, prBodyData{Issue: 1, Summary: "short", Requester: "a", Model: "m", RunID: "r", Command: "/agent-fix"})
	if err != nil || strings.Contains(short, "truncated") {
		t.Errorf("a short body = %v, %q; want no truncation", err, short)
	}
}

func TestRepliesGolden(t *testing.T) {
	x := mustTexts(t)
	base := replyData{Marker: ghapp.Marker("reply d-1"), Requester: "mallory", Label: "agent-fix", Command: "/agent-fix",
		Limits: operatorLimits(&config.App{MaxSteps: 75, MaxCostUSD: 3, MaxDuration: 45 * time.Minute})}
	with := func(edit func(*replyData)) replyData {
		d := base
		edit(&d)
		return d
	}
	var b strings.Builder
	for _, c := range []struct {
		name, tmpl string
		data       replyData
	}{
		{"refusal on an issue", tmplRefusal, base},
		{"refusal on a pull request", tmplRefusal, with(func(d *replyData) { d.IsPR = true })},
		{"already working", tmplAlreadyWorking, with(func(d *replyData) { d.Link = "https://github.com/octo/widget/issues/12#issuecomment-5" })},
		{"not my pull request", tmplNotMyPR, base},
		{"closed", tmplClosed, base},
		{"locked", tmplClosed, with(func(d *replyData) { d.Locked = true })},
		{"help", tmplHelp, base},
		{"stop refused", tmplStopRefused, base},
		{"nothing to stop", tmplNothingToStop, base},
		{"nothing to stop on a pull request", tmplNothingToStop, with(func(d *replyData) { d.IsPR = true })},
	} {
		out, err := x.render(c.tmpl, c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&b, "===== %s =====\n%s\n", c.name, out)
	}
	checkGolden(t, "replies", b.String())
}

func TestCheckRunAndRoundGolden(t *testing.T) {
	x := mustTexts(t)
	check := checkData{Issue: 12, Requester: "alice", Model: "openai/gpt-5", Steps: 9, CostUSD: 0.42,
		Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d"}
	running, success, neutral := check, check, check
	running.Outcome = "running"
	success.Outcome, success.ExitStatus = "success", agent.Submitted
	neutral.Outcome, neutral.ExitStatus, neutral.Detail = "neutral", agent.Autosubmitted, "step limit reached: 75 of 75 steps"
	out := goldenCases(t, x, tmplCheckRun, []golden{{"running", running}, {"success", success}, {"neutral", neutral}})
	round := map[string]any{
		"Marker": ghapp.Marker("round fix:octo/widget#12:d-2"), "Requester": "alice", "Issue": 12, "Commit": "0123456789ab",
		"Incomplete": false, "Detail": "", "Summary": hostileSummary, "RunID": "20250102T150405Z-1a2b3c4d",
		"Steps": 9, "CostUSD": 0.42, "Duration": 192 * time.Second, "Model": "openai/gpt-5",
	}
	out += goldenCases(t, x, tmplPRRound, []golden{{"pr round", round}})
	checkGolden(t, "check_run_and_round", out)
}

func TestTemplatesRefuseMissingFields(t *testing.T) {
	x := mustTexts(t)
	if _, err := x.render(tmplPRRound, map[string]any{"Marker": "m"}); err == nil {
		t.Errorf("rendering with missing fields succeeded, want an error (missingkey=error)")
	}
}

func TestHelpers(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"code plain", codeSpan("go test ./..."), "`go test ./...`"},
		{"code with backtick", codeSpan("echo `date`"), "`` echo `date` ``"},
		{"code with inner backtick", codeSpan("a ` b"), "``a ` b``"},
		{"code multiline", codeSpan("a\nb"), "`a b`"},
		{"fence", fenceBlock("diff", "a\n```\nb\n"), "````diff\na\n```\nb\n````"},
		{"duration s", humanDuration(42 * time.Second), "42s"},
		{"duration m", humanDuration(192 * time.Second), "3m12s"},
		{"duration h", humanDuration(64 * time.Minute), "1h04m"},
		{"title", plainTitle("Crash  when parsing;\nfixes #3"), "Crash when parsing; fixes #\u200b3"},
		{"neutralize closes fence", neutralizeBlock("```\ncode"), "```\ncode\n```"},
		{"clip", clip(3, "abcdef"), "abc\n\n… (truncated: 3 more characters)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
