package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/devcontainer"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// publishTimeout bounds the whole publication of a result (commit, push,
// pull request, reports); it goes on when the job's context is cancelled.
const publishTimeout = 15 * time.Minute

// stage is what a fix (fix.go) and a revise round (revise.go) do
// differently in the steps they share: where the change starts, what the
// agent is told, how a pushed change reaches its pull request, and where
// the final word goes.
type stage interface {
	pipeline
	// base returns the commit the change starts from.
	base(f fetched) (string, error)
	// start prepares the work on base; agentRuns is set when the agent is
	// about to run (not when a retry publishes a saved result).
	start(ctx context.Context, f fetched, base string, agentRuns bool) error
	task() agent.Task
	// forcePush reports whether the job may force its branch.
	forcePush() bool
	// deliver offers a pushed commit in the job's pull request and says
	// how.
	deliver(ctx context.Context, f fetched, commit string) (delivered, error)
	// final posts the job's final word: the final comment on the issue,
	// or the round's reply on its pull request.
	final(ctx context.Context, d report.Final, o outcome.Outcome) error
	// ended is called once the job reached a final state, before its
	// final word.
	ended(ctx context.Context, o outcome.Outcome, pushed string, res agent.Result)
}

// preparer is a stage that prepares the working copy before the agent
// runs in it (a conflict round merges the base branch): resumed is set
// when a retry applies the saved result instead.
type preparer interface {
	prepare(ctx context.Context, wt *workspace.WorkTree, resumed bool) error
}

// vetter is a stage that checks the agent's result before it is
// committed: a non-empty detail ends the job without a push, saying why.
type vetter interface {
	vet(res agent.Result) (detail string)
}

// delivered is how a pushed commit reached a pull request.
type delivered struct {
	outcome outcome.Outcome
	pr      int
	url     string
	// draft and detail are what the status comment and final word say of
	// a change that is a draft or incomplete.
	draft  bool
	detail string
}

// work fetches, makes the working copy, runs the agent (unless an earlier
// attempt saved its result) and publishes. A cancellation before the agent
// ran (a stop while cloning, a shutdown) is reported like one during it.
func (w *Worker) work(ctx context.Context, s stage) (outcome.Outcome, error) {
	o, err := w.workOn(ctx, s)
	if err != nil && o == outcome.Error && ctx.Err() != nil {
		return w.stopped(ctx, s, agent.Result{Status: agent.Cancelled, Reason: context.Cause(ctx).Error()})
	}
	return o, err
}

func (w *Worker) workOn(ctx context.Context, s stage) (outcome.Outcome, error) {
	j := s.job()
	if j.cfg.Model == "" { // the job did not load its repository's settings
		j.cfg = w.settings.operator()
	}
	f, err := w.checkout.fetch(ctx, j)
	if err != nil {
		return outcome.Error, err
	}
	if j.rec, err = w.openRun(ctx, j); err != nil {
		return outcome.Error, err
	}
	defer j.rec.Close()
	j.show(ctx, func(d *report.Status) { d.RunID = j.rec.ID() })
	base := j.saved.Base
	if !j.resumed {
		if base, err = s.base(f); err != nil {
			return outcome.Error, err
		}
	}
	if err := s.start(ctx, f, base, !j.resumed); err != nil {
		return outcome.Error, err
	}
	wt, remove, err := w.checkout.workTree(ctx, j, base)
	if err != nil {
		return outcome.Error, err
	}
	defer remove()
	if p, ok := s.(preparer); ok {
		if err := p.prepare(ctx, wt, j.resumed); err != nil {
			return outcome.Error, err
		}
	}
	if j.resumed {
		if err := workspace.ApplyPatch(ctx, wt, j.saved.Result.Patch); err != nil {
			return outcome.Error, err
		}
		return w.publishResult(ctx, s, wt, f)
	}
	task := s.task()
	from := w.readDefaultBranch(ctx, j, wt, f)
	task.RepoInstructions = from.instructions.Root
	res, err := w.agent.run(ctx, j, wt, task, from)
	if ctx.Err() != nil || (err == nil && res.Agent.Status == agent.Cancelled) {
		if err != nil {
			res.Agent = agent.Result{RunID: j.rec.ID(), Status: agent.Cancelled, Reason: err.Error()}
		}
		return w.stopped(ctx, s, res.Agent)
	}
	var se *session.SetupError
	if errors.As(err, &se) {
		return w.setupFailed(ctx, s, se)
	}
	var ee *session.EnvironmentError
	if errors.As(err, &ee) {
		return w.imageFailed(ctx, s, ee)
	}
	if err != nil {
		j.log.Error("the agent could not start", logattr.Err, err)
		failed := agent.Result{RunID: j.rec.ID(), Status: agent.Error, Reason: err.Error()}
		j.saved = store.Saved{RunID: j.rec.ID(), Result: failed}
		return w.end(ctx, s, outcome.Failed, "the agent could not start.", "")
	}
	j.saved = store.Saved{RunID: j.rec.ID(), Base: wt.Base(), Result: res.Agent, Model: j.cfg.Model, Review: res.Review, Environment: res.Environment}
	if err := w.store.SaveResult(context.WithoutCancel(ctx), j.key, j.saved); err != nil {
		j.log.Error("save the agent's result; a retry would run the agent again", logattr.Err, err)
	}
	return w.publishResult(ctx, s, wt, f)
}

