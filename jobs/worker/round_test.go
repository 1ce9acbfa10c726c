package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
)

func TestRoundGolden(t *testing.T) {
	x := mustTexts(t)
	base := finalData{
		Marker: ghapp.Marker("final revise:octo/widget#2:d-3"), Requester: "alice", Command: "/agent-fix",
		Summary: hostileSummary, RunID: "20250102T150405Z-1a2b3c4d", Steps: 9, CostUSD: 0.42,
		Duration: 192 * time.Second, Model: "openai/gpt-5",
	}
	final := func(edit func(*roundFinalData)) roundFinalData {
		d := roundFinalData{finalData: base, Requesters: []string{"alice"}, Commit: "0123456789ab"}
		edit(&d)
		return d
	}
	out := goldenCases(t, x, tmplRoundFinal, []golden{
		{"pushed", final(func(d *roundFinalData) { d.Outcome = outcomePRUpdated })},
		{"pushed incomplete, follow-up of two", final(func(d *roundFinalData) {
			d.Outcome, d.Draft, d.Detail, d.Requesters = outcomePRUpdated, true, "step limit reached: 75 of 75 steps", []string{"alice", "bob"}
		})},
		{"pushed, marked ready", final(func(d *roundFinalData) { d.Outcome, d.MarkedReady = outcomePRUpdated, true })},
		{"pushed, could not mark ready", final(func(d *roundFinalData) {
			d.Outcome, d.NotReady = outcomePRUpdated, "GitHub answered: Resource not accessible by integration"
		})},
		{"no change", final(func(d *roundFinalData) { d.Outcome, d.Commit = outcomeNoChanges, "" })},
		{"refused", final(func(d *roundFinalData) {
			d.Outcome, d.Commit, d.Summary = outcomeRefused, "", ""
			d.Detail, d.Patch = "the change touches .github/workflows/ci.yml, and the bot may not change workflows in this repository.", "diff --git a/x b/x\n"
		})},
		{"stopped, kept commands dropped", final(func(d *roundFinalData) {
			d.Outcome, d.Commit, d.Summary, d.StoppedBy, d.Dropped = outcomeCancelled, "", "", "bob", []string{"carol", "dave"}
		})},
	})
	thread := threadReplyData{Marker: ghapp.Marker("thread revise:octo/widget#2:d-3 77"), Commit: "0123456789ab", Path: "calc.go",
		Link: "https://github.com/octo/widget/pull/2#issuecomment-9"}
	with := func(edit func(*threadReplyData)) threadReplyData {
		d := thread
		edit(&d)
		return d
	}
	out += goldenCases(t, x, tmplThreadReply, []golden{
		{"thread: changed", with(func(d *threadReplyData) { d.Outcome, d.Changed = outcomePRUpdated, true })},
		{"thread: other files changed", with(func(d *threadReplyData) { d.Outcome = outcomePRUpdated })},
		{"thread: no change", with(func(d *threadReplyData) { d.Outcome, d.Commit = outcomeNoChanges, "" })},
		{"thread: failed", with(func(d *threadReplyData) {
			d.Outcome, d.Commit, d.Detail = outcomeFailed, "", "someone else pushed to `agent-fix/issue-1` while the agent worked; ask again to start from the new state."
		})},
	})
	reply := replyData{Marker: ghapp.Marker("reply d-4"), Requester: "bob", Label: "agent-fix", Command: "/agent-fix"}
	kept, closed, merged := reply, reply, reply
	kept.Link = "https://github.com/octo/widget/pull/2#issuecomment-8"
	merged.Merged = true
	out += goldenCases(t, x, tmplKept, []golden{{"kept", kept}, {"kept without a link", reply}})
	out += goldenCases(t, x, tmplPRClosed, []golden{{"pull request closed", closed}, {"pull request merged", merged}})
	out += goldenCases(t, x, tmplNoIssue, []golden{{"no issue", reply}})
	status := statusData{Marker: ghapp.Marker("status revise:octo/widget#2:d-3"), Requester: "alice", OnPR: true,
		Branch: "agent-fix/issue-1", MaxSteps: 75, MaxCostUSD: 3}
	withStatus := func(edit func(*statusData)) statusData {
		d := status
		edit(&d)
		return d
	}
	out += goldenCases(t, x, tmplStatus, []golden{
		{"status on the PR: queued", withStatus(func(d *statusData) { d.Phase = PhaseQueued })},
		{"status on the PR: pushing", withStatus(func(d *statusData) { d.Phase, d.RunID = PhasePushing, "20250102T150405Z-1a2b3c4d" })},
		{"status on the PR: no change", withStatus(func(d *statusData) {
			d.Phase, d.Outcome, d.Detail = PhaseDone, outcomeNoChanges, "the agent finished without changing any file."
		})},
		{"status on the issue: moved", withStatus(func(d *statusData) {
			d.OnPR, d.Phase, d.PRNumber, d.PRURL, d.Detail = false, PhaseMoved, 2, "https://github.com/octo/widget/pull/2", "the work goes on there as a new round."
		})},
	})
	check := checkData{Issue: 1, Requester: "alice", Model: "openai/gpt-5", RunID: "20250102T150405Z-1a2b3c4d"}
	stopped := check
	stopped.Outcome, stopped.Verification = "cancelled", verificationOf(agent.Result{})
	superseded := check
	superseded.Outcome, superseded.ExitStatus, superseded.Steps, superseded.CostUSD, superseded.Duration = "neutral", agent.Submitted, 9, 0.42, 192*time.Second
	superseded.Verification = verificationOf(agent.Result{Status: agent.Submitted})
	out += goldenCases(t, x, tmplCheckRun, []golden{{"round check: superseded", superseded}, {"round check: stopped before the agent ran", stopped}})
	checkGolden(t, "round", out)
}

