package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// readyCommit is the commit a round pushed in the readiness tests.
const readyCommit = "0123456789abcdef0123456789abcdef01234567"

// incompleteDraft is the bot's pull request #5 for issue #1 as a fix job
// a limit ended opened it (scenarios_test.go's TestIncompleteRunOpensDraft
// opens it so): the body pr_body.md.tmpl renders for an incomplete run,
// and a draft, or where GitHub refuses drafts a regular pull request whose
// title has the incomplete mark.
func incompleteDraft(t *testing.T, drafts bool) ghapp.PullRequest {
	t.Helper()
	x, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	body, err := x.PRBody(report.PRBody{
		Issue: 1, Incomplete: true, Detail: "step limit reached: 3 of 3 steps",
		Requester: hRequester, Model: hModel, Steps: 3, CostUSD: 0.01, Duration: time.Minute, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix",
	})
	if err != nil {
		t.Fatal(err)
	}
	pr := ghapp.PullRequest{Number: 5, Title: "Fix #1: Add subtracts", Body: body, Head: "agent-fix/issue-1", Base: "main",
		State: "open", Author: stepBot, Draft: drafts, HTMLURL: "https://github.test/octo/widget/pull/5"}
	if !drafts {
		pr.Title = report.DraftMark(true) + pr.Title
	}
	return pr
}

// round is a revise round on pr, asked for by the harness's requester,
// as handleRevise and readPR make it, whose agent submitted a change
// that nothing keeps a draft; saved is what an earlier attempt saved,
// when it is set.
func (sw *stepWorld) round(pr ghapp.PullRequest, saved *store.Saved) *round {
	taskID := jobs.ReviseTaskID(hRepo, pr.Number)
	delivery := "d-round-1"
	r := &round{w: sw.w, pr: pr, trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment}, j: job{
		kind: jobs.TypeRevise, taskID: taskID, key: store.JobKey(taskID, delivery), delivery: delivery,
		install: hInstall, repo: ghapp.Repo{Owner: "octo", Name: "widget"}, clone: jobs.Repo{FullName: hRepo},
		requester: jobs.User{Login: hRequester, ID: hUserID, Type: "User"}, trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment},
		instructions: "finish it", number: 1, thread: pr.Number, onPR: true, gh: sw.gh, started: sw.w.now(),
		branch: pr.Head, log: sw.w.log, issue: sw.gh.issue, cfg: sw.w.settings.operator(),
		saved: store.Saved{RunID: "20250103T150405Z-5e6f7a8b", Model: hModel,
			Result: agent.Result{Status: agent.Submitted, Summary: "Documented Add; the fix is complete.", Patch: "--- a/README.md\n+++ b/README.md\n", Steps: 2}},
	}}
	if saved != nil {
		r.j.saved, r.j.resumed = *saved, true
	}
	sw.gh.prs[pr.Number] = pr
	return r
}

// publishPushed does what publishResult does once the round's commit is pushed:
// deliver, ended, then the round's reply, which it returns.
func (r *round) publishPushed(t *testing.T, ctx context.Context) string {
	t.Helper()
	d, err := r.deliver(ctx, fetched{}, readyCommit)
	if err != nil || d.outcome != outcome.PRUpdated || d.draft {
		t.Fatalf("deliver = %+v, %v; want pr_updated, not a draft", d, err)
	}
	r.ended(ctx, d.outcome, readyCommit, r.j.saved.Result)
	if err := r.final(ctx, report.Final{Outcome: d.outcome, PRNumber: d.pr, PRURL: d.url}, d.outcome); err != nil {
		t.Fatalf("final: %v", err)
	}
	replies := r.j.gh.(*stepGitHub).botComments(r.pr.Number, "agentfix:final")
	if len(replies) != 1 {
		t.Fatalf("round replies = %d, want 1", len(replies))
	}
	return replies[0]
}

