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
	// Status is the run record's status, Exit the agent's exit status.
	Status, Exit statusView
	// Running is set while the run runs: the page reloads itself after
	// Reload seconds.
	Running bool
	Reload  int
	// TargetURL links the issue or pull request the run was for; empty
	// without a GitHub web URL.
	TargetURL string
	// WallTime is the run's one duration: from its start to its end, or
	// to now while it runs; WallTimeNote says what it spans.
	WallTime     time.Duration
	WallTimeNote string
	// Header is nil when no trajectory was recorded (yet).
	Header *agent.Header
	Steps  []stepView
	// ReviewStep is the step the review phase starts at; 0 when the run
	// never reached it.
	ReviewStep int
	Result     *agent.Result
	Diff       diffView
	// TrajectoryError says why the trajectory could not be read, or that
	// none was recorded; the page still shows the metadata and the diff.
	// TrajectoryNote says that a running run has none yet.
	TrajectoryError, TrajectoryNote string
	// Truncated: the trajectory's last record was cut off (a crash).
	Truncated bool
	// Link is set on a signed run page: when the link expires.
	LinkExpires time.Time
	// AdminLinks shows links to the other admin pages (the tasks of the
	// run's delivery): only on /admin pages.
	AdminLinks bool
	// LocalDir is set on the page of a local run directory (bot view).
	LocalDir string
	// AgentOnly is set when all the page knows comes from the trajectory
	// (a run of bot fix, which has no run record): it has no requester,
	// job status or pull request.
	AgentOnly bool
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
	// Exit is how the action's command ended; nil when it ran none (or the
	// trajectory predates recording it).
	Exit *exitView
	// ReviewMessage marks the submit answer that starts the review phase.
	ReviewMessage bool
	// Submitted marks the final submit.
	Submitted bool
}

// exitView is how a command ended: a mark, ✓ or ✗, and words ("exit 0",
// "exit 2", "timed out").
type exitView struct {
	OK         bool
	Mark, Text string
}

// describeCommandExit returns the view of a command's exit.
func describeCommandExit(e *agent.Exit) *exitView {
	switch {
	case e == nil:
		return nil
	case e.TimedOut:
		return &exitView{Mark: "✗", Text: "timed out"}
	case e.Code == 0:
		return &exitView{OK: true, Mark: "✓", Text: "exit 0"}
	}
	return &exitView{Mark: "✗", Text: "exit " + itoa(e.Code)}
}

// What the wall time of a run spans.
const (
	wallTimeJob     = "from the job's start to its end: clone, setup, agent and publishing"
	wallTimeLocal   = "from the agent's start to its end; setup not included"
	wallTimeRunning = "so far"
)

// buildRunView turns a run record into its page's data.
func buildRunView(rec runs.Record, webURL string, now time.Time) runView {
	var t *agent.Trajectory
	terr := ""
	if len(bytes.TrimSpace(rec.Trajectory)) > 0 {
		if tr, err := agent.ReadTrajectory(bytes.NewReader(rec.Trajectory)); err != nil {
			terr = "The trajectory could not be read: " + err.Error()
		} else {
			t = &tr
		}
	}
	v := newRunView(rec.Meta, t, terr, rec.Patch, now)
	v.TargetURL = targetURL(webURL, rec.Meta)
	v.WallTimeNote = wallTimeJob
	if v.Running {
		v.WallTimeNote = wallTimeRunning
	}
	return v
}

// What the page says of a missing trajectory.
const (
	noTrajectory    = "No trajectory was recorded for this run."
	noTrajectoryYet = "No steps yet: the worker shares the trajectory every few steps."
	noStepsLocal    = "No steps yet: the run is starting."
)

// newRunView builds a run page's data from the run's metadata, its
// trajectory (nil when there is none, with terr saying why when it could
// not be read) and its patch (the result's when empty).
func newRunView(m runs.Meta, t *agent.Trajectory, terr, patch string, now time.Time) runView {
	v := runView{
		Meta: m, Status: describeStatus(m.Status), Exit: describeExit(m.ExitStatus),
		Running: m.Status == runs.StatusRunning, WallTime: runDuration(m, now), TrajectoryError: terr,
	}
	switch {
	case t == nil && terr == "" && v.Running:
		v.TrajectoryNote = noTrajectoryYet
	case t == nil && terr == "":
		v.TrajectoryError = noTrajectory
	}
	if t != nil {
		v.Header, v.Result = &t.Header, t.Result
		// A running run's last line may be cut off only because it is
		// being written.
		v.Truncated = t.Truncated && !v.Running
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
					Output: o.Output, Lines: lineCount(o.Output), Exit: describeCommandExit(o.Exit),
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

// runDuration is the run's wall time: recorded, or from its start and
// end, or, while it runs, until now.
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
