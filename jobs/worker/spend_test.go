package worker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// pricey makes the harness's model cost $0.10 a call (the fake answers
// 100 output tokens, at $1,000 per million; input is free) and the worker
// reserve $0.15 (a reply of up to 150 tokens): every call costs less than
// its reservation, and the budgets decide when runs stop.
func (h *harness) pricey(o *Options) {
	o.Model = func(name string) (agent.Model, error) {
		return llm.New(name, llm.Options{
			APIKey: "sk-test", BaseURL: h.model.srv.URL + "/v1",
			Prices:     map[string]llm.Price{hModel: {Output: 1000}},
			MaxRetries: -1, Getenv: func(string) string { return "" }, Logger: h.logger(),
		})
	}
	o.ModelPrice = func(agent.Model) ModelPrice { return ModelPrice{OutputPerM: 1000, MaxOutputTokens: 150} }
}

// spend returns what the budgets hold as spent in the harness's repository
// today, and what the run records say the runs cost.
func (h *harness) spend(t *testing.T) (charged, recorded float64) {
	t.Helper()
	b, err := budget.New(h.rdb, budget.LimitsFrom(h.cfg), budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	usage, err := b.Spent(context.Background(), budget.Scope{Installation: hInstall, Repo: hRepo})
	if err != nil {
		t.Fatal(err)
	}
	list, err := h.store.List(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		recorded += m.CostUSD
	}
	return usage[0].Spent.USD, recorded
}

func TestDailyBudgetReached(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	earlier, err := budget.New(h.rdb, budget.LimitsFrom(h.cfg), budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := earlier.Reserve(context.Background(), budget.Scope{Installation: hInstall, Repo: hRepo, Job: "earlier"}, budget.Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(context.Background(), budget.Amount{USD: h.cfg.RepoDailyUSD}); err != nil {
		t.Fatal(err)
	}
	h.startWorker()
	h.label(hRequester)
	h.waitForComments("the reply", h.issue, "I am not starting.", 1)
	reply := h.commentsWith(h.issue, "I am not starting.")[0].Body
	for _, want := range []string{"@alice, I am not starting. This repository's daily budget of $20.00 is used up: $20.00 spent today (UTC).", "It resets at 00:00 UTC ("} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply lacks %q:\n%s", want, reply)
		}
	}
	// The notice deletes the waiting job; a job that started first ends
	// at once with the same refusal (the reply is not repeated).
	h.waitFor("the job to be gone", func() bool { st := h.taskState(); return st == "" || st == "archived" })
	if n := len(h.botComments(h.issue)); n != 1 {
		t.Errorf("bot comments = %d, want only the reply", n)
	}
	if gitCalls(h.f) != 0 || h.model.calls() != 0 {
		t.Errorf("git requests %d, model calls %d; want none", gitCalls(h.f), h.model.calls())
	}
}

func TestJobBudgetStopsTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.MaxCostUSD = 0.5 // the job's budget: four calls of $0.10, and no fifth reservation of $0.15
	h.model.add(fixCalc(), bash("ls"), bash("ls"), bash("ls"))
	reg, _ := h.startWorker(h.pricey)
	h.label(hRequester)
	h.waitFor("the job to end", func() bool { return len(h.finals()) == 1 && h.taskState() == "completed" })
	prs := h.prs()
	if len(prs) != 1 || !prs[0].Draft {
		t.Fatalf("pull requests = %+v, want one draft", prs)
	}
	want := "This job's budget of $0.50 is nearly used up: $0.40 spent, and the next model call could cost up to $0.15."
	if !strings.Contains(prs[0].Body, want) {
		t.Errorf("PR body lacks %q:\n%s", want, prs[0].Body)
	}
	if h.model.calls() != 4 {
		t.Errorf("model calls = %d, want 4", h.model.calls())
	}
	charged, recorded := h.spend(t)
	if math.Abs(charged-0.4) > 1e-6 || math.Abs(recorded-0.4) > 1e-6 {
		t.Errorf("charged %v, recorded %v; want $0.40", charged, recorded)
	}
	if got := metricValue(t, reg, "agentfix_budget_spent_usd", map[string]string{"scope": "job"}); math.Abs(got-0.4) > 1e-6 {
		t.Errorf("agentfix_budget_spent_usd{scope=job} = %v, want 0.4", got)
	}
}

// TestBudgetRace runs two workers on one Redis, each working on its own
// issue of one repository at the same time, until the repository's daily
// budget stops them: together they never spend more than it.
func TestBudgetRace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.RepoDailyUSD, h.cfg.MaxCostUSD = 1, 5
	for i := range 40 {
		h.model.add(bash(fmt.Sprintf("ls # %d", i))) // not one action repeated: five in a row end a run as stuck
	}
	regs := make([]*prometheus.Registry, 2)
	for i := range regs {
		regs[i], _ = h.startWorker(h.pricey)
	}
	issues := []int{h.issue, h.f.AddIssue(hRepo, ghfake.Issue{Title: "Sub adds", Body: "calc.Sub is missing."})}
	for _, n := range issues {
		h.issue = n
		h.label(hRequester)
	}
	for _, n := range issues {
		h.issue = n
		h.waitFor(fmt.Sprintf("the job of #%d to end", n), func() bool { return len(h.finals()) == 1 && h.taskState() == "completed" })
		if final := h.finals()[0].Body; !strings.Contains(final, "This repository's daily budget of $1.00 is") {
			t.Errorf("final comment on #%d does not name the repository's budget:\n%s", n, final)
		}
	}
	charged, recorded := h.spend(t)
	t.Logf("the two jobs spent $%.2f in %d model calls", charged, h.model.calls())
	if charged > 1+1e-9 || math.Abs(charged-recorded) > 1e-6 {
		t.Errorf("charged %v, recorded %v; want the same, at most $1.00", charged, recorded)
	}
	if charged < 0.8-1e-9 {
		t.Errorf("charged %v; want the budget nearly used up (at least $0.80)", charged)
	}
	var metered float64
	for _, reg := range regs {
		metered += metricValue(t, reg, "agentfix_budget_spent_usd", map[string]string{"scope": "repo"})
	}
	if math.Abs(metered-charged) > 1e-6 {
		t.Errorf("agentfix_budget_spent_usd{scope=repo} of both workers = %v, want %v", metered, charged)
	}
	if n := h.model.calls(); float64(n)*0.1 > 1+1e-9 {
		t.Errorf("model calls = %d: more than the $1.00 budget pays for", n)
	}
}
