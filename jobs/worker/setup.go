package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// setupTimeout bounds a job's setup commands together; they run within the
// margin asynq gives a job beyond the agent's own time
// (jobs.AgentTimeoutMargin).
const setupTimeout = 10 * time.Minute

// setupTail is how much, in bytes, of a failed setup command's output its
// final comment shows: the end, where the error usually is.
const setupTail = 4000

// setupError is a setup command that failed or timed out: the job ends
// without running the agent.
type setupError struct {
	Command string
	Result  workspace.Result
}

func (e *setupError) Error() string {
	if e.Result.TimedOut {
		return fmt.Sprintf("setup command %q timed out", e.Command)
	}
	return fmt.Sprintf("setup command %q failed with exit code %d", e.Command, e.Result.ExitCode)
}

// runSetup runs the repository's setup commands (config.Repo.Setup) in the
// sandbox, in order, with the network on — the agent's own commands run
// without it — within setupTimeout together. The first that fails is a
// *setupError; a sandbox that cannot run commands is another error.
func runSetup(ctx context.Context, sb tools.Sandbox, cmds []string, log *slog.Logger) error {
	deadline := time.Now().Add(setupTimeout)
	for _, c := range cmds {
		left := time.Until(deadline)
		if left <= 0 {
			return &setupError{Command: c, Result: workspace.Result{ExitCode: -1, TimedOut: true}}
		}
		res, err := sb.Run(ctx, workspace.Command{Script: c, Network: true, Timeout: left})
		if err != nil {
			return fmt.Errorf("setup command %q: %w", c, err)
		}
		log.Info("setup command ran", logattr.Command, c, logattr.ExitCode, res.ExitCode, logattr.Duration, res.Duration)
		if res.TimedOut || res.ExitCode != 0 {
			return &setupError{Command: c, Result: res}
		}
	}
	return nil
}

// setupFailed ends a job whose setup command failed: the status comment
// says so, and the final comment shows the command and the end of its
// output.
func (j *job) setupFailed(ctx context.Context, se *setupError) (string, error) {
	runID := j.runID()
	res := agent.Result{RunID: runID, Status: agent.Error, Reason: se.Error()}
	how := fmt.Sprintf("failed with exit code %d", se.Result.ExitCode)
	if se.Result.TimedOut {
		how = "timed out"
	}
	detail := fmt.Sprintf("the setup command %s of %s %s, so the agent did not start.", codeSpan(se.Command), config.RepoFile, how)
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = PhaseFailed, outcomeSetupFailed, detail }, true)
	fd := finalData{Outcome: outcomeSetupFailed, Detail: detail, SetupOutput: tailBytes(se.Result.Output, setupTail)}
	if err := j.finalComment(ctx, fd, res); err != nil {
		return outcomeError, err
	}
	j.record(ctx, res, func(m *runs.Meta) { m.Status = outcomeSetupFailed })
	j.done(ctx, savedResult{RunID: runID, Result: res, Model: j.cfg.Model}, publishedResult{Outcome: outcomeSetupFailed})
	return outcomeSetupFailed, nil
}

// outcomeSetupFailed is the outcome of a job whose setup command failed.
const outcomeSetupFailed = "setup_failed"

// tailBytes returns the last n bytes of s at most, cut at a character
// boundary, with a line saying how much was left out.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return fmt.Sprintf("… (%d bytes before this left out)\n", cut) + s[cut:]
}
