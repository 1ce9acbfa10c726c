package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/session"
)

// priceyCall is what each model call costs in the spend tests: $0.10 (100
// output tokens at $1,000 per million); the meter reserves $0.15 for it
// (a reply of up to 150 tokens), so the budgets decide when runs stop.
var (
	priceyCall  = agent.Usage{InputTokens: 0, OutputTokens: 100}
	priceyModel = ModelPrice{OutputPerM: 1000, MaxOutputTokens: 150}
)

// agentLoop calls hooks as the agent's loop does (agent's TestRunHooks):
// before each step every OnStepStart in order, then the model call (of
// cost $0.10), then every OnStepDone; the first hook error ends the run,
// and OnRunDone is called. It returns the model calls made and the error
// that ended them (nil when max calls were made).
func agentLoop(ctx context.Context, hooks []agent.Hooks, max int) (calls int, err error) {
	defer func() {
		for _, h := range hooks {
			if h.OnRunDone != nil {
				_ = h.OnRunDone(ctx, agent.Result{})
			}
		}
	}()
	for step := 1; step <= max; step++ {
		for _, h := range hooks {
			if h.OnStepStart != nil {
				if err := h.OnStepStart(ctx, agent.StepStart{Step: step}); err != nil {
					return calls, err
				}
			}
		}
		calls++
		s := agent.Step{Step: step, Usage: priceyCall, CostUSD: 0.1,
			Messages: []agent.Message{{Role: agent.RoleAssistant, Content: fmt.Sprintf("ls # %d", step)}}}
		for _, h := range hooks {
			if h.OnStepDone != nil {
				if err := h.OnStepDone(ctx, s); err != nil {
					return calls, err
				}
			}
		}
	}
	return calls, nil
}

// stopReason returns the reason of a *agent.StopError with status
// limits_exceeded, failing the test for any other error.
func stopReason(t *testing.T, err error) string {
	t.Helper()
	var stop *agent.StopError
	if !errors.As(err, &stop) || stop.Status != agent.LimitsExceeded {
		t.Fatalf("the run ended with %v, want a limits_exceeded stop", err)
	}
	return stop.Reason
}

// repoSpent is what b holds as spent, and as held, by the harness's
// repository today, and by job when it is set.
func repoSpent(t *testing.T, b *budget.Budget, job string) (spent, held map[budget.Kind]float64) {
	t.Helper()
	usage, err := b.Spent(t.Context(), budget.Scope{Installation: hInstall, Repo: hRepo, Job: job})
	if err != nil {
		t.Fatal(err)
	}
	spent, held = map[budget.Kind]float64{}, map[budget.Kind]float64{}
	for _, u := range usage {
		spent[u.Kind], held[u.Kind] = u.Spent.USD, u.Held.USD
	}
	return spent, held
}

// TestJobBudgetStopsTheRun: the agent step charges every model call to
// the job's budget, the job's limit (here $0.50) and key its scope: four
// calls of $0.10 are charged, the fifth reservation of $0.15 is refused,
// and the run stops as limits_exceeded with the budget's words (agent's
// TestRunHooks autosubmits such a run; TestDraftReason and
// scenarios_test.go's TestIncompleteRunOpensDraft make it a draft whose
// body says why; budget's TestSettleAndRelease counts
// agentfix_budget_spent_usd). Nothing stays held after the run.
func TestJobBudgetStopsTheRun(t *testing.T) {
	t.Parallel()
	sw := newStepWorld(t, nil, nil)
	sw.w.agent.price = func(agent.Model) ModelPrice { return priceyModel }
	var (
		calls int
		ended error
	)
	sw.sessions.answer = func(o session.Options) (session.Result, error) {
		calls, ended = agentLoop(t.Context(), o.Hooks.Agent, 10)
		return session.Result{Agent: agent.Result{Status: agent.Autosubmitted, Cause: agent.LimitsExceeded}}, nil
	}
	f := sw.fix()
	j := &f.j
	j.cfg = sw.w.settings.operator()
	j.cfg.Limits.MaxCostUSD = 0.5
	if _, err := sw.runAgent(t, j, defaultBranchFiles{}); err != nil {
		t.Fatalf("agent step: %v", err)
	}
	if calls != 4 {
		t.Errorf("model calls = %d, want 4", calls)
	}
	if got, want := stopReason(t, ended), "This job's budget of $0.50 is nearly used up: $0.40 spent, and the next model call could cost up to $0.15."; got != want {
		t.Errorf("stop reason = %q\nwant          %q", got, want)
	}
	spent, held := repoSpent(t, sw.budget, j.key)
	for _, k := range []budget.Kind{budget.KindJob, budget.KindRepo, budget.KindInstallation} {
		if math.Abs(spent[k]-0.4) > 1e-6 || held[k] != 0 {
			t.Errorf("%s budget: spent %v, held %v; want $0.40 spent, nothing held", k, spent[k], held[k])
		}
	}
}

