package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentfix/agentfix/agent"
)

// openaiBackend speaks the Chat Completions API of OpenAI and of compatible
// servers.
type openaiBackend struct {
	chat      openai.ChatCompletionService
	model     string
	maxTokens int64
}

func newOpenAI(model string, o Options) (backend, error) {
	key, base := o.APIKey, o.BaseURL
	if key == "" {
		key = o.Getenv("OPENAI_API_KEY")
	}
	if base == "" {
		base = o.Getenv("OPENAI_BASE_URL")
	}
	if key == "" && base == "" {
		return nil, errors.New("no API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server that needs none)")
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(), // the default base URL; a service, unlike a client, reads no environment
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
	return &openaiBackend{chat: openai.NewChatCompletionService(opts...), model: model, maxTokens: o.MaxOutputTokens}, nil
}

func (b *openaiBackend) query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	params := openai.ChatCompletionNewParams{Model: b.model}
	for _, m := range messages {
		p, err := openaiMessage(m)
		if err != nil {
			return agent.Reply{}, err
		}
		params.Messages = append(params.Messages, p)
	}
	for _, t := range tools {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return agent.Reply{}, fmt.Errorf("schema of tool %s: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: schema,
		}))
	}
	if b.maxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(b.maxTokens)
	}
	resp, err := b.chat.New(ctx, params)
	if err != nil {
		return agent.Reply{}, openaiError(err)
	}
	if len(resp.Choices) == 0 {
		return agent.Reply{}, errors.New("openai: the response has no choices")
	}
	return openaiReply(resp), nil
}

func openaiMessage(m agent.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case agent.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case agent.RoleUser:
		return openai.UserMessage(m.Content), nil
	case agent.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case agent.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("openai: message with unknown role %q", m.Role)
}

func openaiReply(resp *openai.ChatCompletion) agent.Reply {
	choice := resp.Choices[0]
	msg := agent.Message{Role: agent.RoleAssistant, Content: choice.Message.Content}
	if msg.Content == "" && choice.Message.Refusal != "" {
		msg.Content = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: rawArguments(tc.Function.Arguments),
		})
	}
	u := resp.Usage
	cached := u.PromptTokensDetails.CachedTokens
	return agent.Reply{
		Message:      msg,
		FinishReason: openaiFinish(choice.FinishReason),
		Usage: agent.Usage{
			InputTokens:     u.PromptTokens - cached,
			OutputTokens:    u.CompletionTokens,
			CacheReadTokens: cached,
		},
	}
}

// rawArguments keeps a model's arguments as JSON: valid JSON as it is, an
// empty string as {}, anything else (often a reply cut short) as a JSON
// string, so the Env reports it and the trajectory stays valid JSON.
func rawArguments(s string) json.RawMessage {
	switch {
	case s == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// bodyMessage reads the error text of a response whose body has no
// OpenAI error envelope, as compatible servers send: {"message": ...} or
// plain text. The SDK leaves the body readable for this.
func bodyMessage(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) // best effort: the status says enough without it
	var body struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.Message != "" || body.Detail != "") {
		return body.Message + body.Detail
	}
	return strings.TrimSpace(string(raw))
}

func openaiFinish(reason string) string {
	switch reason {
	case "stop":
		return agent.FinishStop
	case "tool_calls", "function_call":
		return agent.FinishToolCalls
	case "length":
		return agent.FinishLength
	}
	return reason
}

// openaiError classifies an SDK error.
func openaiError(err error) error {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return &callError{provider: "openai", err: err}
	}
	ce := &callError{provider: "openai", status: apiErr.StatusCode, message: apiErr.Message, err: err}
	if apiErr.Response != nil {
		ce.retryAfter = retryAfter(apiErr.Response.Header)
		if ce.message == "" {
			ce.message = bodyMessage(apiErr.Response)
		}
	}
	ce.contextExceeded = apiErr.Code == "context_length_exceeded" || isContextExceeded(ce.status, ce.message+" "+apiErr.Code)
	return ce
}
