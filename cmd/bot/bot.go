package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/internal/redisconn"
	"github.com/agentfix/agentfix/localfix"
)

// Main is one run of the bot binary: it parses the subcommand, wires the
// parts together and owns what it opened until Close.
type Main struct {
	// Args are the command-line arguments without the program name.
	Args []string
	// Environ is the environment, KEY=value, as os.Environ returns it.
	Environ []string
	// WorkDir is the working directory (.env and relative paths).
	WorkDir string
	// Stdout and Stderr receive output and logs.
	Stdout, Stderr io.Writer
	// Listening, when set, is called with the HTTP address once the server
	// listens (tests listen on port 0).
	Listening func(addr string)

	// redisLog is go-redis's logger for this process, which main sets
	// (redis.SetLogger); openRedis points it at the command's logger.
	redisLog redisconn.Log
	// now is the clock of the Redis outage's line; nil is time.Now.
	now     func() time.Time
	closers []func() error
}

// NewMain returns a Main for this process.
func NewMain() (*Main, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	return &Main{Args: os.Args[1:], Environ: os.Environ(), WorkDir: wd, Stdout: os.Stdout, Stderr: os.Stderr}, nil
}

// command is one subcommand. Each lives in its own file.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

func (m *Main) commands() map[string]command {
	return map[string]command{
		"fix":       {"run the agent on an issue of a local repository (try it before installing the App)", m.runFix},
		"redeliver": {"ask GitHub to redeliver the webhook deliveries that failed (--since 6h)", m.runRedeliver},
		"serve":     {"HTTP edge and workers in one process (setup mode without an App)", m.runServe},
		"webhook":   {"HTTP edge only: verify deliveries and enqueue tasks", m.runWebhook},
		"worker":    {"the interactive and agent queues, with /healthz, /readyz and /metrics", m.runWorker},
		"version":   {"print the version", m.runVersion},
		"view":      {"serve the run page of a run directory of bot fix on this machine", m.runView},
	}
}

// Run runs the subcommand named by Args until it ends or ctx is cancelled
// (a server then shuts down gracefully and Run returns nil).
func (m *Main) Run(ctx context.Context) error {
	if len(m.Args) == 0 {
		return usageError{m.usage()}
	}
	name, args := m.Args[0], m.Args[1:]
	if name == "help" || name == "-h" || name == "--help" {
		fmt.Fprint(m.Stdout, m.usage())
		return nil
	}
	cmd, ok := m.commands()[name]
	if !ok {
		return usageError{fmt.Sprintf("unknown command %q\n\n%s", name, m.usage())}
	}
	return cmd.run(ctx, args)
}

// Close releases what Run opened, newest first.
func (m *Main) Close() error {
	var errs []error
	for i := len(m.closers) - 1; i >= 0; i-- {
		errs = append(errs, m.closers[i]())
	}
	m.closers = nil
	return errors.Join(errs...)
}

func (m *Main) onClose(f func() error) { m.closers = append(m.closers, f) }

func (m *Main) usage() string {
	var b strings.Builder
	b.WriteString("usage: bot <command> [flags]\n\ncommands:\n")
	cmds := m.commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nRun `bot <command> -h` for its flags. Configuration: README.md.\n")
	return b.String()
}

// configFlags declares the flags every server subcommand has.
type configFlags struct{ path string }

func (m *Main) flagSet(name string, cf *configFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("bot "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	if cf != nil {
		fs.StringVar(&cf.path, "config", "", "YAML configuration file (default $"+config.ConfigVar+")")
	}
	return fs
}

// parse parses args, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected arguments %q", fs.Name(), fs.Args())}
	}
	return nil
}

// loadConfig loads and validates the configuration and builds the logger.
func (m *Main) loadConfig(cf configFlags) (*config.App, *slog.Logger, error) {
	cfg, err := m.readConfig(cf, nil)
	if err != nil {
		return nil, nil, err
	}
	log := logattr.NewLogger(m.Stderr, cfg.LogFormat, cfg.LogLevel)
	for _, w := range cfg.Warnings() {
		log.Warn("configuration: " + w)
	}
	log.Debug("configuration", "config", cfg)
	return cfg, log, nil
}

// readConfig loads the configuration of --config (or $AGENTFIX_CONFIG),
// lets edit, when set, apply a command's flags over it, and validates it.
func (m *Main) readConfig(cf configFlags, edit func(*config.App) error) (*config.App, error) {
	path := cf.path
	if path == "" {
		path = lookup(m.Environ, config.ConfigVar)
	}
	cfg, err := config.Load(path, m.Environ, m.WorkDir)
	if err != nil {
		return nil, configError{Err: err}
	}
	if edit != nil {
		if err := edit(cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, configError{Err: err}
	}
	return cfg, nil
}

func lookup(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// configError is a configuration that stops startup: exit code 2. Its
// message has one line per problem, each naming the variable.
type configError = config.Error

// exitCode maps Run's error to the process exit code: 0 for success and
// -h, 2 for usage and configuration errors, 1 for anything else.
func exitCode(err error) int {
	var ue usageError
	var ce config.Error
	var lue localfix.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue), errors.As(err, &ce), errors.As(err, &lue):
		return 2
	default:
		return 1
	}
}
