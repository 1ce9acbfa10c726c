package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// submitTool is the name of the submit tool (DESIGN.md §7).
const submitTool = "submit"

// errCancelMarker ends a run whose job was stopped (the marker was seen by
// a hook before asynq's cancellation reached the context).
var errCancelMarker = errors.New("cancel marker set")

// agentStep is the agent session of a job: it runs the one run path
// (package session) in the job's working copy, with hooks that show the
// job's progress in its status comment, stop it when its cancel marker is
// set, and charge every model call to its budgets.
type agentStep struct {
	sandbox SandboxFactory
	model   ModelFactory
	budget  *budget.Budget
	price   func(agent.Model) ModelPrice
	metrics *metrics
	store   *store.Store
	now     func() time.Time
	// scratch is where the fresh checkouts of the test runs go.
	scratch string
	// images, setupCache and operatorImage give runs their environment.
	images        session.Images
	setupCache    session.SetupCache
	operatorImage string
	// runSession is the session's run: session.Run, or in tests one that
	// records what the step passes it.
	runSession func(context.Context, session.Options) (session.Result, error)
}

// run runs the agent on task in wt. The error is non-nil only when the run
// could not start (a *session.SetupError, no sandbox, no model); what
// happens during the run is in the Result.
func (a *agentStep) run(ctx context.Context, j *job, wt *workspace.WorkTree, task agent.Task, from defaultBranchFiles) (session.Result, error) {
	j.show(ctx, func(d *report.Status) { d.Phase = report.PhaseSetup })
	model, err := a.model(j.cfg.Model)
	if err != nil {
		return session.Result{}, fmt.Errorf("model: %w", err)
	}
	var price ModelPrice
	if a.price != nil {
		price = a.price(model)
	}
	spend := newSpendMeter(a.budget, budget.Scope{Installation: j.install, Repo: j.repo.String(), Job: j.key,
		JobLimit: budget.Amount{USD: j.cfg.Limits.MaxCostUSD}}, price, j.log)
	p := &progress{a: a, j: j}
	settings := j.cfg.session()
	settings.NestedInstructions = from.instructions.Nested
	settings.Devcontainer, settings.DevcontainerErr = from.devcontainer, from.devcontainerErr
	// Setup runs the default branch's files, also in a round on the
	// branch the agent wrote; so its caches may be kept for others.
	settings.SetupCommit = from.head
	settings.SaveSetupCache = from.head != ""
	return a.runSession(ctx, session.Options{
		WorkTree: wt, Sandbox: a.sandbox, Model: model, Settings: settings, Task: task,
		ScratchDir: a.scratch, Baselines: a.store,
		Images: a.images, SetupCache: a.setupCache, OperatorImage: a.operatorImage,
		RunID: j.rec.ID(), Trajectory: spend.trajectory(j.rec.Trajectory()), Now: a.now, Logger: j.log,
		Hooks: session.Hooks{
			OnEnvironment: func(ctx context.Context, env session.Environment) {
				j.show(ctx, func(d *report.Status) {
					d.Environment = env.Description
					d.Notes = append(d.Notes, env.Notes...)
				})
			},
			OnAgentStart: func(ctx context.Context) {
				j.show(ctx, func(d *report.Status) {
					d.Phase, d.Step, d.MaxSteps, d.MaxCostUSD = report.PhaseWorking, 0, j.cfg.Limits.MaxSteps, j.cfg.Limits.MaxCostUSD
				})
			},
			Agent: []agent.Hooks{
				{OnStepStart: p.onStepStart, OnStepDone: p.onStepDone},
				spend.hooks(), // last: see spendMeter.hooks
			},
		},
	})
}

// progress follows one agent run of a job.
type progress struct {
	a *agentStep
	j *job
}

// onStepStart stops the run when the job's cancel marker is set (a stop, a
// closed issue, a removed installation), and shows the step about to run.
func (p *progress) onStepStart(ctx context.Context, s agent.StepStart) error {
	j := p.j
	m, ok, err := p.a.store.CancelFor(ctx, j.taskID, j.delivery)
	if err != nil {
		j.log.Warn("read cancel marker", logattr.Err, err)
	}
	if ok {
		return &agent.StopError{Status: agent.Cancelled, Reason: fmt.Sprintf("%s: %v", m.Reason, errCancelMarker)}
	}
	if j.status == nil { // an automatic round has no status comment
		return nil
	}
	_ = j.status.Show(ctx, func(d *report.Status) {
		d.Step, d.CostUSD, d.Elapsed = s.Step, s.TotalCostUSD, s.Elapsed
	}, false)
	return nil
}

// onStepDone counts the step, shows progress (reviewing from the first
// review message on), and mirrors the run record at a phase change and
// every tenth step.
func (p *progress) onStepDone(ctx context.Context, s agent.Step) error {
	j := p.j
	p.a.metrics.step(provider(j.cfg.Model), s.Usage)
	if j.status == nil { // an automatic round has no status comment
		if s.Step%10 == 0 {
			if err := j.rec.Save(ctx); err != nil {
				j.log.Warn("mirror run record", logattr.Err, err)
			}
		}
		return nil
	}
	before := j.status.Snapshot().Phase
	_ = j.status.Show(ctx, func(d *report.Status) {
		d.Step, d.CostUSD = s.Step, s.TotalCostUSD
		if last := s.LastAction(); last != "" {
			d.LastAction = last
		}
		if reviewing(s) {
			d.Phase = report.PhaseReviewing // until the run ends
		}
	}, false)
	if j.status.Snapshot().Phase != before || s.Step%10 == 0 {
		if err := j.rec.Save(ctx); err != nil {
			j.log.Warn("mirror run record", logattr.Err, err)
		}
	}
	return nil
}

// reviewing reports whether step s showed the agent a review message: a
// submit that did not end the run.
func reviewing(s agent.Step) bool {
	for i, a := range s.Actions {
		if a.Name == submitTool && i < len(s.Observations) && !s.Observations[i].Submitted {
			return true
		}
	}
	return false
}

// provider returns the provider part of a model name, the label of the
// token metric.
func provider(model string) string {
	p, _, _ := strings.Cut(model, "/")
	return p
}

// setupFailure says, for people, how a setup command failed, and the end
// of its output.
func setupFailure(se *session.SetupError) (detail, output string) {
	how := fmt.Sprintf("failed with exit code %d", se.Result.ExitCode)
	if se.Result.TimedOut {
		how = "timed out"
	}
	return fmt.Sprintf("the setup command %s of %s %s, so the agent did not start.", report.Code(se.Command), config.RepoFile, how),
		report.Tail(se.Result.Output, setupTail)
}

// setupTail is how much, in bytes, of a failed setup command's output its
// final comment shows: the end, where the error usually is.
const setupTail = 4000