// TestBudgetRace: two workers (two Budgets on one Redis) each run a job in
// one repository at the same time until the repository's daily budget
// ($1.00) stops them. Budget's TestRaceNeverOverspends shows no
// interleaving of reservations overspends a scope; here the meter of each
// run reserves before every call, settles what the call cost, and stops
// its run with the repository budget's words when it is refused: together
// the jobs are charged what their calls cost, nearly the whole budget and
// never more, and each worker's agentfix_budget_spent_usd counts its share.
func TestBudgetRace(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	limits := budget.Limits{JobUSD: 5, RepoDailyUSD: 1, InstallationDailyUSD: 100}
	regs := make([]*prometheus.Registry, 2)
	budgets := make([]*budget.Budget, 2)
	for i := range budgets {
		regs[i] = prometheus.NewRegistry()
		b, err := budget.New(rdb, limits, budget.Options{Registerer: regs[i]})
		if err != nil {
			t.Fatal(err)
		}
		budgets[i] = b
	}
	var (
		wg     sync.WaitGroup
		calls  [2]int
		reason [2]string
		errs   [2]error
	)
	for i, b := range budgets {
		scope := budget.Scope{Installation: hInstall, Repo: hRepo, Job: jobs.FixTaskID(hRepo, i+1) + ":d-" + fmt.Sprint(i), JobLimit: budget.Amount{USD: 5}}
		m := newSpendMeter(b, scope, priceyModel, slogText(&syncBuffer{}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls[i], errs[i] = agentLoop(context.Background(), []agent.Hooks{m.hooks()}, 40)
		}()
	}
	wg.Wait()
	for i := range errs {
		reason[i] = stopReason(t, errs[i])
		if !strings.HasPrefix(reason[i], "This repository's daily budget of $1.00 is") {
			t.Errorf("job %d stopped with %q, want the repository's budget named", i+1, reason[i])
		}
	}
	spent, held := repoSpent(t, budgets[0], "")
	charged := spent[budget.KindRepo]
	t.Logf("the two jobs spent $%.2f in %d model calls", charged, calls[0]+calls[1])
	if paid := float64(calls[0]+calls[1]) * 0.1; math.Abs(charged-paid) > 1e-6 || held[budget.KindRepo] != 0 {
		t.Errorf("charged %v, held %v for %d calls; want what the calls cost, $%.2f, nothing held", charged, held[budget.KindRepo], calls[0]+calls[1], paid)
	}
	if charged > 1+1e-9 || charged < 0.8-1e-9 {
		t.Errorf("charged %v; want the budget nearly used up (at least $0.80) and never more than $1.00", charged)
	}
	var metered float64
	for _, reg := range regs {
		metered += metricValue(t, reg, "agentfix_budget_spent_usd", map[string]string{"scope": "repo"})
	}
	if math.Abs(metered-charged) > 1e-6 {
		t.Errorf("agentfix_budget_spent_usd{scope=repo} of both workers = %v, want %v", metered, charged)
	}
}

// TestDailyBudgetReached: with the repository's daily budget used up, the
// notice of a trigger replies once saying so (TestGateAdmit has the gate's
// reply; report's repo_settings.golden its words) and deletes the waiting
// job; a job that started before the notice came ends at the gate with the
// same refusal, without a second reply, before any clone or model.
func TestDailyBudgetReached(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sw := newStepWorld(t, nil, nil)
	r, err := sw.budget.Reserve(ctx, budget.Scope{Installation: hInstall, Repo: hRepo, Job: "earlier"}, budget.Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, budget.Amount{USD: sw.w.opts.Config.RepoDailyUSD}); err != nil {
		t.Fatal(err)
	}
	f := sw.fix()
	p := jobs.FixIssue{V: jobs.Version, DeliveryID: f.j.delivery, Installation: hInstall, Repo: f.j.clone, Number: 1,
		Trigger: f.j.trigger, Requester: f.j.requester}
	if o, err := jobs.NewClient(sw.w.rdb, time.Minute).SubmitFix(ctx, p); err != nil || o != jobs.OutcomeQueued {
		t.Fatalf("SubmitFix = %s, %v; want queued", o, err)
	}
	nt := &notice{w: sw.w, repo: f.j.repo, gh: sw.gh, log: sw.w.log, n: jobs.Notice{V: jobs.Version, DeliveryID: p.DeliveryID,
		Installation: hInstall, Repo: p.Repo, Number: 1, Trigger: p.Trigger, Requester: p.Requester,
		Outcome: jobs.OutcomeQueued, AgentTaskID: f.j.taskID}}
	if o, err := nt.queued(ctx); o != outcome.OverBudget || err != nil {
		t.Fatalf("notice = %s, %v; want over_budget", o, err)
	}
	if _, err := sw.w.inspector.GetTaskInfo(jobs.QueueAgent, f.j.taskID); !errors.Is(err, asynq.ErrTaskNotFound) {
		t.Errorf("the waiting job: GetTaskInfo = %v, want it deleted", err)
	}

	if o, err := f.run(ctx); o != outcome.OverBudget || err == nil {
		t.Errorf("job that started first = %s, %v; want over_budget", o, err)
	}
	replies := sw.gh.botComments(1, "")
	if len(replies) != 1 {
		t.Fatalf("bot comments = %q, want only the reply", replies)
	}
	for _, want := range []string{"@alice, I am not starting. This repository's daily budget of $20.00 is used up: $20.00 spent today (UTC).", "It resets at 00:00 UTC ("} {
		if !strings.Contains(replies[0], want) {
			t.Errorf("reply lacks %q:\n%s", want, replies[0])
		}
	}
	if got := sw.gh.called("GetRepository"); len(got) != 0 || len(sw.sessions.runs) != 0 || len(sw.models) != 0 {
		t.Errorf("repository reads %d, sessions %d, models built %v; want none (no clone, no agent)", len(got), len(sw.sessions.runs), sw.models)
	}
}
