package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/workspace"
)

// bash runs command in a fresh sandboxed shell, unless it is empty or runs
// an interactive program.
func (e *Env) bash(ctx context.Context, command string) (agent.Observation, error) {
	if strings.TrimSpace(command) == "" {
		return agent.Observation{Output: "The command is empty; give a bash command to run."}, nil
	}
	if why := refusal(command, e.opts.TextMode); why != "" {
		return agent.Observation{Output: why}, nil
	}
	res, err := e.opts.Sandbox.Run(ctx, workspace.Command{Script: command, Timeout: e.opts.CommandTimeout})
	if err != nil {
		return agent.Observation{}, envErr("bash", err)
	}
	return agent.Observation{Output: commandOutput(res, e.opts.CommandTimeout), Exit: &agent.Exit{Code: res.ExitCode, TimedOut: res.TimedOut}}, nil
}

// commandOutput is what the model sees of a command: its output, then a
// line with its exit code, 0 included, or the timeout (the configured one,
// or the time the command ran when the sandbox's default applied).
func commandOutput(res workspace.Result, timeout time.Duration) string {
	if timeout <= 0 {
		timeout = res.Duration.Round(time.Second)
	}
	note := fmt.Sprintf("[exit code %d]", res.ExitCode)
	if res.TimedOut {
		note = fmt.Sprintf("[timed out after %s: the command and every process it started were killed. Run something faster, such as a single test or a narrower search.]", timeout)
	}
	if res.Output == "" {
		return note
	}
	return strings.TrimSuffix(res.Output, "\n") + "\n" + note
}