// defaultBranchFiles are what a run reads of the repository's default branch:
// its instructions files for agents and its dev container configuration.
type defaultBranchFiles struct {
	head            string // the default branch's head
	instructions    session.Instructions
	devcontainer    *devcontainer.Config
	devcontainerErr error
}

// readDefaultBranch reads the instructions files and the dev container
// configuration from the default branch (never from a branch the agent
// wrote) and names the instructions in the status comment; a failure to
// read the instructions is logged and the agent goes without.
func (w *Worker) readDefaultBranch(ctx context.Context, j *job, wt *workspace.WorkTree, f fetched) defaultBranchFiles {
	head := f.branches[f.info.DefaultBranch]
	if head == "" {
		return defaultBranchFiles{}
	}
	out := defaultBranchFiles{head: head}
	out.devcontainer, out.devcontainerErr = session.ReadDevcontainer(ctx, wt, head)
	in, err := session.ReadInstructions(ctx, wt, head)
	if err != nil {
		j.log.Warn("read the repository's instructions files", logattr.Err, err)
		return out
	}
	out.instructions = in
	if names := in.Names(); len(names) > 0 {
		j.show(ctx, func(d *report.Status) {
			d.Notes = append(d.Notes, "The agent follows the repository's instructions in "+strings.Join(names, ", ")+".")
		})
	}
	return out
}

// openRun starts the run record, or reopens the one of the attempt whose
// result was saved.
func (w *Worker) openRun(ctx context.Context, j *job) (*runs.Run, error) {
	m := runs.Meta{
		Kind: j.kind, TaskID: j.taskID, DeliveryID: j.delivery, Repo: j.repo.String(),
		Number: j.thread, Requester: j.requester.Login, Model: j.cfg.Model,
	}
	if j.resumed {
		return w.opts.Runs.Open(ctx, j.saved.RunID, m)
	}
	prev, err := w.store.JobRun(ctx, j.key)
	if err != nil {
		return nil, err
	}
	rec, err := w.opts.Runs.Create(ctx, m)
	if err != nil {
		return nil, err
	}
	if err := w.store.SetJobRun(ctx, j.key, rec.ID()); err != nil {
		rec.Close()
		return nil, err
	}
	if prev != "" {
		// An earlier attempt crashed while its agent ran: its run ends
		// here, and its working copy goes.
		w.endRun(ctx, j.log, prev, outcome.Interrupted, "the worker stopped during this attempt; the job was tried again")
	}
	return rec, nil
}

