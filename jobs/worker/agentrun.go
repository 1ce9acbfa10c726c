package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// submitTool is the name of the submit tool (DESIGN.md §7).
const submitTool = "submit"

// reviewProgress is what the worker saw of the two-phase submission: how
// many review messages the agent got (of how many stages), and the last
// result of the repository's test command and whether it ran on the final
// change (see noteReview).
type reviewProgress struct {
	Rounds      int               `json:"rounds"`
	Stages      int               `json:"stages,omitempty"`
	Test        *tools.TestResult `json:"test,omitempty"`
	TestedFinal bool              `json:"tested_final,omitempty"`
}

// agentRun is one run of the agent in a job's working copy and sandbox.
type agentRun struct {
	j   *job
	wt  *workspace.WorkTree
	run *runs.Run

	mu     sync.Mutex
	review reviewProgress
}

// errCancelMarker ends a run whose job was stopped (the marker was seen by
// a hook before asynq's cancellation reached the context).
var errCancelMarker = errors.New("cancel marker set")

// execute runs the agent on task and returns its result. The error is
// non-nil only when the run could not start (no sandbox, no model, a bad
// task); everything that happens during the run is in the Result.
func (r *agentRun) execute(ctx context.Context, task agent.Task) (agent.Result, error) {
	w, j := r.j.w, r.j
	_ = j.status.show(ctx, func(d *statusData) { d.Phase = PhaseSetup }, true)
	sandbox, err := w.opts.Sandbox(workspace.Options{Workspace: r.wt.Dir(), Cache: r.wt.CacheDir(), Logger: j.log})
	if err != nil {
		return agent.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if err := runSetup(ctx, sandbox, j.cfg.Repo.Setup, j.log); err != nil {
		return agent.Result{}, err
	}
	model, err := w.opts.Model(j.cfg.Model)
	if err != nil {
		return agent.Result{}, fmt.Errorf("model: %w", err)
	}
	textMode := false
	if m, ok := model.(interface{ TextMode() bool }); ok {
		textMode = m.TextMode()
	}
	env, err := tools.New(tools.Options{
		Sandbox:              sandbox,
		Repo:                 r.wt,
		Root:                 r.wt.Dir(),
		TextMode:             textMode,
		TestCommand:          j.cfg.Repo.Test,
		AllowWorkflowChanges: j.cfg.AllowWorkflowChanges,
		Logger:               j.log,
	})
	if err != nil {
		return agent.Result{}, fmt.Errorf("tools: %w", err)
	}
	defer env.Close()
	spend := w.newSpendMeter(budget.Scope{Installation: j.p.Installation, Repo: j.repo.String(), Job: j.key,
		JobLimit: budget.Amount{USD: j.cfg.Limits.MaxCostUSD}}, model, j.log)
	a, err := agent.New(model, env,
		agent.WithConfig(j.cfg.agentConfig()),
		agent.WithHooks(agent.Hooks{OnStepStart: r.onStepStart, OnStepDone: r.onStepDone}),
		agent.WithHooks(spend.hooks()), // last: see spendMeter.hooks
		agent.WithTrajectory(spend.trajectory(r.run.Trajectory())),
		agent.WithRunID(r.run.ID()),
		agent.WithClock(w.now),
		agent.WithLogger(j.log),
	)
	if err != nil {
		return agent.Result{}, err
	}
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.Step, d.MaxSteps, d.MaxCostUSD = PhaseWorking, 0, j.cfg.Limits.MaxSteps, j.cfg.Limits.MaxCostUSD
	}, true)
	res, err := a.Run(ctx, task)
	if err != nil && res.RunID == "" {
		return agent.Result{}, err
	}
	r.noteReview(env.ReviewState(), res.Patch)
	if err != nil {
		j.log.Warn("agent run finished with an error", logattr.Err, err)
	}
	return res, nil
}

// onStepStart stops the run when the job's cancel marker is set (a stop, a
// closed issue, a removed installation), and shows the step about to run.
func (r *agentRun) onStepStart(ctx context.Context, s agent.StepStart) error {
	j := r.j
	m, ok, err := j.w.state.cancelFor(ctx, j.taskID, j.p.DeliveryID)
	if err != nil {
		j.log.Warn("read cancel marker", logattr.Err, err)
	}
	if ok {
		return &agent.StopError{Status: agent.Cancelled, Reason: fmt.Sprintf("%s: %v", m.Reason, errCancelMarker)}
	}
	_ = j.status.show(ctx, func(d *statusData) {
		d.Step, d.CostUSD, d.Elapsed = s.Step, s.TotalCostUSD, s.Elapsed
	}, false)
	return nil
}

// onStepDone counts the step, notes review rounds, shows progress, and
// mirrors the run record at a phase change and every tenth step.
func (r *agentRun) onStepDone(ctx context.Context, s agent.Step) error {
	j := r.j
	j.w.metrics.step(provider(j.cfg.Model), s.Usage)
	reviewing := false
	for i, a := range s.Actions {
		if a.Name == submitTool && i < len(s.Observations) && !s.Observations[i].Submitted {
			r.mu.Lock()
			r.review.Rounds++
			r.mu.Unlock()
			reviewing = true
		}
	}
	before := j.status.snapshot().Phase
	_ = j.status.show(ctx, func(d *statusData) {
		d.Step, d.CostUSD = s.Step, s.TotalCostUSD
		if last := s.LastAction(); last != "" {
			d.LastAction = last
		}
		if reviewing {
			d.Phase = PhaseReviewing // until the run ends
		}
	}, false)
	if j.status.snapshot().Phase != before || s.Step%10 == 0 {
		if err := r.run.Save(ctx); err != nil {
			j.log.Warn("mirror run record", logattr.Err, err)
		}
	}
	return nil
}

// reviewRounds returns the review messages the agent got.
func (r *agentRun) reviewRounds() reviewProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.review
}

// provider returns the provider part of a model name, the label of the
// token metric.
func provider(model string) string {
	p, _, _ := strings.Cut(model, "/")
	return p
}