// TestPRCompletedGolden: a round that completes a draft replaces the
// notice the body opened with (as pr_body.md.tmpl renders it) and keeps
// the rest.
func TestPRCompletedGolden(t *testing.T) {
	x := mustTexts(t)
	opened := prBodyData{Issue: 12, Summary: "Fixed the parser.", ReviewRounds: 1, Requester: "alice", Model: "openai/gpt-5",
		Steps: 9, CostUSD: 0.42, Duration: 192 * time.Second, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix", TestCommand: "make test"}
	incomplete := opened
	incomplete.Incomplete, incomplete.Detail, incomplete.ReviewRounds = true, "This job's budget of $1.00 is nearly used up: $0.97 spent, and the next model call could cost up to $0.05.", 0
	failed := opened
	failed.TestRan, failed.TestVerdict, failed.TestFinal, failed.TestOutput = true, "failed with exit code 2", true, "FAIL\n"
	failed.DraftReason = "the repository's test command `make test` failed with exit code 2 on the change"
	round := completedNote{Commit: "0123456789ab", prBodyData: prBodyData{RunID: "20250103T090000Z-5e6f7a8b", TestCommand: "make test",
		TestRan: true, TestPassed: true, TestVerdict: "passed", TestFinal: true}}
	linked, lastReviewed, untested := round, round, round
	linked.RunURL = "https://bot.example.com/runs/20250103T090000Z-5e6f7a8b?exp=1736000000&sig=abc"
	lastReviewed.TestFinal = false
	untested.TestCommand, untested.TestRan, untested.TestVerdict = "", false, ""
	var b strings.Builder
	for _, c := range []struct {
		name   string
		opened prBodyData
		round  completedNote
	}{
		{"incomplete, completed with the test passing, signed run link", incomplete, linked},
		{"draft after a failed test, completed with the test passing as last reviewed", failed, lastReviewed},
		{"incomplete, completed without a test command", incomplete, untested},
	} {
		body, err := renderPRBody(x, c.opened)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := completedBody(x, body, c.round)
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

	body, err := renderPRBody(x, incomplete)
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll(body, "\n", "\r\n") // as GitHub keeps a body edited on the web
	if got, ok, err := completedBody(x, crlf, linked); err != nil || !ok || strings.Contains(got, "This change is incomplete:") {
		t.Errorf("CRLF body: completedBody = %v, %v; want the notice replaced:\n%s", ok, err, got)
	}
	for _, plain := range []string{"Fixes #12\n\n## Summary\n\nDone.\n", strings.Replace(body, "> [!WARNING]", "> [!CAUTION]", 1)} {
		if got, ok, err := completedBody(x, plain, linked); err != nil || ok || got != plain {
			t.Errorf("body without the notice: completedBody = %v, %v, changed %v; want it left alone", ok, err, got != plain)
		}
	}
}

func TestCutDraftMark(t *testing.T) {
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
			got, marked := cutDraftMark(tt.title)
			if got != tt.want || marked != tt.marked {
				t.Errorf("cutDraftMark(%q) = %q, %v; want %q, %v", tt.title, got, marked, tt.want, tt.marked)
			}
		})
	}
}