// endRun marks run id, left "running" by an attempt that never ended it,
// as ended with o and reason, and removes its working copy. Failures are
// logged.
func (w *Worker) endRun(ctx context.Context, log *slog.Logger, id string, o outcome.Outcome, reason string) {
	if err := workspace.RemoveJobDir(filepath.Join(w.checkout.jobsDir, id)); err != nil {
		log.Warn("remove the working copy of an ended run", logattr.RunID, id, logattr.Err, err)
	}
	if r, err := w.opts.Runs.Get(ctx, id); errors.Is(err, runs.ErrNotFound) || err == nil && r.Meta.Status != runs.StatusRunning {
		return
	}
	rec, err := w.opts.Runs.Open(ctx, id, runs.Meta{})
	if err == nil {
		defer rec.Close()
		err = rec.Update(func(m *runs.Meta) {
			m.Status, m.ExitReason, m.Ended = string(o), reason, w.now()
			m.Duration = m.Ended.Sub(m.Started)
		})
		if err == nil {
			err = rec.Save(ctx)
		}
	}
	if err != nil {
		log.Warn("end a run left running", logattr.RunID, id, logattr.Err, err)
	}
}

// publishResult reports the agent's result by its exit status: a change is
// committed, pushed and offered in the job's pull request (ready when
// submitted, a draft marked incomplete when autosubmitted); anything else
// ends with a final word saying why there is no pull request.
func (w *Worker) publishResult(ctx context.Context, s stage, wt *workspace.WorkTree, f fetched) (outcome.Outcome, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	j := s.job()
	res := j.saved.Result
	// A stop or a closed issue that came while the agent finished wins.
	if m, ok, err := w.store.CancelFor(ctx, j.taskID, j.delivery); err != nil {
		return outcome.Error, err
	} else if ok {
		return w.cancelled(ctx, s, m, res)
	}
	switch submitted := res.Status == agent.Submitted || res.Status == agent.Autosubmitted; {
	case submitted && res.Patch == "":
		return w.end(ctx, s, outcome.NoChanges, "the agent finished without changing any file.", "")
	case !submitted:
		return w.end(ctx, s, outcome.Failed, report.NoPRDetail(res), "")
	}
	changes, err := wt.Changes(ctx)
	if err != nil {
		return outcome.Error, err
	}
	if links := tools.RefusedSymlinks(changes.Symlinks); len(links) > 0 {
		detail := fmt.Sprintf("the change holds symbolic links the bot never pushes: %s.", strings.Join(links, "; "))
		return w.end(ctx, s, outcome.SymlinksRefused, detail, res.Patch)
	}
	if len(changes.Workflows) > 0 && !j.cfg.AllowWorkflowChanges {
		detail := fmt.Sprintf("the change touches %s, and the bot may not change workflows in this repository.",
			strings.Join(changes.Workflows, ", "))
		return w.end(ctx, s, outcome.WorkflowsRefused, detail, res.Patch)
	}
	if v, ok := s.(vetter); ok {
		if detail := v.vet(res); detail != "" {
			return w.end(ctx, s, outcome.Failed, detail, res.Patch)
		}
	}
	commit, err := w.publish.commit(ctx, j, wt)
	if errors.Is(err, workspace.ErrNoChanges) {
		return w.end(ctx, s, outcome.NoChanges, "the agent's change is empty.", "")
	}
	if err != nil {
		return outcome.Error, err
	}
	j.show(ctx, func(d *report.Status) { d.Phase = report.PhasePushing })
	if err := w.publish.push(ctx, j, wt, f.info, commit, s.forcePush()); errors.Is(err, workspace.ErrNonFastForward) {
		detail := fmt.Sprintf("someone else pushed to `%s` while the agent worked; ask again to start from the new state.", j.branch)
		return w.end(ctx, s, outcome.Failed, detail, res.Patch)
	} else if err != nil {
		return outcome.Error, err
	}
	w.checks.start(ctx, j, commit, "Publishing the agent's change", res)
	d, err := s.deliver(ctx, f, commit)
	if err != nil {
		return outcome.Error, err
	}
	w.publish.labelAndRequestReview(ctx, j, d.pr)
	s.ended(ctx, d.outcome, commit, res)
	j.show(ctx, func(st *report.Status) {
		st.Phase, st.Outcome, st.PRNumber, st.PRURL, st.Draft, st.Detail = report.PhaseDone, d.outcome, d.pr, d.url, d.draft, d.detail
	})
	if err := s.final(ctx, report.Final{Outcome: d.outcome, PRNumber: d.pr, PRURL: d.url, Draft: d.draft, Detail: d.detail}, d.outcome); err != nil {
		return outcome.Error, err
	}
	w.record(ctx, j, res, func(m *runs.Meta) { m.Status, m.PR, m.PRURL = string(d.outcome), d.pr, d.url })
	w.done(ctx, j, store.Published{Outcome: d.outcome, PR: d.pr, PRURL: d.url})
	return d.outcome, nil
}

