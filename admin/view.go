package admin

import (
	"bytes"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/runs"
)

// runView is the data of a run page.
type runView struct {
	Meta runs.Meta
	// TargetURL links the issue or pull request the run was for; empty
	// without a GitHub web URL.
	TargetURL string
	Duration  time.Duration
	// Header is nil when no trajectory was recorded (yet).
	Header *agent.Header
	Steps  []stepView
	// ReviewStep is the step the review phase starts at; 0 when the run
	// never reached it.
	ReviewStep int
	Result     *agent.Result
	Diff       diffView
	// TrajectoryError says why the trajectory could not be read; the page
	// still shows the metadata and the diff.
	TrajectoryError string
	// Truncated: the trajectory's last record was cut off (a crash).
	Truncated bool
	// Link is set on a signed run page: when the link expires.
	LinkExpires time.Time
}

// stepView is one step of the trajectory.
type stepView struct {
	agent.Step
	// Text is the model's reply text.
	Text    string
	Actions []actionView
	// Review is set for the steps of the review phase, ReviewStart for
	// the first of them.
	Review, ReviewStart bool
}

// actionView is one action and what came of it.
type actionView struct {
	call
	// Observation is nil when the run ended before the action ran.
	Observation *observationView
}

// observationView is an action's result.
type observationView struct {
	Output string
	Lines  int
	// ReviewMessage marks the submit answer that starts the review phase.
	ReviewMessage bool
	// Submitted marks the final submit.
	Submitted bool
}

// buildRunView turns a run record into its page's data.
func buildRunView(rec runs.Record, webURL string, now time.Time) runView {
	v := runView{Meta: rec.Meta, TargetURL: targetURL(webURL, rec.Meta), Duration: runDuration(rec.Meta, now)}
	patch := rec.Patch
	if len(bytes.TrimSpace(rec.Trajectory)) == 0 {
		v.TrajectoryError = "No trajectory was recorded for this run (yet)."
	} else if t, err := agent.ReadTrajectory(bytes.NewReader(rec.Trajectory)); err != nil {
		v.TrajectoryError = "The trajectory could not be read: " + err.Error()
	} else {
		v.Header, v.Result, v.Truncated = &t.Header, t.Result, t.Truncated
		v.Steps, v.ReviewStep = buildSteps(t.Steps)
		if patch == "" && t.Result != nil {
			patch = t.Result.Patch
		}
	}
	v.Diff = parseDiff(patch)
	return v
}

// buildSteps returns the steps' views and the step the review phase starts
// at (see the package doc).
func buildSteps(steps []agent.Step) ([]stepView, int) {
	start := reviewStart(steps)
	out := make([]stepView, len(steps))
	for i, s := range steps {
		sv := stepView{Step: s, Review: start > 0 && s.Step >= start, ReviewStart: start > 0 && s.Step == start}
		if len(s.Messages) > 0 && s.Messages[0].Role == agent.RoleAssistant {
			sv.Text = s.Messages[0].Content
		}
		for j, c := range s.Actions {
			a := actionView{call: describeCall(c)}
			if j < len(s.Observations) {
				o := s.Observations[j]
				a.Observation = &observationView{
					Output: o.Output, Lines: lineCount(o.Output),
					ReviewMessage: sv.ReviewStart && c.Name == submitTool && !o.Submitted,
					Submitted:     o.Submitted,
				}
			}
			sv.Actions = append(sv.Actions, a)
		}
		out[i] = sv
	}
	return out, start
}

// reviewStart returns the number of the step the review phase starts at,
// or 0.
func reviewStart(steps []agent.Step) int {
	first := 0
	for _, s := range steps {
		for j, c := range s.Actions {
			if c.Name != submitTool || j >= len(s.Observations) || s.Observations[j].Submitted {
				continue
			}
			if strings.Contains(s.Observations[j].Output, "diff --git ") {
				return s.Step
			}
			if first == 0 {
				first = s.Step
			}
		}
	}
	return first
}

// runDuration is the run's duration: recorded, or from its start and end,
// or, while it runs, until now.
func runDuration(m runs.Meta, now time.Time) time.Duration {
	switch {
	case m.Duration > 0:
		return m.Duration
	case !m.Ended.IsZero():
		return m.Ended.Sub(m.Started)
	case m.Status == runs.StatusRunning && !m.Started.IsZero():
		return now.Sub(m.Started)
	}
	return 0
}

// targetURL links the run's issue or pull request on GitHub.
func targetURL(webURL string, m runs.Meta) string {
	if webURL == "" || m.Repo == "" || m.Number <= 0 {
		return ""
	}
	kind := "issues"
	if onPR(m.Kind) {
		kind = "pull"
	}
	return webURL + m.Repo + "/" + kind + "/" + itoa(m.Number)
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}
