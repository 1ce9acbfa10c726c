package localfix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// fixRun is one run of bot fix, with everything checked that can be
// checked before any work starts.
type fixRun struct {
	id    string
	flags Options
	repo  *userRepo
	// repoCfg is the repository's configuration file at HEAD.
	repoCfg config.RepoSettings
	task    agent.Task
	model   agent.Model
	// agentCfg holds the limits: the operator's, lowered by the
	// repository's, or the recorded ones of a replay.
	agentCfg    agent.Config
	setup       []string
	test        string
	sandboxKind string
	// image is the docker sandbox's default: --image, else
	// AGENTFIX_SANDBOX_IMAGE; the run's environment may name another.
	image     string
	allowNone bool
	out       string
	cache     string // empty: a fresh cache for this run
	// newSandbox builds the run's sandbox of kind sandbox.
	newSandbox func(kind string, o workspace.Options) (tools.Sandbox, error)
	// notes are shown when the run starts (limits the repository could not
	// raise, uncommitted changes the run does not see).
	notes []string
	log   *slog.Logger
	p     *progress
}

// prepare resolves the options, the configuration and the repository's
// configuration file into a fixRun. Its errors are usage or configuration
// errors (exit code 2).
func prepare(ctx context.Context, o Options) (*fixRun, error) {
	cfg, f := o.Config, o
	r := &fixRun{flags: o, log: o.Logger, sandboxKind: cfg.Sandbox, image: cfg.SandboxImage, allowNone: cfg.AllowUnsandboxed,
		newSandbox: o.NewSandbox}
	if f.Sandbox != "" {
		r.sandboxKind = f.Sandbox
	}
	if f.Image != "" {
		r.image = f.Image
	}
	if err := o.CheckSandbox(r.sandboxKind, r.allowNone); err != nil {
		return nil, err
	}
	switch {
	case r.sandboxKind == "docker" && r.image == "":
		return nil, UsageError{"bot fix: the docker sandbox needs --image IMAGE or AGENTFIX_SANDBOX_IMAGE (an image with the repository's toolchain)"}
	case r.sandboxKind == "none" && f.Image != "":
		return nil, UsageError{"bot fix: --image: the none sandbox runs on this machine itself, in no image; use bwrap or docker"}
	}
	repo, err := inspectRepo(ctx, absTo(o.WorkDir, f.Repo), o.Environ)
	if err != nil {
		return nil, UsageError{"bot fix: --repo: " + err.Error()}
	}
	if f.Apply {
		if err := repo.canApply(); err != nil {
			return nil, UsageError{"bot fix: --apply: " + err.Error()}
		}
	}
	r.repo = repo
	if err := r.readRepoConfig(ctx); err != nil {
		return nil, err
	}
	if err := r.chooseTask(ctx, o.WorkDir); err != nil {
		return nil, err
	}
	if err := r.chooseModel(o); err != nil {
		return nil, err
	}
	r.id = runs.NewID(time.Now())
	r.out = filepath.Join(o.WorkDir, "agentfix-runs", r.id)
	if f.Out != "" {
		r.out = absTo(o.WorkDir, f.Out)
	}
	if err := checkOutDir(r.out); err != nil {
		return nil, UsageError{"bot fix: --out: " + err.Error()}
	}
	if f.Cache != "" {
		r.cache = absTo(o.WorkDir, f.Cache)
	}
	if err := r.probeSandbox(ctx); err != nil {
		return nil, err
	}
	if o.CheckModel != nil && f.Replay == "" {
		if err := o.CheckModel(ctx, r.model); err != nil {
			return nil, err
		}
	}
	if n := len(repo.dirty); n > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d uncommitted %s in the checkout %s not part of the run: the agent works on a copy of HEAD",
			n, plural(n, "change", "changes"), plural(n, "is", "are")))
	}
	r.p = &progress{w: o.Stdout, maxSteps: r.agentCfg.MaxSteps}
	if f.Replay != "" {
		r.p.replay = absTo(o.WorkDir, f.Replay)
	}
	return r, nil
}

