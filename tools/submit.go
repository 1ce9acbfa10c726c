package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/workspace"
)

// submitted is what the model sees of the final submit call.
const submitted = "Your change was submitted."

// submit is the two-phase submission: each call before the last review
// stage returns the next review message; the call after it ends the run
// with the diff recomputed by the loop. An empty change or a refused
// workflow change never advances and never ends the run.
func (e *Env) submit(ctx context.Context, a submitArgs) (agent.Observation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a.Summary != nil && strings.TrimSpace(*a.Summary) != "" {
		e.summary = strings.TrimSpace(*a.Summary)
	}
	changes, err := e.opts.Repo.Changes(ctx)
	if err != nil {
		return agent.Observation{}, envErr("submit", err)
	}
	diff, err := e.opts.Repo.Diff(ctx)
	if errors.Is(err, workspace.ErrOutputTooLarge) {
		return agent.Observation{Output: "Your change was not submitted: its diff is larger than a pull request can take. Remove generated, vendored or binary files you added, then submit again."}, nil
	}
	if err != nil {
		return agent.Observation{}, envErr("submit", err)
	}
	d := ReviewData{
		Diff: diff, Base: e.opts.Repo.Base(),
		Files: changes.Files, New: changes.New, Deleted: changes.Deleted, Tests: changes.Tests,
		Workflows: changes.Workflows, NestedRepos: changes.NestedRepos,
		Summary: e.summary, Stage: e.stage + 1, Stages: len(e.stages), TextMode: e.opts.TextMode,
	}
	d.Symlinks = RefusedSymlinks(changes.Symlinks)
	switch {
	case changes.Empty() || diff == "":
		return e.answer(e.empty, d)
	case len(d.Symlinks) > 0:
		return e.answer(e.symlinks, d)
	case len(changes.Workflows) > 0 && !e.opts.AllowWorkflowChanges:
		return e.answer(e.workflows, d)
	case e.stage >= len(e.stages):
		return agent.Observation{Output: submitted, Submitted: true, Summary: e.summary}, nil
	}
	switch {
	case e.opts.Verifier != nil:
		v, err := e.opts.Verifier.Verify(ctx, diff)
		if err != nil {
			return agent.Observation{}, envErr("verify", err)
		}
		if v.Test != nil {
			v.Test.Output = workspace.Clip(v.Test.Output, e.opts.TestOutputLimit)
		}
		d.Test, d.Verdict = v.Test, &v
		e.lastTest, e.lastVerdict, e.testedDiff = v.Test, &v, diff
	case e.opts.TestCommand != "":
		if d.Test, err = e.runTests(ctx); err != nil {
			return agent.Observation{}, err
		}
		e.lastTest, e.testedDiff = d.Test, diff
	}
	obs, err := e.answer(e.stages[e.stage], d)
	if err == nil {
		e.stage++
	}
	return obs, err
}

// answer renders t as a tool result that does not end the run.
func (e *Env) answer(t *template.Template, d ReviewData) (agent.Observation, error) {
	text, err := render(t, d)
	if err != nil {
		return agent.Observation{}, fmt.Errorf("submit: %w", err)
	}
	return agent.Observation{Output: text}, nil
}

// runTests runs the repository's test command in the sandbox, network off.
func (e *Env) runTests(ctx context.Context) (*TestResult, error) {
	res, err := e.opts.Sandbox.Run(ctx, workspace.Command{Script: e.opts.TestCommand, Timeout: e.opts.TestTimeout})
	if err != nil {
		return nil, envErr("test command", err)
	}
	return &TestResult{
		Command:  e.opts.TestCommand,
		ExitCode: res.ExitCode,
		TimedOut: res.TimedOut,
		Output:   workspace.Clip(res.Output, e.opts.TestOutputLimit),
	}, nil
}

// RefusedSymlinks lists, as "path -> target (why)", the symbolic links of
// a change that are never pushed: any at or under .github/ (a link can
// make a workflow of a file elsewhere) and any whose target leaves the
// repository.
func RefusedSymlinks(links []workspace.Symlink) []string {
	var out []string
	for _, l := range links {
		switch {
		case l.UnderGitHub:
			out = append(out, fmt.Sprintf("%s -> %s (a symbolic link under .github/)", l.Path, l.Target))
		case l.Escapes:
			out = append(out, fmt.Sprintf("%s -> %s (its target is outside the repository)", l.Path, l.Target))
		}
	}
	return out
}