func TestGitHubTrouble(t *testing.T) {
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
			if got := githubTrouble(tt.err); got != tt.want {
				t.Errorf("githubTrouble(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestRoundConclusion(t *testing.T) {
	tests := []struct {
		outcome, commit, conclusion, title string
	}{
		{outcomePRUpdated, "0123456789abcdef", "neutral", "Superseded by 0123456789ab, which has this round's result"},
		{outcomeNoChanges, "", "neutral", "No change: the agent changed nothing"},
		{outcomeCancelled, "", "cancelled", "Stopped"},
		{outcomeRefused, "", "failure", "Refused: the change touches workflows"},
		{outcomeFailed, "", "failure", "Failed: the round pushed nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			c, title := roundConclusion(tt.outcome, tt.commit)
			if c != tt.conclusion || title != tt.title {
				t.Errorf("roundConclusion(%q) = %q, %q; want %q, %q", tt.outcome, c, title, tt.conclusion, tt.title)
			}
		})
	}
}

func TestIssueOf(t *testing.T) {
	tests := []struct {
		name string
		pr   ghapp.PullRequest
		want int
	}{
		{"fixes line", ghapp.PullRequest{Body: "Fixes #12\n\n## Summary", Head: "agent-fix/issue-3"}, 12},
		{"closes, any case", ghapp.PullRequest{Body: "Intro\n  CLOSES #7 for good"}, 7},
		{"branch", ghapp.PullRequest{Body: "edited away", Head: "bots/issue-41"}, 41},
		{"mid-sentence mention is no closing line", ghapp.PullRequest{Body: "this fixes #5 maybe", Head: "feature"}, 0},
		{"neither", ghapp.PullRequest{Body: "", Head: "feature"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := issueOf(tt.pr); got != tt.want {
				t.Errorf("issueOf = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRoundInstructions(t *testing.T) {
	p := jobs.RevisePR{Instructions: "rename it"}
	if got := roundInstructions(p); got != "rename it" {
		t.Errorf("single round instructions = %q", got)
	}
	p.FollowUps = []jobs.KeptCommand{
		{Requester: jobs.User{Login: "alice"}, Trigger: jobs.Trigger{Kind: jobs.TriggerReview}, Instructions: "  use a constant\nand a test "},
		{Requester: jobs.User{Login: "bob"}, Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment}},
	}
	want := "These requests came while the previous round ran. Address all of them.\n\n" +
		"Request 1 of 2, by @alice in a review:\nuse a constant\nand a test\n\n" +
		"Request 2 of 2, by @bob in a comment:\n(no instructions: address the review comments below)"
	if diff := cmp.Diff(want, roundInstructions(p)); diff != "" {
		t.Errorf("follow-up instructions (-want +got):\n%s", diff)
	}
}

func TestThreadsAndFiles(t *testing.T) {
	all := []ghapp.ReviewComment{
		{ID: 1, ReviewID: 10, Author: "alice", Path: "a.go"},
		{ID: 2, ReviewID: 11, Author: "bob", Path: "b.go"},
		{ID: 3, ReviewID: 10, Author: "alice", Path: "c.go"},
		{ID: 4, ReviewID: 12, InReplyTo: 2, Author: "alice", Path: "b.go"},
		{ID: 5, ReviewID: 13, InReplyTo: 1, Author: "agentfix[bot]", Path: "a.go"},
		{ID: 6, ReviewID: 12, InReplyTo: 2, Author: "alice", Path: "b.go"},
	}
	got := threadsOf(all, map[int64]bool{10: true, 12: true, 13: true}, "agentfix[bot]")
	want := []thread{{root: 1, path: "a.go", author: "alice"}, {root: 3, path: "c.go", author: "alice"}, {root: 2, path: "b.go", author: "alice"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(thread{})); diff != "" {
		t.Errorf("threads (-want +got):\n%s", diff)
	}
	patch := "diff --git a/x.go b/y.go\n--- a/x.go\n+++ b/y.go\n@@\n-a\n+b\ndiff --git a/new.txt b/new.txt\n--- /dev/null\n+++ b/new.txt\n"
	if diff := cmp.Diff(map[string]bool{"x.go": true, "y.go": true, "new.txt": true}, changedFiles(patch)); diff != "" {
		t.Errorf("changed files (-want +got):\n%s", diff)
	}
	long := "@@ -1,40 +1,40 @@"
	for i := range 40 {
		long += fmt.Sprintf("\n line %d", i)
	}
	cut := hunkTail(long)
	if lines := strings.Split(cut, "\n"); len(lines) != maxHunkLines+1 || lines[0] != "@@ -1,40 +1,40 @@" || lines[len(lines)-1] != " line 39" {
		t.Errorf("hunkTail kept %d lines: %q", len(lines), cut)
	}
	if short := "@@ -1 +1 @@\n+x"; hunkTail(short) != short {
		t.Errorf("hunkTail changed a short hunk")
	}
}

// TestKeptCommandsAroundTheRoundEnd: a command kept before the round's end
// is counted by the round; one kept after it sees the round-end marker, so
// its notice starts the follow-up itself; a new round clears the marker.
func TestKeptCommandsAroundTheRoundEnd(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	s := state{rdb: rdb, poll: time.Millisecond}
	ctx := context.Background()
	const id = "revise:octo/widget#2"
	cmd := func(d string) jobs.KeptCommand {
		return jobs.KeptCommand{DeliveryID: d, Requester: jobs.User{Login: "bob"}, Instructions: "do " + d}
	}
	if ended, err := s.keep(ctx, id, cmd("k1")); err != nil || ended != "" {
		t.Fatalf("keep while the round runs = %q, %v; want no ended round", ended, err)
	}
	if n, err := s.roundEnded(ctx, id, "d1"); err != nil || n != 1 {
		t.Fatalf("roundEnded = %d, %v; want 1 kept command", n, err)
	}
	if ended, err := s.keep(ctx, id, cmd("k2")); err != nil || ended != "d1" {
		t.Fatalf("keep after the round ended = %q, %v; want d1", ended, err)
	}
	kept, err := s.keptCommands(ctx, id)
	if err != nil || len(kept) != 2 || kept[0].DeliveryID != "k1" || kept[1].Instructions != "do k2" {
		t.Fatalf("kept = %+v, %v", kept, err)
	}
	if err := s.takeKept(ctx, id, kept[:1]); err != nil {
		t.Fatal(err)
	}
	// A retry that took them already takes nothing more.
	if err := s.takeKept(ctx, id, kept[:1]); err != nil {
		t.Fatal(err)
	}
	if left, err := s.keptCommands(ctx, id); err != nil || len(left) != 1 || left[0].DeliveryID != "k2" {
		t.Fatalf("kept after taking k1 twice = %+v, %v; want k2", left, err)
	}
	if err := s.roundStarted(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ended, err := s.keep(ctx, id, cmd("k3")); err != nil || ended != "" {
		t.Fatalf("keep after a new round started = %q, %v; want no ended round", ended, err)
	}
	dropped, err := s.dropKept(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var ds []string
	for _, c := range dropped {
		ds = append(ds, c.DeliveryID)
	}
	if diff := cmp.Diff([]string{"k2", "k3"}, ds); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if kept, _ := s.keptCommands(ctx, id); len(kept) != 0 {
		t.Errorf("kept after the drop = %+v, want none", kept)
	}
}
