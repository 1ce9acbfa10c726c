package main

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
)

// The files bot fix writes to its output directory.
const (
	patchFile      = "patch.diff"
	trajectoryFile = "trajectory.jsonl"
)

// fixRun is one run of bot fix, with everything checked that can be
// checked before any work starts.
type fixRun struct {
	id    string
	flags *fixFlags
	repo  *userRepo
	// repoCfg is the repository's configuration file at HEAD.
	repoCfg config.Repo
	task    agent.Task
	model   agent.Model
	// agentCfg holds the limits: the operator's, lowered by the
	// repository's, or the recorded ones of a replay.
	agentCfg agent.Config
	setup    []string
	test     string
	sandbox  string
	// image is the docker sandbox's: --image, else AGENTFIX_SANDBOX_IMAGE.
	image     string
	allowNone bool
	out       string
	cache     string // empty: a fresh cache for this run
	// notes are shown when the run starts (limits the repository could not
	// raise, uncommitted changes the run does not see).
	notes []string
	log   *slog.Logger
	p     *progress
}

// prepareFix resolves the flags, the configuration and the repository's
// configuration file into a fixRun. Its errors are usage or configuration
// errors (exit code 2).
func (m *Main) prepareFix(ctx context.Context, f *fixFlags, cfg *config.App, log *slog.Logger) (*fixRun, error) {
	r := &fixRun{flags: f, log: log, sandbox: cfg.Sandbox, image: cfg.SandboxImage, allowNone: cfg.AllowUnsandboxed}
	if f.sandbox != "" {
		r.sandbox = f.sandbox
	}
	if err := checkSandboxKind(r.sandbox, r.allowNone); err != nil {
		return nil, err
	}
	switch {
	case r.sandbox == "docker" && cfg.SandboxImage == "":
		return nil, usageError{"bot fix: the docker sandbox needs --image IMAGE or AGENTFIX_SANDBOX_IMAGE (an image with the repository's toolchain)"}
	case r.sandbox != "docker" && f.image != "":
		return nil, usageError{"bot fix: --image is for the docker sandbox; this run uses " + r.sandbox}
	}
	repo, err := inspectRepo(ctx, absTo(m.WorkDir, f.repo), m.Environ)
	if err != nil {
		return nil, usageError{"bot fix: --repo: " + err.Error()}
	}
	if f.apply && repo.bare {
		return nil, usageError{"bot fix: --apply: " + repo.dir + " is a bare repository; it has no working tree to apply the patch to"}
	}
	r.repo = repo
	if err := r.readRepoConfig(ctx); err != nil {
		return nil, err
	}
	if err := r.chooseTask(m); err != nil {
		return nil, err
	}
	if err := r.chooseModel(m, cfg); err != nil {
		return nil, err
	}
	r.id = runs.NewID(time.Now())
	r.out = filepath.Join(m.WorkDir, "agentfix-runs", r.id)
	if f.out != "" {
		r.out = absTo(m.WorkDir, f.out)
	}
	if err := checkOutDir(r.out); err != nil {
		return nil, usageError{"bot fix: --out: " + err.Error()}
	}
	if f.cache != "" {
		r.cache = absTo(m.WorkDir, f.cache)
	}
	if n := len(repo.dirty); n > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d uncommitted %s in the checkout %s not part of the run: the agent works on a copy of HEAD",
			n, plural(n, "change", "changes"), plural(n, "is", "are")))
	}
	r.p = &progress{w: m.Stdout, maxSteps: r.agentCfg.MaxSteps}
	return r, nil
}

// readRepoConfig reads the repository's configuration file from the commit
// at HEAD and takes the setup and test commands from it unless the flags
// give them.
func (r *fixRun) readRepoConfig(ctx context.Context) error {
	r.repoCfg = config.DefaultRepo()
	data, found, err := r.repo.fileAtHead(ctx, config.RepoFile)
	if err != nil {
		return configError{fmt.Errorf("%s: %w", config.RepoFile, err)}
	}
	if found {
		if r.repoCfg, err = config.ParseRepo(data); err != nil {
			var re *config.RepoError
			if errors.As(err, &re) {
				err = errors.New(strings.ReplaceAll(re.Error(), "\n", "; "))
			}
			return configError{fmt.Errorf("invalid configuration at HEAD %s: %w", shortID(r.repo.head), err)}
		}
	}
	if r.repoCfg.Extends != "" {
		r.notes = append(r.notes, fmt.Sprintf("%s extends %q; bot fix does not follow _extends (it reads no other repository)", config.RepoFile, r.repoCfg.Extends))
	}
	r.setup, r.test = r.repoCfg.Setup, r.repoCfg.Test
	if r.flags.setupSet {
		r.setup = r.flags.setup
	}
	if r.flags.testSet {
		r.test = r.flags.test
	}
	r.test = strings.TrimSpace(r.test)
	return nil
}

// chooseTask reads the issue file; without one (a replay) the recorded task
// is used. The repository's instructions become the task's notes.
func (r *fixRun) chooseTask(m *Main) error {
	if r.flags.issueFile == "" {
		return nil
	}
	title, body, err := readIssueFile(absTo(m.WorkDir, r.flags.issueFile))
	if err != nil {
		return usageError{"bot fix: --issue-file: " + err.Error()}
	}
	r.task = agent.Task{Repo: strings.TrimSuffix(filepath.Base(r.repo.dir), ".git"), Title: title, Body: body,
		Notes: r.repoCfg.Instructions}
	return nil
}

// chooseModel sets the model and the limits: a replay of --replay's
// trajectory with its recorded limits (and task, when no issue file is
// given), or the model of --model, the repository's configuration or
// AGENTFIX_MODEL, in that order, with the operator's limits lowered by the
// repository's.
func (r *fixRun) chooseModel(m *Main, cfg *config.App) error {
	if r.flags.replay != "" {
		traj, err := readTrajectoryFile(absTo(m.WorkDir, r.flags.replay))
		if err != nil {
			return usageError{"bot fix: --replay: " + err.Error()}
		}
		model, err := llm.NewReplay(traj)
		if err != nil {
			return usageError{"bot fix: --replay: " + err.Error()}
		}
		r.model, r.agentCfg = model, traj.Header.Config
		if r.flags.issueFile == "" {
			r.task = traj.Header.Task
		}
		return nil
	}
	lim, capped := r.repoCfg.Limits(cfg.JobLimits())
	r.agentCfg = agent.Config{MaxSteps: lim.MaxSteps, MaxCostUSD: lim.MaxCostUSD, MaxDuration: lim.MaxDuration}
	for _, c := range capped {
		r.notes = append(r.notes, config.RepoFile+": "+c.String())
	}
	name := r.flags.model
	if name == "" {
		name = r.repoCfg.Model
	}
	if name == "" {
		name = cfg.Model
	}
	if name == "" {
		return configError{errors.New("AGENTFIX_MODEL: required: set it to provider/model (e.g. openai/gpt-5), pass --model, or --replay a trajectory")}
	}
	model, err := newModel(cfg, name, r.log, nil)
	if err != nil {
		return err
	}
	r.model = model
	return nil
}

func readTrajectoryFile(path string) (agent.Trajectory, error) {
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
