package localfix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// finishTimeout bounds what a run does after the agent ended (the diff,
// writing the patch, --apply), with a context that survives cancellation.
const finishTimeout = time.Minute

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
	r.p.start(fixStart{RunID: r.id, Model: r.model.Name(), Sandbox: r.sandboxKind, Repo: r.repo.dir, RepoName: r.task.Repo, Head: wt.Base(),
		Out: r.out, Setup: r.setup, Test: r.test, Notes: r.notes})
	res, runErr := r.runSession(ctx, wt)
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
		return &RunEnded{res}
	}
	return nil
}

// sandbox builds the run's sandbox; the cache is --cache or the work
// tree's own.
func (r *fixRun) sandbox(o workspace.Options) (tools.Sandbox, error) {
	if r.cache != "" {
		if err := os.MkdirAll(r.cache, 0o755); err != nil {
			return nil, UsageError{"bot fix: --cache: " + err.Error()}
		}
		o.Cache = r.cache
	}
	if o.DockerImage == "" {
		o.DockerImage = r.image
	}
	o.AllowUnsandboxed = r.allowNone
	return r.newSandbox(r.sandboxKind, o)
}

// probeSandbox checks that the run's sandbox can run commands here, before
// any model call.
func (r *fixRun) probeSandbox(ctx context.Context) error {
	if r.flags.ProbeSandbox == nil {
		return nil
	}
	from := "AGENTFIX_SANDBOX_IMAGE"
	if r.flags.Image != "" {
		from = "--image"
	}
	return r.flags.ProbeSandbox(ctx, r.sandboxKind, r.image, from)
}

// runSession runs setup and the agent (package session), writing the
// trajectory step by step into the output directory and printing each
// setup command and step as it ends. A failed setup command ends the run
// with a message saying where to fix it.
func (r *fixRun) runSession(ctx context.Context, wt *workspace.WorkTree) (agent.Result, error) {
	if r.flags.Out == "" {
		if err := ignoredDir(filepath.Dir(r.out)); err != nil {
			return agent.Result{}, fmt.Errorf("bot fix: output directory: %w", err)
		}
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: output directory: %w", err)
	}
	traj, err := os.OpenFile(filepath.Join(r.out, TrajectoryFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: %w", err)
	}
	defer traj.Close()
	in, err := session.ReadInstructions(ctx, wt, wt.Base())
	if err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: the repository's instructions files: %w", err)
	}
	if names := in.Names(); len(names) > 0 {
		r.p.note("the agent follows the instructions in " + strings.Join(names, ", "))
	}
	task := r.task
	task.RepoInstructions = in.Root
	dc, dcErr := session.ReadDevcontainer(ctx, wt, wt.Base())
	res, err := session.Run(ctx, session.Options{
		WorkTree: wt, Sandbox: r.sandbox, Model: r.model, Task: task, RunID: r.id, Trajectory: traj, Logger: r.log,
		ScratchDir: filepath.Dir(filepath.Dir(wt.Dir())),
		Images:     r.flags.Images, ImageOverride: r.flags.Image, OperatorImage: r.flags.Config.SandboxImage,
		Settings: session.Settings{Setup: r.setup, Test: r.test, Limits: r.agentCfg, AllowWorkflowChanges: r.repoCfg.AllowWorkflowChanges,
			NestedInstructions: in.Nested, Image: r.repoCfg.Image, Devcontainer: dc, DevcontainerErr: dcErr},
		Hooks: session.Hooks{
			OnEnvironment: func(_ context.Context, env session.Environment) {
				r.p.note("environment: " + env.Description)
				for _, n := range env.Notes {
					r.p.note(n)
				}
			},
			OnSetup: func(_ context.Context, c string) { r.p.setupStart(c) },
			OnSetupDone: func(_ context.Context, _ string, res workspace.Result) {
				r.p.setupDone(res.ExitCode, res.TimedOut, res.Duration, res.Output)
			},
			Agent: []agent.Hooks{{OnStepDone: func(_ context.Context, s agent.Step) error { r.p.step(s); return nil }}},
		},
	})
	var se *session.SetupError
	if errors.As(err, &se) {
		where := "fix it in " + config.RepoFile + " or override it with --setup"
		if r.flags.Setup != nil {
			where = "fix the --setup command"
		}
		return agent.Result{}, fmt.Errorf("bot fix: setup command %q failed; %s", se.Command, where)
	}
	if err != nil {
		return agent.Result{}, fmt.Errorf("bot fix: %w", err)
	}
	if cerr := traj.Close(); cerr != nil {
		return res.Agent, fmt.Errorf("bot fix: %w", cerr)
	}
	return res.Agent, nil
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
	patchPath := filepath.Join(r.out, PatchFile)
	if err := os.WriteFile(patchPath, []byte(patch), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("bot fix: %w", err))
	}
	sum := fixSummary{Result: res, Patch: patchPath, PatchFiles: len(touched), PatchSubmitted: submitted,
		Trajectory: filepath.Join(r.out, TrajectoryFile)}
	applied := false
	if r.flags.Apply {
		var err error
		applied, sum.Applied, err = r.apply(ctx, res, patch, touched, patchPath)
		errs = append(errs, err)
	}
	if patch != "" && !applied {
		sum.ApplyCommand = r.applyCommand(patchPath)
		if r.repo.bare {
			sum.BareRepo = r.repo.dir
		}
	}
	r.p.summary(sum)
	return errors.Join(errs...)
}

// apply applies a submitted patch to the user's checkout and says whether
// it did and what it did.
func (r *fixRun) apply(ctx context.Context, res agent.Result, patch string, touched []string, patchPath string) (bool, string, error) {
	switch {
	case res.Status != agent.Submitted:
		return false, "not applied: the agent did not submit", nil
	case patch == "":
		return false, "nothing to apply: the patch is empty", nil
	}
	if err := r.repo.apply(ctx, patch, touched); err != nil {
		return false, "not applied: " + err.Error(), fmt.Errorf("bot fix: --apply: %w (the patch is in %s)", err, patchPath)
	}
	return true, "applied to the working tree of " + r.repo.dir + " (not committed)", nil
}

// applyCommand is the shell command that applies the patch at patchPath to
// the user's working tree (for a bare repository, to any checkout of it).
func (r *fixRun) applyCommand(patchPath string) string {
	if r.repo.bare {
		return "git apply " + shellQuote(patchPath)
	}
	return "git -C " + shellQuote(r.repo.dir) + " apply " + shellQuote(patchPath)
}

// cleanUp runs remove and logs its failure.
func (r *fixRun) cleanUp(what string, remove func() error) {
	if err := remove(); err != nil {
		r.log.Warn("bot fix: remove the "+what, logattr.Err, err)
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