// TestRoundCompletesAnIncompleteDraft: a round the agent submitted makes
// the bot's incomplete draft ready for review — through GraphQL, or where
// drafts are refused by taking the mark off the title — replaces the
// body's incomplete notice with a note that keeps its reason (the opening
// run's sections stay), and its reply says it marked it ready.
// report's TestPRCompletedGolden and TestRoundGolden hold the wording.
func TestRoundCompletesAnIncompleteDraft(t *testing.T) {
	t.Parallel()
	for _, drafts := range []bool{true, false} {
		t.Run(fmt.Sprintf("drafts %v", drafts), func(t *testing.T) {
			t.Parallel()
			sw := newStepWorld(t, nil, nil)
			r := sw.round(incompleteDraft(t, drafts), nil)
			reply := r.publishPushed(t, t.Context())

			pr := sw.gh.prs[5]
			if pr.Draft || pr.Title != "Fix #1: Add subtracts" {
				t.Errorf("pull request draft %v titled %q, want ready, titled without a mark", pr.Draft, pr.Title)
			}
			for _, want := range []string{
				"> [!NOTE]\n> This change was incomplete when this pull request was opened: the run ended before the agent submitted it (step limit reached: 3 of 3 steps). A later round completed it in `0123456789ab`",
				"the pull request was then marked ready for review.",
				"## Summary\n\nThe agent gave no summary.",
			} {
				if !strings.Contains(pr.Body, want) {
					t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
				}
			}
			if strings.Contains(pr.Body, "This change is incomplete") {
				t.Errorf("pull request body still says the change is incomplete:\n%s", pr.Body)
			}
			if want := "@alice, I pushed `0123456789ab` to this pull request and marked it ready for review."; !strings.Contains(reply, want) {
				t.Errorf("round reply lacks %q:\n%s", want, reply)
			}
			want := []string{"UpdatePR 5 title Fix #1: Add subtracts", "UpdatePR 5 body"}
			if drafts {
				want = []string{"MarkReadyForReview 5", "UpdatePR 5 body"}
			}
			if diff := cmp.Diff(want, append(sw.gh.called("MarkReadyForReview"), sw.gh.called("UpdatePR")...)); diff != "" {
				t.Errorf("changes asked of GitHub (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundCannotMarkReady: when GitHub refuses to mark the draft ready,
// the round still ends well (pr_updated), leaves the draft as it was, logs
// a warning, and its reply says why the pull request is still a draft.
func TestRoundCannotMarkReady(t *testing.T) {
	t.Parallel()
	sw := newStepWorld(t, nil, nil)
	sw.gh.markErr = &ghapp.GraphQLError{Messages: []string{"Resource not accessible by integration"}}
	before := incompleteDraft(t, true)
	r := sw.round(before, nil)
	reply := r.publishPushed(t, t.Context())

	if diff := cmp.Diff(before, sw.gh.prs[5]); diff != "" {
		t.Errorf("pull request changed (-before +after):\n%s", diff)
	}
	if want := "; it completes the change, but I could not mark the pull request ready for review (GitHub answered: Resource not accessible by integration), so it is up to you."; !strings.Contains(reply, want) {
		t.Errorf("round reply lacks %q:\n%s", want, reply)
	}
	if got := sw.gh.called("MarkReadyForReview"); len(got) != 1 {
		t.Errorf("GraphQL requests = %q, want 1", got)
	}
	if !strings.Contains(sw.logs.String(), "mark the pull request ready for review") {
		t.Error("no warning in the logs")
	}
}

// TestRoundMarkedReadyThenRetried: a round that marked its pull request
// ready remembers it with the saved result, so a retry of the round (its
// reply failed; it publishes the saved result, scenarios_test.go's
// TestGitHubFailuresAfterTheAgent shows the agent does not run again)
// does not ask GitHub twice, does not note the completion twice in the
// body, and still says the pull request was marked ready.
func TestRoundMarkedReadyThenRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sw := newStepWorld(t, nil, nil)
	first := sw.round(incompleteDraft(t, true), nil)
	if got := sw.w.markReady(ctx, &first.j, first.pr, readyCommit); !got.Marked || got.Failure != "" {
		t.Fatalf("first attempt's markReady = %+v, want marked", got)
	}
	saved, ok, err := sw.w.store.LoadResult(ctx, first.j.key)
	if err != nil || !ok || !saved.Ready {
		t.Fatalf("saved result = %+v, %v, %v; want it to remember the pull request was marked ready", saved, ok, err)
	}

	// The retry reads the pull request as the first attempt left it.
	retry := sw.round(sw.gh.prs[5], &saved)
	reply := retry.publishPushed(t, ctx)
	pr := sw.gh.prs[5]
	if pr.Draft || strings.Count(pr.Body, "A later round completed it") != 1 || strings.Contains(pr.Body, "This change is incomplete") {
		t.Errorf("pull request draft %v, body:\n%s\nwant ready, with one completed note", pr.Draft, pr.Body)
	}
	if !strings.Contains(reply, "to this pull request and marked it ready for review.") {
		t.Errorf("round reply does not say it marked the pull request ready:\n%s", reply)
	}
	if diff := cmp.Diff([]string{"MarkReadyForReview 5", "UpdatePR 5 body"}, append(sw.gh.called("MarkReadyForReview"), sw.gh.called("UpdatePR")...)); diff != "" {
		t.Errorf("changes asked of GitHub over both attempts (-want +got):\n%s", diff)
	}
}
