package worker

import (
	"strings"
	"testing"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// TestLabelReviewRoundStopHelp is the conversation end to end, in one
// process against the fake GitHub and its git server: a label opens a pull
// request; a review with inline comments on it gets a revised commit and
// answers in its threads; help is answered to a reader; a stop on the issue
// ends the round running on its pull request.
func TestLabelReviewRoundStopHelp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.SetPermission(hRepo, "bob", "write")
	h.f.SetPermission(hRepo, "dave", "read")
	h.model.add(fixScript(h.markers)...)
	h.startWorker()

	// The label: one pull request with the fix.
	h.label(hRequester)
	h.waitForComments("the fix job's final comment", h.issue, "agentfix:final", 1)
	prs := h.prs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1", len(prs))
	}
	pr := prs[0].Number
	fixHead := h.f.HeadCommit(hRepo, prs[0].Head)

	// A review with two inline comments: a revised commit on the branch.
	h.model.add(
		edit("calc.go", "// Add returns a plus b.", "// Add returns the sum of a and b."),
		edit("README.md", "# widget", "# widget\n\nAdd adds."),
		submit("Reworded the comment and documented Add."), submit(""),
	)
	_, ids := h.review(pr, "bob", "Nearly there.\n/agent-fix address my comments",
		ghfake.ReviewComment{Body: "Say sum.", Path: "calc.go", Line: 3},
		ghfake.ReviewComment{Body: "Document it.", Path: "README.md", Line: 1})
	h.waitFor("the round's reply and its thread replies", func() bool {
		return len(h.commentsWith(pr, "agentfix:final revise:")) == 1 && len(h.botReplies(pr)) == 2
	})
	roundHead := h.f.HeadCommit(hRepo, prs[0].Head)
	if len(roundHead.Parents) != 1 || roundHead.Parents[0] != fixHead.SHA || !strings.Contains(roundHead.Message, "Co-authored-by: bob") {
		t.Errorf("round commit %+v, want bob's commit on the fix %s", roundHead, fixHead.SHA)
	}
	if prompt := h.model.prompt(5); !strings.Contains(prompt, "Comment by @bob on calc.go line 3:") || !strings.Contains(prompt, "Review by @bob:") {
		t.Errorf("the round's task lacks the review:\n%s", prompt)
	}
	for i, r := range h.botReplies(pr) {
		if r.InReplyTo != ids[i] {
			t.Errorf("thread reply %d answers %d, want %d", i, r.InReplyTo, ids[i])
		}
	}

	// Help for a reader, on the pull request.
	h.commentOn(pr, h.f.BotLogin(), "dave", "/agent-fix help")
	h.waitForComments("the help", pr, "@dave, I am **agentfix**", 1)

	// Another round, stopped from the issue while the agent works.
	reached := make(chan struct{})
	h.model.add(turn{before: func() { close(reached) }, block: make(chan struct{})})
	h.commentOn(pr, h.f.BotLogin(), hRequester, "/agent-fix add a test")
	await(t, reached, "the second round's agent")
	h.comment("bob", "/agent-fix stop")
	h.waitFor("the stopped round's reply", func() bool {
		return len(h.commentsWith(pr, "@alice, @bob stopped this round; nothing was pushed.")) == 1
	})
	h.waitFor("the round to end for good", func() bool { return h.reviseState(pr) == "archived" })
	if head := h.f.HeadCommit(hRepo, prs[0].Head); head.SHA != roundHead.SHA {
		t.Errorf("the stopped round moved the branch to %s", head.SHA)
	}

	type check struct{ sha, conclusion string }
	var got []check
	for _, c := range h.f.CheckRuns(hRepo) {
		got = append(got, check{c.HeadSHA, c.Conclusion})
	}
	want := []check{
		{fixHead.SHA, "success"},     // the fix job's commit
		{fixHead.SHA, "neutral"},     // the review round started there; superseded
		{roundHead.SHA, "success"},   // the review round's commit
		{roundHead.SHA, "cancelled"}, // the stopped round
	}
	if len(got) != len(want) {
		t.Fatalf("check runs = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("check run %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := len(h.prs()); n != 1 {
		t.Errorf("pull requests = %d, want 1", n)
	}
}
