package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/localfix"
	"github.com/agentfix/agentfix/models"
	"github.com/agentfix/agentfix/sandbox"
)

// fixUsage heads the help of bot fix.
const fixUsage = `usage: bot fix --repo DIR --issue-file FILE [flags]

Runs the agent on an issue of a local repository, in a sandbox, on a
temporary copy of the repository at HEAD; the checkout is changed only
with --apply. The patch and the trajectory go to --out. Exit code 0 when
the agent submitted, 1 for any other end of the run, 2 for usage or
configuration errors. The agent is told the repository's name,
owner/name, from the URL of its origin remote or from --repo-name.

flags:
`

// fixFlags are the command line of bot fix.
type fixFlags struct {
	cf   configFlags
	o    localfix.Options
	test string
}

// runFix runs the agent locally (package localfix): bot fix.
func (m *Main) runFix(ctx context.Context, args []string) error {
	f, err := m.parseFixFlags(args)
	if err != nil {
		return err
	}
	cfg, log, err := m.fixConfig(f)
	if err != nil {
		return err
	}
	o := f.o
	o.Config, o.WorkDir, o.Environ, o.Stdout, o.Logger = cfg, m.WorkDir, m.Environ, m.Stdout, log
	o.NewModel = func(name string) (agent.Model, error) { return models.New(cfg, name, log, nil) }
	o.CheckSandbox, o.NewSandbox = sandbox.CheckKind, sandbox.New
	kind := cfg.Sandbox
	if o.Sandbox != "" {
		kind = o.Sandbox
	}
	o.Images = sandbox.LocalImages(kind, cfg, log)
	o.CheckModel = func(ctx context.Context, m agent.Model) error { return models.Check(ctx, cfg, m, log) }
	o.ProbeSandbox = sandbox.ProbeLocal(m.Stdout)
	return localfix.Run(ctx, o)
}

func (m *Main) parseFixFlags(args []string) (*fixFlags, error) {
	f := &fixFlags{}
	o := &f.o
	fs := m.flagSet("fix", &f.cf)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fixUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Repo, "repo", "", "the git repository to fix (a checkout or a bare repository); the agent works on a copy of its HEAD")
	fs.StringVar(&o.IssueFile, "issue-file", "", "the issue, as Markdown; an optional first line \"# Title\" is its title")
	fs.StringVar(&o.RepoName, "repo-name", "", "the repository's name, owner/name, as the agent is told it (default: from the URL of the origin remote)")
	fs.StringVar(&o.Model, "model", "", "provider/model, e.g. openai/gpt-5 (default $AGENTFIX_MODEL)")
	fs.StringVar(&o.Sandbox, "sandbox", "", "bwrap, docker or none (default $AGENTFIX_SANDBOX, bwrap)")
	fs.StringVar(&o.Image, "image", "", "the container image the agent's commands run in, over image: of "+config.RepoFile+", a devcontainer.json and $AGENTFIX_SANDBOX_IMAGE")
	fs.Func("setup", "a setup command, run in the sandbox with network before the agent; repeat for several (default: setup of "+config.RepoFile+")", func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("empty command")
		}
		o.Setup = append(o.Setup, s)
		return nil
	})
	fs.StringVar(&f.test, "test", "", "the test command the review runs; \"\" for none (default: test of "+config.RepoFile+")")
	fs.StringVar(&o.Out, "out", "", "directory for patch.diff and trajectory.jsonl (default ./agentfix-runs/RUN_ID)")
	fs.StringVar(&o.Cache, "cache", "", "sandbox cache directory (HOME, GOCACHE, …) kept between runs of this repository (default: a fresh one per run)")
	fs.BoolVar(&o.Apply, "apply", false, "apply the patch to the repository's working tree when the agent submitted")
	fs.StringVar(&o.Replay, "replay", "", "replay the model replies of a saved trajectory.jsonl instead of calling a model (no API key needed)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "test" {
			o.Test = &f.test
		}
	})
	if err := o.CheckFlags(); err != nil {
		return nil, err
	}
	return f, nil
}

// fixConfig loads and validates the configuration, with --image
// overriding AGENTFIX_SANDBOX_IMAGE. bot fix
// shows its progress on stdout, so its log, on stderr, is text and leaves
// out info records unless AGENTFIX_LOG_LEVEL=debug.
func (m *Main) fixConfig(f *fixFlags) (*config.App, *slog.Logger, error) {
	cfg, err := m.readConfig(f.cf, func(cfg *config.App) error {
		if f.o.Image != "" && !config.IsImageReference(f.o.Image) {
			return usageError{fmt.Sprintf("bot fix: --image must be an image reference, e.g. golang:1.26 or ghcr.io/owner/image@sha256:…, got %q", f.o.Image)}
		} else if f.o.Image != "" {
			cfg.SandboxImage = f.o.Image
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	} else if cfg.LogLevel == "error" {
		level = slog.LevelError
	}
	log := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: level}))
	for _, w := range cfg.Warnings() {
		log.Warn("configuration: " + w)
	}
	return cfg, log, nil
}
