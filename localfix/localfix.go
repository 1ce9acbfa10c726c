// Package localfix is `bot fix`: the agent on an issue of a local
// repository, with no GitHub and no queue. It checks everything it can
// before any paid work (the repository, the issue file, the output
// directory, the model, the sandbox), makes a temporary copy of the
// repository at HEAD, runs the one run path (package session) there with
// the repository's .github/agent-fix.yml from HEAD, shows each step on the
// terminal, and writes patch.diff and trajectory.jsonl to the output
// directory; with --apply it applies a submitted patch to the user's
// checkout without touching uncommitted work.
//
// Every check that can fail is made before the first model call: the
// flags, the repository and its name (owner/name from --repo-name or the
// origin remote, never the directory's name), the preconditions of
// --apply, the configuration at HEAD, the issue file, the output
// directory, the sandbox (the docker daemon and image) and then the
// model's key.
package localfix

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// The files a run writes to its output directory.
const (
	PatchFile      = "patch.diff"
	TrajectoryFile = "trajectory.jsonl"
)

// Options are one run as the command line and the configuration give it.
type Options struct {
	// Repo is the git repository to fix (a checkout or a bare one);
	// IssueFile the issue as Markdown ("" with Replay: the recorded task).
	Repo, IssueFile string
	// RepoName is the repository's full name, owner/name, for the task;
	// "" takes it from the URL of Repo's origin remote.
	RepoName string
	// Model overrides the repository's and AGENTFIX_MODEL; Replay plays
	// the model replies of a saved trajectory instead.
	Model, Replay string
	// Sandbox overrides AGENTFIX_SANDBOX; Image the docker sandbox's image.
	Sandbox, Image string
	// Setup and Test, when not nil, override the repository's setup and
	// test commands.
	Setup []string
	Test  *string
	// Out is the output directory (default ./agentfix-runs/RUN_ID), Cache
	// a sandbox cache kept between runs (default a fresh one).
	Out, Cache string
	// Apply applies a submitted patch to Repo's working tree.
	Apply bool

	// Config is the operator's configuration, loaded and validated.
	Config *config.App
	// WorkDir resolves relative paths; Environ is the environment git
	// runs with in the user's repository.
	WorkDir string
	Environ []string
	// NewModel builds the model named provider/model; its errors are
	// configuration errors.
	NewModel func(name string) (agent.Model, error)
	// CheckModel, when not nil, proves the model's credentials before the
	// run (not for a replay); its error is the run's.
	CheckModel func(ctx context.Context, m agent.Model) error
	// CheckSandbox refuses a sandbox kind that cannot run here, and
	// NewSandbox builds one.
	CheckSandbox func(kind string, allowUnsandboxed bool) error
	NewSandbox   func(kind string, o workspace.Options) (tools.Sandbox, error)
	// Images pulls and unpacks the images a run names, for the bwrap
	// sandbox; nil gives a sandbox that pulls them itself the reference.
	Images session.Images
	// ProbeSandbox, when not nil, checks before any model call that the
	// sandbox of kind can run commands here (for docker: the daemon
	// answers and the image is present or can be pulled). imageFrom names
	// where the image came from, --image or AGENTFIX_SANDBOX_IMAGE, for
	// its message; its error is the run's.
	ProbeSandbox func(ctx context.Context, kind, image, imageFrom string) error
	// Stdout shows the run; Logger gets the log records.
	Stdout io.Writer
	Logger *slog.Logger
}

// CheckFlags reports, before anything is loaded, what bot fix's command
// line lacks or combines wrongly: --repo, and --issue-file unless
// --replay, are required; --model and --replay exclude each other;
// --repo-name needs --issue-file.
func (o Options) CheckFlags() error {
	var missing []string
	if o.Repo == "" {
		missing = append(missing, "--repo DIR")
	}
	if o.IssueFile == "" && o.Replay == "" {
		missing = append(missing, "--issue-file FILE")
	}
	switch {
	case len(missing) > 0:
		return UsageError{"bot fix: " + strings.Join(missing, " and ") + " required (bot fix -h for help)"}
	case o.Model != "" && o.Replay != "":
		return UsageError{"bot fix: --model and --replay exclude each other: a replay plays the recorded model's replies"}
	case o.RepoName != "" && o.IssueFile == "":
		return UsageError{"bot fix: --repo-name names the repository of --issue-file's task; a replay without --issue-file keeps the recorded task"}
	}
	return nil
}

// Run runs the agent as o says. Its error is a UsageError or a
// ConfigError for what could be checked before the run (exit code 2), a
// *RunEnded for a run that ended without a submission (exit code 1), or
// another error.
func Run(ctx context.Context, o Options) error {
	r, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// UsageError is a bad command line.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// ConfigError is a configuration the run cannot use.
type ConfigError = config.Error

// RunEnded is a run that ended without a submission, with one line saying
// how it ended.
type RunEnded struct{ Result agent.Result }

func (e *RunEnded) Error() string {
	msg := "bot fix: the run ended " + string(e.Result.Status)
	if e.Result.Reason != "" {
		msg += ": " + safeLine(e.Result.Reason)
	}
	return msg
}
