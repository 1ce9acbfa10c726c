package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Role is the author of a message in the conversation with the model.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the append-only history sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the actions an assistant message asks for (tool mode).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a RoleTool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one action requested by the model: a tool name and its JSON
// arguments. In text mode the Env builds tool calls from the reply text.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool to the model: its name, a description and the
// JSON schema of its arguments (DESIGN.md §7 fixes all three).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Finish reasons a Reply reports, normalised across providers.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length" // the reply was cut by the output token limit
)

// Reply is what one model call returned.
type Reply struct {
	// Message is the assistant message to append to the history as is.
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"`
	Usage        Usage   `json:"usage"`
	// CostUSD is the price of this call from the price table; 0 for an
	// unpriced model (then budgets count tokens).
	CostUSD float64 `json:"cost_usd"`
}

// Model is a language model the agent queries. Query sends the whole history
// and the tools (nil in text mode) and returns the next assistant message.
// Implementations retry transient provider errors themselves; an error they
// return ends the run (api_error), except one wrapping ErrContextExceeded
// (context_exceeded). Query must honour ctx cancellation.
type Model interface {
	Query(ctx context.Context, messages []Message, tools []ToolSpec) (Reply, error)
	// Name is provider/model, as configured (e.g. "openai/gpt-5").
	Name() string
}

// Observation is the result of executing one action.
type Observation struct {
	// Output is shown to the model as the tool result.
	Output string `json:"output"`
	// Submitted is set by the submit tool's final phase: the run ends with
	// status submitted and the Summary.
	Submitted bool   `json:"submitted,omitempty"`
	Summary   string `json:"summary,omitempty"`
	// Exit is how the command ended, for an action that ran one (bash);
	// nil for every other action and for a command refused unrun.
	Exit *Exit `json:"exit,omitempty"`
}

// Exit is how a command an action ran ended.
type Exit struct {
	// Code is the command's exit status; 128+n when signal n ended it, -1
	// when it timed out.
	Code int `json:"code"`
	// TimedOut is set when the command's timeout killed it.
	TimedOut bool `json:"timed_out,omitempty"`
}

// Env is the world the agent acts on: the tools, the sandbox and the
// working copy. Implementations live in package tools.
//
// Actions turns an assistant message into the actions to run; it returns a
// *FormatError when the message is malformed (unknown tool, bad JSON
// arguments, no or several actions in text mode) so the loop can requery.
// Execute runs one action; ordinary failures (a command exiting non-zero, a
// bad editor call) are observations, while an error means the environment
// itself failed and ends the run (env_dead when it wraps ErrEnvDead).
// Diff returns the current patch against the base commit, for submission and
// autosubmission.
type Env interface {
	Tools() []ToolSpec
	Actions(msg Message) ([]ToolCall, error)
	Execute(ctx context.Context, call ToolCall) (Observation, error)
	Diff(ctx context.Context) (string, error)
}

// CommandLimits are what an Env tells the prompts about the commands it
// runs, when it has a method CommandLimits() CommandLimits (package tools'
// Env has one); a zero field is not told.
type CommandLimits struct {
	// Timeout bounds each command.
	Timeout time.Duration
	// OutputCap is the most characters (bytes) of one tool result shown.
	OutputCap int
}

// FormatError reports a malformed model reply; Msg is shown to the model in
// the format-error prompt so it can correct itself.
type FormatError struct {
	Msg string
}

func (e *FormatError) Error() string { return "format error: " + e.Msg }

// Sentinel errors that select an exit status when wrapped.
var (
	// ErrContextExceeded: the history no longer fits the model's context.
	ErrContextExceeded = fmt.Errorf("context window exceeded")
	// ErrEnvDead: the sandbox or working copy can no longer run commands.
	ErrEnvDead = fmt.Errorf("environment dead")
	// ErrModelAuth: the model provider refused the credentials (401, 403);
	// the bot's operator must fix them (agent/llm's *AuthError wraps it).
	ErrModelAuth = fmt.Errorf("model provider refused the credentials")
)

// ExitStatus says how a run ended (DESIGN.md §6).
type ExitStatus string

// The exit statuses of a run.
const (
	Submitted       ExitStatus = "submitted"
	Autosubmitted   ExitStatus = "autosubmitted"
	LimitsExceeded  ExitStatus = "limits_exceeded"
	FormatErrorExit ExitStatus = "format_error"
	// Stuck: the model repeated the same action with the same
	// observation RepeatStop times in a row.
	Stuck           ExitStatus = "stuck"
	ContextExceeded ExitStatus = "context_exceeded"
	EnvDead         ExitStatus = "env_dead"
	APIError        ExitStatus = "api_error"
	// ModelAuth: the model provider refused the credentials; the bot's
	// operator must fix them (ErrModelAuth).
	ModelAuth ExitStatus = "model_auth"
	Error     ExitStatus = "error"
	Cancelled ExitStatus = "cancelled"
)