// readRepoConfig reads the repository's configuration file from the commit
// at HEAD and takes the setup and test commands from it unless the flags
// give them.
func (r *fixRun) readRepoConfig(ctx context.Context) error {
	r.repoCfg = config.DefaultRepo()
	data, found, err := r.repo.fileAtHead(ctx, config.RepoFile)
	if err != nil {
		return ConfigError{Err: fmt.Errorf("%s: %w", config.RepoFile, err)}
	}
	if found {
		if r.repoCfg, err = config.ParseRepo(data); err != nil {
			var re *config.RepoError
			if errors.As(err, &re) {
				err = errors.New(strings.ReplaceAll(re.Error(), "\n", "; "))
			}
			return ConfigError{Err: fmt.Errorf("invalid configuration at HEAD %s: %w", shortID(r.repo.head), err)}
		}
	}
	if r.repoCfg.Extends != "" {
		r.notes = append(r.notes, fmt.Sprintf("%s extends %q; bot fix does not follow _extends (it reads no other repository)", config.RepoFile, r.repoCfg.Extends))
	}
	r.setup, r.test = r.repoCfg.Setup, r.repoCfg.Test
	if r.flags.Setup != nil {
		r.setup = r.flags.Setup
	}
	if r.flags.Test != nil {
		r.test = *r.flags.Test
	}
	r.test = strings.TrimSpace(r.test)
	return nil
}

// chooseTask reads the issue file; without one (a replay) the recorded task
// is used. The repository's name comes from --repo-name or the origin
// remote, its instructions become the task's notes.
func (r *fixRun) chooseTask(ctx context.Context, workDir string) error {
	if r.flags.IssueFile == "" {
		return nil
	}
	title, body, err := readIssueFile(absTo(workDir, r.flags.IssueFile))
	if err != nil {
		return UsageError{"bot fix: --issue-file: " + err.Error()}
	}
	name, err := r.repo.repoName(ctx, r.flags.RepoName)
	if err != nil {
		return UsageError{"bot fix: " + err.Error()}
	}
	r.task = agent.Task{Repo: name, Title: title, Body: body, Notes: r.repoCfg.Instructions}
	return nil
}

// chooseModel sets the model and the limits: a replay of --replay's
// trajectory with its recorded limits (and task, when no issue file is
// given), or the model of --model, the repository's configuration or
// AGENTFIX_MODEL, in that order, with the operator's limits lowered by the
// repository's.
func (r *fixRun) chooseModel(o Options) error {
	cfg := o.Config
	if r.flags.Replay != "" {
		traj, err := ReadTrajectoryFile(absTo(o.WorkDir, r.flags.Replay))
		if err != nil {
			return UsageError{"bot fix: --replay: " + err.Error()}
		}
		model, err := llm.NewReplay(traj)
		if err != nil {
			return UsageError{"bot fix: --replay: " + err.Error()}
		}
		r.model, r.agentCfg = model, traj.Header.Config
		if r.flags.IssueFile == "" {
			r.task = traj.Header.Task
		}
		return nil
	}
	lim, capped := r.repoCfg.Limits(cfg.JobLimits())
	r.agentCfg = agent.Config{MaxSteps: lim.MaxSteps, MaxCostUSD: lim.MaxCostUSD, MaxDuration: lim.MaxDuration}
	for _, c := range capped {
		r.notes = append(r.notes, config.RepoFile+": "+c.String())
	}
	name := r.flags.Model
	if name == "" {
		name = r.repoCfg.Model
	}
	if name == "" {
		name = cfg.Model
	}
	if name == "" {
		return ConfigError{Err: errors.New("AGENTFIX_MODEL: required: set it to provider/model (e.g. openai/gpt-5), pass --model, or --replay a trajectory")}
	}
	model, err := o.NewModel(name)
	if err != nil {
		return err
	}
	r.model = model
	return nil
}

// ReadTrajectoryFile reads a trajectory.jsonl.
func ReadTrajectoryFile(path string) (agent.Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return agent.Trajectory{}, err
	}
	defer f.Close()
	t, err := agent.ReadTrajectory(f)
	if err != nil {
		return agent.Trajectory{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// absTo returns p made absolute against dir.
func absTo(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// checkOutDir refuses an output directory that already holds a run; it may
// not exist yet.
func checkOutDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	for _, name := range []string{PatchFile, TrajectoryFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s already holds %s of another run; choose another directory", dir, name)
		}
	}
	return nil
}
