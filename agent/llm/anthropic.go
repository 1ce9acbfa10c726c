package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentfix/agentfix/agent"
)

// anthropicBaseURL is Anthropic's own API; ANTHROPIC_BASE_URL points
// elsewhere.
const anthropicBaseURL = "https://api.anthropic.com/"

// anthropicBackend speaks Anthropic's Messages API through the SDK's
// messages and models services (not its whole client, whose other services
// would make the binary larger).
type anthropicBackend struct {
	messages  anthropic.MessageService
	models    anthropic.ModelService
	base      string
	model     string
	maxTokens int64
}

// cachedMessages is how many of the last user messages get a cache_control
// breakpoint: the newest one writes the cache for the next query, the one
// before reads what the previous query wrote. With the system prompt's
// breakpoint that is three of the four Anthropic allows.
const cachedMessages = 2

func newAnthropic(model string, o Options) (backend, error) {
	key, base := o.APIKey, o.BaseURL
	if key == "" {
		key = o.Getenv("ANTHROPIC_API_KEY")
	}
	if base == "" {
		base = o.Getenv("ANTHROPIC_BASE_URL")
	}
	if key == "" {
		return nil, errors.New("no API key: set ANTHROPIC_API_KEY")
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(), // the default base URL; a service, unlike a client, reads no environment, credential files or profiles
		option.WithMaxRetries(0),           // Model retries, so the behaviour is ours and tested
		option.WithRequestTimeout(o.RequestTimeout),
		option.WithAPIKey(key),
	}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	maxTokens := o.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	if base == "" {
		base = anthropicBaseURL
	}
	return &anthropicBackend{messages: anthropic.NewMessageService(opts...), models: anthropic.NewModelService(opts...),
		base: base, model: model, maxTokens: maxTokens}, nil
}

func (b *anthropicBackend) endpoint() (baseURL, keyVar string) { return b.base, "ANTHROPIC_API_KEY" }

func (b *anthropicBackend) maxOutputTokens() int64 { return b.maxTokens }

// check lists one model: the cheapest request that needs a valid key.
func (b *anthropicBackend) check(ctx context.Context) error {
	if _, err := b.models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1)}); err != nil {
		return anthropicError(err)
	}
	return nil
}

func (b *anthropicBackend) query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(b.model), MaxTokens: b.maxTokens}
	var err error
	params.System, params.Messages, err = anthropicMessages(messages)
	if err != nil {
		return agent.Reply{}, err
	}
	for _, t := range tools {
		tool, err := anthropicTool(t)
		if err != nil {
			return agent.Reply{}, err
		}
		params.Tools = append(params.Tools, tool)
	}
	resp, err := b.messages.New(ctx, params)
	if err != nil {
		return agent.Reply{}, anthropicError(err)
	}
	if len(resp.Content) == 0 {
		return agent.Reply{}, &callError{provider: "anthropic", status: http.StatusOK, message: "the response has no content", emptyReply: true}
	}
	return anthropicReply(resp), nil
}

// anthropicMessages maps the history: system messages to the system
// blocks, tool results and user text that follow each other to one user
// message (all results of a tool_use turn must come in the next user
// message), and sets cache_control on the system prompt and the last
// cachedMessages user messages.
func anthropicMessages(messages []agent.Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	var system []anthropic.TextBlockParam
	var out []anthropic.MessageParam
	for _, m := range messages {
		switch m.Role {
		case agent.RoleSystem:
			system = append(system, anthropic.TextBlockParam{Text: nonEmpty(m.Content)})
		case agent.RoleUser, agent.RoleTool:
			block := anthropic.NewTextBlock(nonEmpty(m.Content))
			if m.Role == agent.RoleTool {
				block = anthropic.NewToolResultBlock(m.ToolCallID, nonEmpty(m.Content), false)
			}
			if n := len(out); n > 0 && out[n-1].Role == anthropic.MessageParamRoleUser {
				out[n-1].Content = append(out[n-1].Content, block)
			} else {
				out = append(out, anthropic.NewUserMessage(block))
			}
		case agent.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(nonEmpty("")))
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		default:
			return nil, nil, fmt.Errorf("anthropic: message with unknown role %q", m.Role)
		}
	}
	if n := len(system); n > 0 {
		system[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	marked := 0
	for i := len(out) - 1; i >= 0 && marked < cachedMessages; i-- {
		if out[i].Role != anthropic.MessageParamRoleUser {
			continue
		}
		blocks := out[i].Content
		if cc := blocks[len(blocks)-1].GetCacheControl(); cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
			marked++
		}
	}
	return system, out, nil
}

// nonEmpty stands in for empty text, which the API refuses.
func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

// toolInput is a tool call's arguments as the object the API requires;
// arguments that are not an object are passed under "raw_arguments".
func toolInput(args json.RawMessage) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) == nil && obj != nil {
		return args
	}
	return map[string]string{"raw_arguments": string(args)}
}

func anthropicTool(t agent.ToolSpec) (anthropic.ToolUnionParam, error) {
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil {
		return anthropic.ToolUnionParam{}, fmt.Errorf("schema of tool %s: %w", t.Name, err)
	}
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			in.ExtraFields[k] = v
		}
	}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: t.Name, Description: anthropic.String(t.Description), InputSchema: in,
	}}, nil
}

func anthropicReply(resp *anthropic.Message) agent.Reply {
	msg := agent.Message{Role: agent.RoleAssistant}
	var text []string
	for _, block := range resp.Content {
		switch block.Type {
		case "text":
			text = append(text, block.Text)
		case "tool_use":
			args := block.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: block.ID, Name: block.Name, Arguments: args})
		}
	}
	msg.Content = strings.Join(text, "\n\n")
	u := resp.Usage
	return agent.Reply{
		Message:      msg,
		FinishReason: anthropicFinish(resp.StopReason),
		Usage: agent.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		},
	}
}

// anthropicFinish maps stop_reason; a reply cut because the context window
// filled up is a truncation too (the next query then fails as
// context_exceeded if the history no longer fits).
func anthropicFinish(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence, anthropic.StopReasonPauseTurn:
		return agent.FinishStop
	case anthropic.StopReasonToolUse:
		return agent.FinishToolCalls
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return agent.FinishLength
	}
	return string(r)
}

// anthropicError classifies an SDK error.
func anthropicError(err error) error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return &callError{provider: "anthropic", err: err}
	}
	ce := &callError{provider: "anthropic", status: apiErr.StatusCode, err: err}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(apiErr.RawJSON()), &body) == nil && body.Error.Message != "" {
		ce.message = body.Error.Type + ": " + body.Error.Message
	} else {
		ce.message = apiErr.RawJSON()
	}
	if apiErr.Response != nil {
		ce.retryAfter = retryAfter(apiErr.Response.Header)
	}
	ce.contextExceeded = isContextExceeded(ce.status, ce.message)
	return ce
}