// end ends a job without a pull request: the status comment and the final
// word say why (with the partial change, if there is one).
func (w *Worker) end(ctx context.Context, s stage, o outcome.Outcome, detail, patch string) (outcome.Outcome, error) {
	j := s.job()
	res := j.saved.Result
	phase := report.PhaseFailed
	if o == outcome.NoChanges {
		phase = report.PhaseDone
	}
	j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = phase, o, detail })
	s.ended(ctx, o, "", res)
	if err := s.final(ctx, report.Final{Outcome: o, Detail: detail, Patch: patch}, o); err != nil {
		return outcome.Error, err
	}
	w.record(ctx, j, res, func(m *runs.Meta) { m.Status = string(o) })
	w.done(ctx, j, store.Published{Outcome: o})
	return o, nil
}

// setupFailed ends a job whose setup command failed: the status comment
// says so, and the final word shows the command and the end of its output.
func (w *Worker) setupFailed(ctx context.Context, s stage, se *session.SetupError) (outcome.Outcome, error) {
	j := s.job()
	res := agent.Result{RunID: j.runID(), Status: agent.Error, Reason: se.Error()}
	j.saved = store.Saved{RunID: j.runID(), Result: res, Model: j.cfg.Model}
	detail, output := setupFailure(se)
	j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.SetupFailed, detail })
	s.ended(ctx, outcome.SetupFailed, "", res)
	if err := s.final(ctx, report.Final{Outcome: outcome.SetupFailed, Detail: detail, SetupOutput: output}, outcome.SetupFailed); err != nil {
		return outcome.Error, err
	}
	w.record(ctx, j, res, func(m *runs.Meta) { m.Status = string(outcome.SetupFailed) })
	w.done(ctx, j, store.Published{Outcome: outcome.SetupFailed})
	return outcome.SetupFailed, nil
}

// imageFailed ends a job whose environment's image cannot be used (not
// found, refused, a bad digest, unsafe): before any model call, with the
// image and the registry's answer in the final comment.
func (w *Worker) imageFailed(ctx context.Context, s stage, ee *session.EnvironmentError) (outcome.Outcome, error) {
	j := s.job()
	res := agent.Result{RunID: j.runID(), Status: agent.Error, Reason: ee.Error()}
	j.saved = store.Saved{RunID: j.runID(), Result: res, Model: j.cfg.Model}
	detail := report.ImageFailure(ee.Choice.Image, ee.Where(), ee.Err.Error())
	j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.ImageFailed, detail })
	s.ended(ctx, outcome.ImageFailed, "", res)
	if err := s.final(ctx, report.Final{Outcome: outcome.ImageFailed, Detail: detail}, outcome.ImageFailed); err != nil {
		return outcome.Error, err
	}
	w.record(ctx, j, res, func(m *runs.Meta) { m.Status = string(outcome.ImageFailed) })
	w.done(ctx, j, store.Published{Outcome: outcome.ImageFailed})
	return outcome.ImageFailed, nil
}

