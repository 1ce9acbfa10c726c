package agent

import (
	"encoding/json"
	"strings"
	"time"
)

// TrajectoryVersion is the "v" of the trajectory format this package writes
// and reads.
const TrajectoryVersion = 1

// Header is the first record of a trajectory.
type Header struct {
	V        int        `json:"v"`
	RunID    string     `json:"run_id"`
	Started  time.Time  `json:"started"`
	Model    string     `json:"model"`
	TextMode bool       `json:"text_mode,omitempty"`
	Task     Task       `json:"task"`
	Config   Config     `json:"config"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// Messages are the system and instance messages the history starts
	// with; each Step adds its own.
	Messages []Message `json:"messages"`
}

// Step is one model query and what followed from it: a record of the
// trajectory and what OnStepDone receives. A step whose reply was malformed
// or truncated has no actions and a FormatError.
type Step struct {
	// Step counts model queries from 1.
	Step    int       `json:"step"`
	Started time.Time `json:"started"`
	// Messages are the messages this step appended to the history, in
	// order: the assistant reply, then the observations or the
	// format-error prompt.
	Messages     []Message     `json:"messages"`
	Actions      []ToolCall    `json:"actions,omitempty"`
	Observations []Observation `json:"observations,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	// FormatError says why the reply was not used, if it was not.
	FormatError  string        `json:"format_error,omitempty"`
	Usage        Usage         `json:"usage"`
	CostUSD      float64       `json:"cost_usd"`
	TotalUsage   Usage         `json:"total_usage"`
	TotalCostUSD float64       `json:"total_cost_usd"`
	QueryTime    time.Duration `json:"query_ns"`
	ExecTime     time.Duration `json:"exec_ns"`
	Duration     time.Duration `json:"duration_ns"`
}

// LastAction describes the step's last action on one line (e.g. "bash: go
// test ./..."), at most 120 characters; empty when the step had none.
func (s Step) LastAction() string {
	if len(s.Actions) == 0 {
		return ""
	}
	return s.Actions[len(s.Actions)-1].Brief(120)
}

// Brief describes the call on one line of at most limit characters: the
// tool name and its main arguments (command, path).
func (c ToolCall) Brief(limit int) string {
	var args map[string]any
	_ = json.Unmarshal(c.Arguments, &args) // malformed arguments describe as the name alone
	parts := []string{c.Name + ":"}
	for _, key := range []string{"command", "path"} {
		if v, ok := args[key].(string); ok && v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) == 1 {
		parts[0] = c.Name
	}
	line := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if r := []rune(line); len(r) > limit && limit > 0 {
		return string(r[:limit-1]) + "…"
	}
	return line
}

// Result is how a run ended: the last record of a trajectory and what Run
// returns.
type Result struct {
	RunID  string     `json:"run_id"`
	Status ExitStatus `json:"exit_status"`
	// Reason explains Status in words; empty for submitted.
	Reason string `json:"exit_reason,omitempty"`
	// Cause is, for autosubmitted, the status the limit or error would
	// have given with an empty diff.
	Cause ExitStatus `json:"cause,omitempty"`
	// Patch is the diff against the base commit for submitted and
	// autosubmitted, empty otherwise.
	Patch string `json:"patch,omitempty"`
	// Summary is the agent's summary from submit.
	Summary  string        `json:"summary,omitempty"`
	Steps    int           `json:"steps"`
	Usage    Usage         `json:"usage"`
	CostUSD  float64       `json:"cost_usd"`
	Duration time.Duration `json:"duration_ns"`
	Ended    time.Time     `json:"ended"`
}

// Total is the sum of all token counts of the usage.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
