package worker

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
)

// incompletePR opens a pull request of the bot for the harness issue as a
// fix job a limit ended would have: branch agent-fix/issue-<N> with the
// partial change, the body pr_body.md.tmpl renders for an incomplete run,
// and a draft. It returns its number.
func (h *harness) incompletePR() int {
	h.t.Helper()
	branch := fmt.Sprintf("agent-fix/issue-%d", h.issue)
	title := fmt.Sprintf("Fix #%d: Add subtracts", h.issue)
	h.f.Commit(hRepo, branch, map[string]string{"calc.go": fixedCalc}, title)
	return h.f.AddPR(hRepo, ghfake.PR{Title: title, Head: branch, Author: h.f.BotLogin(), Body: h.incompleteBody(), Draft: true})
}

// incompleteBody is the body pr_body.md.tmpl renders for the harness issue
// when a limit ended the run.
func (h *harness) incompleteBody() string {
	h.t.Helper()
	x, err := report.New()
	if err != nil {
		h.t.Fatal(err)
	}
	body, err := x.PRBody(report.PRBody{
		Issue: h.issue, Incomplete: true, Detail: "step limit reached: 3 of 3 steps", Summary: "Changed Add.",
		Requester: hRequester, Model: hModel, Steps: 3, CostUSD: 0.01, Duration: time.Minute, RunID: "20250102T150405Z-1a2b3c4d", Command: "/agent-fix",
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return body
}

// pr returns pull request number of the harness repository.
func (h *harness) pr(number int) ghfake.PR {
	h.t.Helper()
	for _, p := range h.prs() {
		if p.Number == number {
			return p
		}
	}
	h.t.Fatalf("no pull request #%d", number)
	return ghfake.PR{}
}

// graphQLCalls counts the GraphQL requests the fake got.
func graphQLCalls(f *ghfake.Fake) int { return f.CountCalls(http.MethodPost, ghfake.GraphQLPath) }

// finishRound is a round that completes the change: one edit, then submit
// and pass the review.
func finishRound() []turn {
	return []turn{edit("README.md", "# widget", "# widget\n\nAdd adds."), submit("Documented Add; the fix is complete."), submit("")}
}

// TestRoundCompletesAnIncompleteDraft: a fix job a limit ended opens a
// draft marked incomplete (a regular pull request titled "[incomplete] …"
// where drafts are refused); a round the agent submits makes it ready for
// review — through GraphQL, or by taking the mark off the title — and
// replaces the body's incomplete notice with a note that keeps its reason,
// and its reply says so.
func TestRoundCompletesAnIncompleteDraft(t *testing.T) {
	t.Parallel()
	for _, drafts := range []bool{true, false} {
		t.Run(fmt.Sprintf("drafts %v", drafts), func(t *testing.T) {
			h := newHarness(t)
			if !drafts {
				h.f.DisableDrafts(hRepo)
			}
			h.cfg.MaxSteps = 3
			h.model.add(fixCalc(), bash("ls"), bash("cat calc.go"))
			h.model.add(finishRound()...)
			h.startWorker()
			h.label(hRequester)
			h.waitFor("the fix job's final comment", func() bool { return len(h.finals()) == 1 })
			prs := h.prs()
			if len(prs) != 1 || prs[0].Draft != drafts || !strings.Contains(prs[0].Body, "This change is incomplete") {
				t.Fatalf("pull requests after the fix job = %+v, want one marked incomplete", prs)
			}
			n := prs[0].Number

			h.commentOn(n, h.f.BotLogin(), hRequester, "/agent-fix finish it")
			h.waitFor("the round's reply and its task done", func() bool {
				return len(h.commentsWith(n, "agentfix:final revise:")) == 1 && h.reviseState(n) == "completed"
			})
			pr := h.pr(n)
			if pr.Draft || pr.Title != "Fix #1: Add subtracts" {
				t.Errorf("pull request draft %v titled %q, want ready, titled without a mark", pr.Draft, pr.Title)
			}
			for _, want := range []string{
				"> [!NOTE]\n> This change was incomplete when this pull request was opened: the run ended before the agent submitted it (step limit reached: 3 of 3 steps). A later round completed it in `",
				"the pull request was then marked ready for review.",
				"## Summary\n\nThe agent gave no summary.", // the opening run's sections stay
			} {
				if !strings.Contains(pr.Body, want) {
					t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
				}
			}
			if strings.Contains(pr.Body, "This change is incomplete") {
				t.Errorf("pull request body still says the change is incomplete:\n%s", pr.Body)
			}
			head := h.f.HeadCommit(hRepo, "agent-fix/issue-1")
			reply := h.commentsWith(n, "agentfix:final revise:")[0].Body
			if want := "@alice, I pushed `" + head.SHA[:12] + "` to this pull request and marked it ready for review."; !strings.Contains(reply, want) {
				t.Errorf("round reply lacks %q:\n%s", want, reply)
			}
			wantGraphQL := 0
			if drafts {
				wantGraphQL = 1
			}
			if got := graphQLCalls(h.f); got != wantGraphQL {
				t.Errorf("GraphQL requests = %d, want %d", got, wantGraphQL)
			}
		})
	}
}

// TestRoundCannotMarkReady: when GitHub refuses to mark the draft ready,
// the round still ends well, and its reply says why the pull request is
// still a draft.
func TestRoundCannotMarkReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := h.incompletePR()
	before := h.pr(n)
	h.f.Inject(ghfake.Fault{Method: http.MethodPost, Path: ghfake.GraphQLPath, Status: http.StatusOK,
		Body: `{"data":{"markPullRequestReadyForReview":null},"errors":[{"type":"FORBIDDEN","message":"Resource not accessible by integration"}]}`})
	h.model.add(finishRound()...)
	reg, _ := h.startWorker()
	h.commentOn(n, h.f.BotLogin(), hRequester, "/agent-fix finish it")
	h.waitFor("the round's reply and its task done", func() bool {
		return len(h.commentsWith(n, "agentfix:final revise:")) == 1 && h.reviseState(n) == "completed"
	})
	pr := h.pr(n)
	if !pr.Draft || pr.Body != before.Body {
		t.Errorf("pull request draft %v, body:\n%s\nwant it left a draft as it was", pr.Draft, pr.Body)
	}
	reply := h.commentsWith(n, "agentfix:final revise:")[0].Body
	if want := "; it completes the change, but I could not mark the pull request ready for review (GitHub answered: Resource not accessible by integration), so it is up to you."; !strings.Contains(reply, want) {
		t.Errorf("round reply lacks %q:\n%s", want, reply)
	}
	if got := metricValue(t, reg, "agentfix_jobs_total", map[string]string{"kind": "revise", "outcome": string(outcome.PRUpdated)}); got != 1 {
		t.Errorf("revise jobs pr_updated = %v, want 1", got)
	}
	if got := graphQLCalls(h.f); got != 1 {
		t.Errorf("GraphQL requests = %d, want 1", got)
	}
	if !strings.Contains(h.logs.String(), "mark the pull request ready for review") {
		t.Error("no warning in the logs")
	}
}

// TestRoundMarkedReadyThenRetried: a round that marked its pull request
// ready and then failed to post its reply is retried from its saved result:
// the agent does not run again, GitHub is not asked twice, and the reply
// still says the pull request was marked ready.
func TestRoundMarkedReadyThenRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := h.incompletePR()
	script := finishRound()
	script[2].before = func() { // the status comment exists by now; the reply will fail
		for range 3 {
			h.f.FailNext(http.MethodPost, "/repos/*/*/issues/*/comments", http.StatusBadGateway, nil)
		}
	}
	h.model.add(script...)
	h.startWorker()
	h.commentOn(n, h.f.BotLogin(), hRequester, "/agent-fix finish it")
	h.waitFor("the round's reply after a retry and its task done", func() bool {
		return len(h.commentsWith(n, "agentfix:final revise:")) == 1 && h.reviseState(n) == "completed"
	})
	if h.f.PendingFaults() != 0 {
		t.Fatalf("%d faults did not fire", h.f.PendingFaults())
	}
	if !strings.Contains(h.logs.String(), "revise job failed; it will be retried") {
		t.Fatal("the round was not retried")
	}
	if calls := h.model.calls(); calls != 3 {
		t.Errorf("model calls = %d, want 3: the agent ran once", calls)
	}
	pr := h.pr(n)
	if pr.Draft || strings.Count(pr.Body, "A later round completed it") != 1 || strings.Contains(pr.Body, "This change is incomplete") {
		t.Errorf("pull request draft %v, body:\n%s\nwant ready, with one completed note", pr.Draft, pr.Body)
	}
	if reply := h.commentsWith(n, "agentfix:final revise:")[0].Body; !strings.Contains(reply, "to this pull request and marked it ready for review.") {
		t.Errorf("round reply does not say it marked the pull request ready:\n%s", reply)
	}
	if got := graphQLCalls(h.f); got != 1 {
		t.Errorf("GraphQL requests = %d, want 1", got)
	}
}
