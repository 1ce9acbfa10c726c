package worker

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
)

func TestAutoRefusal(t *testing.T) {
	t.Parallel()
	ok := autoFacts{open: true, mine: true, enabled: true}
	with := func(edit func(*autoFacts)) autoFacts {
		f := ok
		edit(&f)
		return f
	}
	tests := []struct {
		name  string
		facts autoFacts
		want  string
	}{
		{"the bot's open pull request", ok, ""},
		{"someone else's", with(func(f *autoFacts) { f.mine = false }), "the pull request is not the bot's"},
		{"closed", with(func(f *autoFacts) { f.open = false }), "the pull request is closed"},
		{"head moved", with(func(f *autoFacts) { f.headMoved = true }), "the pull request's head moved on"},
		{"turned off", with(func(f *autoFacts) { f.enabled = false }), "ci.enabled is false in .github/agent-fix.yml"},
		{"stopped", with(func(f *autoFacts) { f.stoppedBy = "alice" }), "@alice stopped the automatic rounds of the pull request"},
		{"a person's commits", with(func(f *autoFacts) { f.people = []string{"@alice", "Bob"} }), "commits by @alice, Bob are on the branch"},
		{"someone else's wins over the rest", autoFacts{}, "the pull request is not the bot's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := autoRefusal(tt.facts); got != tt.want {
				t.Errorf("autoRefusal = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecideChecks(t *testing.T) {
	t.Parallel()
	test := ciCheck{name: "test", app: "GitHub Actions", conclusion: "failure", actions: true}
	lint := ciCheck{name: "lint", app: "Other CI", conclusion: "timed_out"}
	tests := []struct {
		name      string
		facts     checksFacts
		want      checksAction
		wantFlaky []string
	}{
		{"suites still running", checksFacts{pending: 1, failing: []ciCheck{test}}, checksWait, nil},
		{"nothing failed", checksFacts{}, checksWait, nil},
		{"a failure", checksFacts{failing: []ciCheck{test}}, checksRound, nil},
		{"a failure, re-run asked", checksFacts{failing: []ciCheck{test}, rerunFailed: true}, checksRerun, nil},
		{"re-run asked, but only another App's check failed", checksFacts{failing: []ciCheck{lint}, rerunFailed: true}, checksRound, nil},
		{"re-run done, still failing", checksFacts{failing: []ciCheck{test}, rerunFailed: true, reran: true, rerun: []string{"test"}}, checksRound, nil},
		{"re-run done, it passed", checksFacts{rerunFailed: true, reran: true, rerun: []string{"test"}}, checksFlaky, []string{"test"}},
		{"re-run done, one passed, another failed", checksFacts{failing: []ciCheck{lint}, reran: true, rerun: []string{"test"}}, checksRound, []string{"test"}},
		{"re-run still running", checksFacts{pending: 1, reran: true, rerun: []string{"test"}}, checksWait, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, flaky := decideChecks(tt.facts)
			if got != tt.want || !cmp.Equal(flaky, tt.wantFlaky) {
				t.Errorf("decideChecks = %s %v, want %s %v", got, flaky, tt.want, tt.wantFlaky)
			}
		})
	}
}

func TestCheckLabel(t *testing.T) {
	t.Parallel()
	if got := (ciCheck{name: "test", app: "GitHub Actions", actions: true}).label(); got != "test" {
		t.Errorf("label of an Actions job = %q", got)
	}
	if got := (ciCheck{name: "lint", app: "Other CI"}).label(); got != "lint (Other CI)" {
		t.Errorf("label of another App's check = %q", got)
	}
}

func TestCommitters(t *testing.T) {
	t.Parallel()
	const bot, email = "agentfix[bot]", "agentfix[bot]@users.noreply.github.com"
	byBot := ghapp.Commit{AuthorLogin: bot, CommitterLogin: bot, AuthorEmail: email, CommitterEmail: email}
	tests := []struct {
		name    string
		commits []ghapp.Commit
		want    []string
	}{
		{"the bot's alone", []ghapp.Commit{byBot, byBot}, nil},
		{"the bot's email without a linked account", []ghapp.Commit{{AuthorEmail: "AgentFix[bot]@users.noreply.github.com", CommitterEmail: email}}, nil},
		{"a person's on top", []ghapp.Commit{byBot, {AuthorLogin: "alice", CommitterLogin: "alice", AuthorName: "Alice"}}, []string{"@alice"}},
		{"a person rebased the bot's", []ghapp.Commit{{AuthorLogin: bot, AuthorEmail: email, CommitterName: "Bob", CommitterEmail: "bob@example.com"}}, []string{"Bob"}},
		{"each person once", []ghapp.Commit{{AuthorLogin: "alice", CommitterLogin: "alice"}, {AuthorLogin: "alice", CommitterLogin: "carol"}}, []string{"@alice", "@carol"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, committers(tt.commits, bot, email)); diff != "" {
				t.Errorf("committers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailingChecks(t *testing.T) {
	t.Parallel()
	const own = 7
	runs := []ghapp.CheckRun{
		{ID: 1, Name: "agentfix", AppID: own, Status: "completed", Conclusion: "failure"},
		{ID: 2, Name: "test", AppID: 15368, AppSlug: ghapp.ActionsAppSlug, AppName: "GitHub Actions", Status: "completed", Conclusion: "failure",
			HTMLURL: "https://x/runs/2", DetailsURL: "https://x/actions/runs/9/job/2"},
		{ID: 3, Name: "lint", AppID: 9, AppName: "Other CI", Status: "completed", Conclusion: "timed_out", HTMLURL: "https://x/runs/3"},
		{ID: 4, Name: "e2e", AppID: 15368, Status: "completed", Conclusion: "cancelled"},
		{ID: 5, Name: "docs", AppID: 15368, Status: "completed", Conclusion: "neutral"},
		{ID: 6, Name: "slow", AppID: 15368, Status: "in_progress"},
		{ID: 8, Name: "boot", AppID: 9, Status: "completed", Conclusion: "startup_failure"},
	}
	got := failingChecks(runs, own)
	want := []ciCheck{
		{id: 2, name: "test", app: "GitHub Actions", url: "https://x/actions/runs/9/job/2", conclusion: "failure", actions: true},
		{id: 3, name: "lint", app: "Other CI", url: "https://x/runs/3", conclusion: "timed_out"},
		{id: 8, name: "boot", conclusion: "startup_failure"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ciCheck{})); diff != "" {
		t.Errorf("failingChecks (-want +got):\n%s", diff)
	}
}

func TestConflictMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, patch string
		want        []string
	}{
		{"resolved", "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n", nil},
		{"markers left in one file", "--- a/a.go\n+++ b/a.go\n@@ -1 +1,5 @@\n+<<<<<<< HEAD\n+x\n+=======\n+y\n+>>>>>>> 0123abc\n" +
			"--- a/b.go\n+++ b/b.go\n@@ -1 +1 @@\n+z\n", []string{"a.go"}},
		{"a lone separator", "--- a/r.md\n+++ b/r.md\n@@ -1 +1,2 @@\n+=======\n", []string{"r.md"}},
		{"diff3 base marker", "+++ b/c.go\n+||||||| 1234567\n", []string{"c.go"}},
		{"a heading underline is no marker", "+++ b/d.md\n+Title\n+========\n+<<<<<<<<<< not one\n", nil},
		{"markers the change removes", "+++ b/e.go\n-<<<<<<< HEAD\n-=======\n->>>>>>> x\n", nil},
		{"CRLF", "+++ b/f.txt\n+>>>>>>> main\r\n", []string{"f.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, conflictMarkers(tt.patch)); diff != "" {
				t.Errorf("conflictMarkers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parts checkParts
		want  string
	}{
		{"nothing but a conclusion", checkParts{}, "The check reported nothing but its conclusion.\n"},
		{"another App's output and annotations", checkParts{title: "2 problems\n", summary: "golint found 2 problems", text: "see below",
			annotations: []string{"a.go:3: exported A has no comment"}, total: 51},
			"Title: 2 problems\n\nSummary:\ngolint found 2 problems\n\nDetails:\nsee below\n\n" +
				"Annotations (the first 1 of 51):\na.go:3: exported A has no comment\n"},
		{"an Actions job's log", checkParts{steps: []string{"go test ./..."}, log: "--- FAIL: TestAdd\n"},
			"Failed steps: go test ./...\n\nLog of the failed steps (the lines around their errors):\n--- FAIL: TestAdd\n"},
		{"a log that could not be read", checkParts{summary: "failed", steps: []string{"test"}, noLog: "GitHub answered 410: it no longer keeps it"},
			"Summary:\nfailed\n\nFailed steps: test\n\nThe job's log could not be read (GitHub answered 410: it no longer keeps it); this report has the check's output alone.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkText(tt.parts)); diff != "" {
				t.Errorf("checkText (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDoing: the running check run of a round the bot starts on its own
// says what it does, not "working on #N for @agentfix[bot]".
func TestDoing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind      string
		pr, issue int
		want      string
	}{
		{jobs.TypeCI, 7, 3, "fixing the failing checks of #7 on its own, for issue #3"},
		{jobs.TypeCI, 7, 0, "fixing the failing checks of #7 on its own"},
		{jobs.TypeConflict, 7, 3, "resolving the merge conflicts of #7 with its base branch on its own, for issue #3"},
		{jobs.TypeRevise, 7, 3, ""},
		{jobs.TypeFix, 3, 3, ""},
	}
	for _, tt := range tests {
		if got := doing(tt.kind, tt.pr, tt.issue); got != tt.want {
			t.Errorf("doing(%s, %d, %d) = %q, want %q", tt.kind, tt.pr, tt.issue, got, tt.want)
		}
	}
}
