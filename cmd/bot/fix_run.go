package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// finishTimeout bounds what a run does after the agent ended (the diff,
// writing the patch, --apply), with a context that survives cancellation.
const finishTimeout = time.Minute

// runEnded is the error of a run that ended without a submission: exit
// code 1, and one line saying how it ended.
type runEnded struct{ res agent.Result }

func (e runEnded) Error() string {
	msg := "bot fix: the run ended " + string(e.res.Status)
	if e.res.Reason != "" {
		msg += ": " + safeLine(e.res.Reason)
	}
	return msg
}

// run does the work: a copy of the repository, the sandbox, the setup
// commands, the agent, then the patch, the summary and --apply.
func (r *fixRun) run(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "agentfix-fix-")
	if err != nil {
		return fmt.Errorf("bot fix: %w", err)
	}
	defer r.cleanUp("temporary directory", func() error { return os.RemoveAll(tmp) })
	wt, err := workspace.NewWorkTreeFromRepo(ctx, r.repo.dir, workspace.WorkTreeOptions{Dir: filepath.Join(tmp, "job"), Logger: r.log})
	if err != nil {
		return fmt.Errorf("bot fix: copy the repository: %w", err)
	}
	defer r.cleanUp("copy of the repository", wt.Remove)
	sb, err := r.newSandbox(wt)
	if err != nil {
		return err
	}
	r.p.start(fixStart{RunID: r.id, Model: r.model.Name(), Sandbox: r.sandbox, Repo: r.repo.dir, Head: wt.Base(),
		Out: r.out, Setup: r.setup, Test: r.test, Notes: r.notes})
	if err := r.runSetup(ctx, sb); err != nil {
		return err
	}
	env, err := tools.New(tools.Options{Sandbox: sb, Repo: wt, Root: wt.Dir(), TextMode: textMode(r.model),
		TestCommand: r.test, AllowWorkflowChanges: r.repoCfg.AllowWorkflowChanges, Logger: r.log})
	if err != nil {
		return fmt.Errorf("bot fix: %w", err)
	}
	defer env.Close()
	res, runErr := r.runAgent(ctx, env)
	if res.RunID == "" {
		return runErr
	}
	if err := r.finish(ctx, wt, res); err != nil {
		return errors.Join(err, runErr)
	}
	if runErr != nil {
		return runErr
	}
	if res.Status != agent.Submitted {
		return runEnded{res}
	}
	return nil
}

func (r *fixRun) newSandbox(wt *workspace.WorkTree) (tools.Sandbox, error) {
	cache := wt.CacheDir()
	if r.cache != "" {
		if err := os.MkdirAll(r.cache, 0o755); err != nil {
			return nil, usageError{"bot fix: --cache: " + err.Error()}
		}
		cache = r.cache
	}
	return newSandbox(r.sandbox, workspace.Options{Workspace: wt.Dir(), Cache: cache, Image: r.image,
		AllowUnsandboxed: r.allowNone, Logger: r.log})
}

// runSetup runs the setup commands in order, with network; the first that
// fails ends the run.
func (r *fixRun) runSetup(ctx context.Context, sb tools.Sandbox) error {
	for _, cmd := range r.setup {
		r.p.setupStart(cmd)
		res, err := sb.Run(ctx, workspace.Command{Script: cmd, Network: true})
		if err != nil {
			return fmt.Errorf("bot fix: setup command %q: %w", cmd, err)
		}
		r.p.setupDone(res.ExitCode, res.TimedOut, res.Duration, res.Output)
		if res.TimedOut || res.ExitCode != 0 {
			where := "fix it in " + config.RepoFile + " or override it with --setup"
			if r.flags.setupSet {
				where = "fix the --setup command"
			}
			return fmt.Errorf("bot fix: setup command %q failed; %s", cmd, where)
		}
	}
	return nil
}

// runAgent runs the agent, writing the trajectory step by step into the
// output directory and printing each step as it ends.
func (r *fixRun) runAgent(ctx context.Context, env *tools.Env) (agent.Result, error) {
	if r.flags.out == "" {
		if err := ignoredDir(filepath.Dir(r.out)); err != nil {
			return agent.Result{}, fmt.Errorf("bot fix: output directory: %w", err)
		}
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: output directory: %w", err)
	}
	traj, err := os.OpenFile(filepath.Join(r.out, trajectoryFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: %w", err)
	}
	defer traj.Close()
	a, err := agent.New(r.model, env, agent.WithConfig(r.agentCfg), agent.WithTrajectory(traj), agent.WithRunID(r.id),
		agent.WithLogger(r.log), agent.WithHooks(agent.Hooks{
			OnStepDone: func(_ context.Context, s agent.Step) error { r.p.step(s); return nil },
		}))
	if err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: %w", err)
	}
	res, err := a.Run(ctx, r.task)
	if err != nil {
		err = fmt.Errorf("bot fix: %w", err)
	}
	if cerr := traj.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("bot fix: %w", cerr)
	}
	return res, err
}

// finish writes patch.diff — the submitted or autosubmitted patch, or else
// the diff the agent left — prints the summary and applies the patch with
// --apply when the agent submitted. It works on after a cancellation.
func (r *fixRun) finish(ctx context.Context, wt *workspace.WorkTree, res agent.Result) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	patch, submitted := res.Patch, res.Status == agent.Submitted || res.Status == agent.Autosubmitted
	var errs []error
	if !submitted {
		var err error
		if patch, err = wt.Diff(ctx); err != nil {
			errs = append(errs, fmt.Errorf("bot fix: the diff the agent left: %w", err))
		}
	}
	var touched []string
	if patch != "" {
		ch, err := wt.Changes(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("bot fix: %w", err))
		}
		touched = ch.Files
	}
	patchPath := filepath.Join(r.out, patchFile)
	if err := os.WriteFile(patchPath, []byte(patch), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("bot fix: %w", err))
	}
	sum := fixSummary{Result: res, Patch: patchPath, PatchFiles: len(touched), PatchSubmitted: submitted,
		Trajectory: filepath.Join(r.out, trajectoryFile)}
	if r.flags.apply {
		var err error
		sum.Applied, err = r.apply(ctx, res, patch, touched, patchPath)
		errs = append(errs, err)
	}
	r.p.summary(sum)
	return errors.Join(errs...)
}

// apply applies a submitted patch to the user's checkout and says what it
// did.
func (r *fixRun) apply(ctx context.Context, res agent.Result, patch string, touched []string, patchPath string) (string, error) {
	switch {
	case res.Status != agent.Submitted:
		return "not applied: the agent did not submit", nil
	case patch == "":
		return "nothing to apply: the patch is empty", nil
	}
	if err := r.repo.apply(ctx, patch, touched); err != nil {
		return "not applied: " + err.Error(), fmt.Errorf("bot fix: --apply: %w (the patch is in %s)", err, patchPath)
	}
	return "applied to the working tree of " + r.repo.dir + " (not committed)", nil
}

// cleanUp runs remove and logs its failure.
func (r *fixRun) cleanUp(what string, remove func() error) {
	if err := remove(); err != nil {
		r.log.Warn("bot fix: remove the "+what, logErr(err))
	}
}

// ignoredDir creates dir, the default parent of the output directories,
// with a .gitignore that ignores everything in it, so runs started inside a
// checkout leave no untracked files there.
func ignoredDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# Runs of bot fix; nothing here belongs in the repository.\n*\n")
	return errors.Join(err, f.Close())
}

// textMode reports whether the model works in text mode.
func textMode(m agent.Model) bool {
	t, ok := m.(interface{ TextMode() bool })
	return ok && t.TextMode()
}
