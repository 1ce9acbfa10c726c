package worker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
)

func TestIssueOf(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