// stopped ends a job whose agent run was cancelled: with its cancel marker
// (stop, closed issue, removed installation) it reports and ends for good;
// without one the worker is shutting down, so it says so and returns an
// error for asynq to retry the task.
func (w *Worker) stopped(ctx context.Context, s stage, res agent.Result) (outcome.Outcome, error) {
	j := s.job()
	rctx, cancel := w.reportCtx(ctx)
	defer cancel()
	m, marked, err := w.store.CancelFor(rctx, j.taskID, j.delivery)
	if err != nil {
		j.log.Warn("read cancel marker", logattr.Err, err)
	}
	if !marked {
		w.record(rctx, j, res, func(mt *runs.Meta) { mt.Status = string(outcome.Interrupted) })
		j.show(rctx, func(d *report.Status) { d.Phase = report.PhaseInterrupted })
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errors.New(res.Reason)
		}
		return outcome.Interrupted, fmt.Errorf("job interrupted: %w", cause)
	}
	return w.cancelled(rctx, s, m, res)
}

// cancelled reports a job its marker stopped.
func (w *Worker) cancelled(ctx context.Context, s stage, m store.CancelMarker, res agent.Result) (outcome.Outcome, error) {
	j := s.job()
	detail := report.CancelDetail(m.Reason)
	j.show(ctx, func(d *report.Status) {
		d.Phase, d.StoppedBy, d.Detail, d.Outcome = report.PhaseCancelled, m.By, detail, outcome.Cancelled
	})
	s.ended(ctx, outcome.Cancelled, "", res)
	if m.Reason == store.ReasonStop {
		if err := s.final(ctx, report.Final{Outcome: outcome.Cancelled, StoppedBy: m.By}, outcome.Cancelled); err != nil {
			j.log.Warn("post final comment", logattr.Err, err)
		}
	}
	w.record(ctx, j, res, func(mt *runs.Meta) { mt.Status = string(outcome.Cancelled) })
	if err := w.store.SaveResult(ctx, j.key, store.Saved{RunID: j.runID(), Result: res, Done: &store.Published{Outcome: outcome.Cancelled}}); err != nil {
		j.log.Warn("mark job reported", logattr.Err, err)
	}
	return outcome.Cancelled, fmt.Errorf("job stopped: %s", detail)
}

// giveUp reports a job whose last attempt failed, so its status comment
// and check runs do not stay in progress forever. The error itself is in
// the logs, not on GitHub.
func (w *Worker) giveUp(ctx context.Context, s stage, cause error, attempts int) outcome.Outcome {
	j := s.job()
	ctx, cancel := w.reportCtx(ctx)
	defer cancel()
	detail := fmt.Sprintf("an internal error stopped the job after %d attempts; the worker's logs have the details.", attempts)
	res := j.saved.Result
	var patch string
	if j.resumed && res.Patch != "" {
		// The agent's change was saved: it is not lost to the requester.
		detail = fmt.Sprintf("an internal error stopped the job after %d attempts, after the agent finished; its change is below, and the worker's logs have the details.", attempts)
		patch = res.Patch
		if j.rec == nil {
			rec, err := w.openRun(ctx, j)
			if err != nil {
				j.log.Warn("reopen the run record", logattr.Err, err)
			}
			j.rec = rec
			if rec != nil {
				defer rec.Close()
			}
		}
	}
	j.log.Error(j.kind+" job failed for good", logattr.Err, cause)
	w.record(ctx, j, res, func(m *runs.Meta) { m.Status = string(outcome.Failed) })
	if j.status == nil {
		return outcome.Failed
	}
	j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.Failed, detail })
	s.ended(ctx, outcome.Failed, "", res)
	if err := s.final(ctx, report.Final{Outcome: outcome.Failed, Detail: detail, Patch: patch}, outcome.Failed); err != nil {
		j.log.Warn("post final comment", logattr.Err, err)
	}
	return outcome.Failed
}

// record writes the agent's result into the run record, if the job has
// one yet, and mirrors it.
func (w *Worker) record(ctx context.Context, j *job, res agent.Result, edit func(*runs.Meta)) {
	run := j.rec
	if run == nil {
		return
	}
	err := run.Update(func(m *runs.Meta) {
		m.ExitStatus, m.ExitReason, m.Steps, m.CostUSD = string(res.Status), res.Reason, res.Steps, res.CostUSD
		m.Tokens = runs.Tokens{Input: res.Usage.InputTokens, Output: res.Usage.OutputTokens,
			CacheRead: res.Usage.CacheReadTokens, CacheWrite: res.Usage.CacheWriteTokens}
		m.Ended = w.now()
		m.Duration = m.Ended.Sub(m.Started)
		edit(m)
	})
	if err == nil && res.Patch != "" {
		err = run.SetPatch(res.Patch)
	}
	if err == nil {
		err = run.Save(ctx)
	}
	if err != nil {
		j.log.Warn("write run record", logattr.Err, err)
	}
}

