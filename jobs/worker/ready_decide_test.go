package worker

import (
	"testing"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
)

// TestReadyMoveOf: a round undoes only the bot's own draft, and only when
// it completed the change; a pull request someone already marked ready
// gets its body completed without a claim; a retry that marked it before
// does not ask GitHub again.
func TestReadyMoveOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                           string
		completed, markedBefore, draft, notice, marked bool
		want                                           readyMove
	}{
		{"not completed: the bot's draft stays", false, false, true, true, false, leaveAsIs},
		{"not completed: a marked title stays", false, false, false, false, true, leaveAsIs},
		{"the bot's draft", true, false, true, true, false, markThenComplete},
		{"a marked title where drafts are refused", true, false, false, false, true, markThenComplete},
		{"a draft with a marked title", true, false, true, true, true, markThenComplete},
		{"a draft made by hand (no notice)", true, false, true, false, false, leaveAsIs},
		{"made ready by someone, the notice still there", true, false, false, true, false, completeBodyOnly},
		{"ready, no notice: nothing to do", true, false, false, false, false, leaveAsIs},
		{"marked by an earlier attempt", true, true, false, true, false, alreadyMarked},
		{"marked by an earlier attempt, not completed now", false, true, false, true, false, leaveAsIs},
	}
	for _, tt := range tests {
		if got := readyMoveOf(tt.completed, tt.markedBefore, tt.draft, tt.notice, tt.marked); got != tt.want {
			t.Errorf("%s: readyMoveOf = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestDraftReason: what keeps a change a draft, in a clause for people:
// a run that did not finish, the test policy's reasons, a failing test
// command without a baseline to compare, the repository's draft: true;
// nothing for a submitted change that passed.
func TestDraftReason(t *testing.T) {
	t.Parallel()
	submitted := agent.Result{Status: agent.Submitted}
	failing := &tools.TestResult{Command: "make test", ExitCode: 2}
	deleted := []proof.Flag{{Kind: proof.DeletedTest, Path: "calc_test.go", Line: 9, Test: "TestAdd", Reason: "deletes TestAdd"}}
	tests := []struct {
		name   string
		res    agent.Result
		review session.Review
		repo   config.RepoSettings
		task   string
		want   string
	}{
		{name: "submitted, no test command", res: submitted},
		{name: "submitted, the test command passed", res: submitted,
			review: session.Review{Test: &tools.TestResult{Command: "make test"}}},
		{name: "a limit ended the run", res: agent.Result{Status: agent.Autosubmitted, Cause: agent.LimitsExceeded, Reason: "limits_exceeded: step limit reached: 3 of 3 steps"},
			want: "step limit reached: 3 of 3 steps"},
		{name: "the test command failed, no verdict", res: submitted, review: session.Review{Test: failing},
			want: "the repository's test command `make test` failed with exit code 2 on the change"},
		{name: "the test command timed out, no verdict", res: submitted, review: session.Review{Test: &tools.TestResult{Command: "make test", ExitCode: -1, TimedOut: true}},
			want: "the repository's test command `make test` timed out on the change"},
		{name: "draft: true", res: submitted, repo: config.RepoSettings{Draft: true},
			want: "this repository's configuration asks for draft pull requests (draft: true)"},
		{name: "a deleted test", res: submitted, review: session.Review{Verdict: &tools.Verdict{Flags: deleted}},
			want: "the change weakens its tests or checks: calc_test.go:9: deletes TestAdd"},
		{name: "a deleted test the task asked for", res: submitted, review: session.Review{Verdict: &tools.Verdict{Flags: deleted}},
			task: "Remove the flaky test"},
		{name: "the verdict passes, draft: true", res: submitted, review: session.Review{Verdict: &tools.Verdict{}}, repo: config.RepoSettings{Draft: true},
			want: "this repository's configuration asks for draft pull requests (draft: true)"},
	}
	for _, tt := range tests {
		if got := draftReason(tt.res, tt.review, tt.repo, tt.task); got != tt.want {
			t.Errorf("%s: draftReason = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
