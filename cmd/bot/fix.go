package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfix/agentfix/config"
)

// fixUsage heads the help of bot fix.
const fixUsage = `usage: bot fix --repo DIR --issue-file FILE [flags]

Runs the agent on an issue of a local repository, in a sandbox, on a
temporary copy of the repository at HEAD; the checkout is changed only
with --apply. The patch and the trajectory go to --out. Exit code 0 when
the agent submitted, 1 for any other end of the run, 2 for usage or
configuration errors.

flags:
`

// fixFlags are the command line of bot fix.
type fixFlags struct {
	cf        configFlags
	repo      string
	issueFile string
	model     string
	sandbox   string
	image     string
	setup     []string
	setupSet  bool
	test      string
	testSet   bool
	out       string
	cache     string
	apply     bool
	replay    string
}

// runFix runs the agent locally (DESIGN.md §6): bot fix.
func (m *Main) runFix(ctx context.Context, args []string) error {
	f, err := m.parseFixFlags(args)
	if err != nil {
		return err
	}
	cfg, log, err := m.fixConfig(f)
	if err != nil {
		return err
	}
	r, err := m.prepareFix(ctx, f, cfg, log)
	if err != nil {
		return err
	}
	return r.run(ctx)
}

func (m *Main) parseFixFlags(args []string) (*fixFlags, error) {
	f := &fixFlags{}
	fs := m.flagSet("fix", &f.cf)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fixUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.repo, "repo", "", "the git repository to fix (a checkout or a bare repository); the agent works on a copy of its HEAD")
	fs.StringVar(&f.issueFile, "issue-file", "", "the issue, as Markdown; an optional first line \"# Title\" is its title")
	fs.StringVar(&f.model, "model", "", "provider/model, e.g. openai/gpt-5 (default $AGENTFIX_MODEL)")
	fs.StringVar(&f.sandbox, "sandbox", "", "bwrap, docker or none (default $AGENTFIX_SANDBOX, bwrap)")
	fs.StringVar(&f.image, "image", "", "the container image of the docker sandbox (default $AGENTFIX_SANDBOX_IMAGE)")
	fs.Func("setup", "a setup command, run in the sandbox with network before the agent; repeat for several (default: setup of "+config.RepoFile+")", func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("empty command")
		}
		f.setup, f.setupSet = append(f.setup, s), true
		return nil
	})
	fs.StringVar(&f.test, "test", "", "the test command the review runs; \"\" for none (default: test of "+config.RepoFile+")")
	fs.StringVar(&f.out, "out", "", "directory for patch.diff and trajectory.jsonl (default ./agentfix-runs/RUN_ID)")
	fs.StringVar(&f.cache, "cache", "", "sandbox cache directory (HOME, GOCACHE, …) kept between runs of this repository (default: a fresh one per run)")
	fs.BoolVar(&f.apply, "apply", false, "apply the patch to the repository's working tree when the agent submitted")
	fs.StringVar(&f.replay, "replay", "", "replay the model replies of a saved trajectory.jsonl instead of calling a model (no API key needed)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "test" {
			f.testSet = true
		}
	})
	var missing []string
	if f.repo == "" {
		missing = append(missing, "--repo DIR")
	}
	if f.issueFile == "" && f.replay == "" {
		missing = append(missing, "--issue-file FILE")
	}
	switch {
	case len(missing) > 0:
		return nil, usageError{"bot fix: " + strings.Join(missing, " and ") + " required (bot fix -h for help)"}
	case f.model != "" && f.replay != "":
		return nil, usageError{"bot fix: --model and --replay exclude each other: a replay plays the recorded model's replies"}
	}
	return f, nil
}

// fixConfig loads and validates the configuration, with --image
// overriding AGENTFIX_SANDBOX_IMAGE. bot fix
// shows its progress on stdout, so its log, on stderr, is text and leaves
// out info records unless AGENTFIX_LOG_LEVEL=debug.
func (m *Main) fixConfig(f *fixFlags) (*config.App, *slog.Logger, error) {
	path := f.cf.path
	if path == "" {
		path = lookup(m.Environ, config.ConfigVar)
	}
	cfg, err := config.Load(path, m.Environ, m.WorkDir)
	if err != nil {
		return nil, nil, configError{err}
	}
	if f.image != "" {
		cfg.SandboxImage = f.image
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, configError{err}
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
	for _, name := range []string{patchFile, trajectoryFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s already holds %s of another run; choose another directory", dir, name)
		}
	}
	return nil
}