// done marks the job reported, so a retry of its task does nothing, and
// records its duration and cost.
func (w *Worker) done(ctx context.Context, j *job, p store.Published) {
	j.saved.Done = &p
	if err := w.store.SaveResult(ctx, j.key, j.saved); err != nil {
		j.log.Warn("mark job reported", logattr.Err, err)
	}
	w.metrics.agentJob(w.now().Sub(j.started), j.saved.Result.CostUSD)
}

// finalData fills in what every final word shows of the job and its run.
func (w *Worker) finalData(j *job, d report.Final) report.Final {
	res := j.saved.Result
	d.Requester, d.Command, d.RunID = j.requester.Login, w.opts.Config.Command, j.runID()
	d.Summary, d.Steps, d.CostUSD, d.Duration, d.Model = res.Summary, res.Steps, res.CostUSD, res.Duration, j.cfg.Model
	return d
}

// resume ends a task whose job a stop already ended, or that an earlier
// attempt fully reported (a non-empty outcome), and otherwise loads what an
// earlier attempt saved.
func (w *Worker) resume(ctx context.Context, j *job) (outcome.Outcome, error) {
	// A stopped job's task comes back once more (asynq retries what a
	// cancelled context ended); it ends here.
	if m, ok, err := w.store.CancelFor(ctx, j.taskID, j.delivery); err != nil {
		return outcome.Error, err
	} else if ok {
		return outcome.Cancelled, fmt.Errorf("job was stopped (%s)", m.Reason)
	}
	saved, ok, err := w.store.LoadResult(ctx, j.key)
	if err != nil {
		return outcome.Error, err
	}
	if ok && saved.Done != nil {
		return saved.Done.Outcome, nil // reported by an earlier attempt
	}
	j.saved, j.resumed = saved, ok
	return "", nil
}

// settle loads the repository's settings into the job and checks its
// trigger against them. A non-empty outcome ends the job here: an invalid
// configuration (told in the status comment), or a requester or budget
// the settings refuse (told in a reply). A job whose agent already ran (an
// earlier attempt saved its result) is not checked again: it publishes.
func (w *Worker) settle(ctx context.Context, j *job) (outcome.Outcome, error) {
	s, err := w.settings.load(ctx, j.install, j.repo)
	if err == nil {
		j.cfg = s
		if j.resumed {
			return "", nil
		}
		var r *refusal
		r, err = w.gate.admit(ctx, admission{gh: j.gh, installation: j.install, repo: j.repo, number: j.thread,
			isPR: j.onPR, requester: j.requester.Login, deliveryID: j.delivery, job: j.key}, s)
		if err == nil && r != nil {
			w.statuses.endKnown(ctx, j.gh, j.repo, j.key, j.requester.Login, j.log, func(d *report.Status) {
				d.Phase, d.Outcome, d.Detail = report.PhaseCancelled, r.outcome, r.detail
			})
			return r.outcome, fmt.Errorf("trigger refused: %s", r.detail)
		}
	}
	var bad *repoConfigError
	switch {
	case err == nil:
		return "", nil
	case !errors.As(err, &bad):
		return outcome.Error, err
	}
	if err := w.statuses.open(ctx, j); err != nil {
		return outcome.Error, err
	}
	j.show(ctx, func(d *report.Status) {
		d.Phase, d.Outcome, d.Problems = report.PhaseFailed, outcome.InvalidConfig, bad.Problems
		d.Detail = fmt.Sprintf("the repository's configuration cannot be used. Fix %s on the default branch and ask again.", config.RepoFile)
	})
	return outcome.InvalidConfig, bad
}
