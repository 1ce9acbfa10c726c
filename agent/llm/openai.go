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

// openaiBaseURL is OpenAI's own API (the SDK's production environment);
// OPENAI_BASE_URL points elsewhere.
const openaiBaseURL = "https://api.openai.com/v1/"

// openaiBackend speaks the Chat Completions API of OpenAI and of compatible
// servers (vLLM, Ollama, llama.cpp) through the openai-go SDK's
// chat-completions and models services, not its whole client, whose other
// services would make the binary larger.
type openaiBackend struct {
	chat      openai.ChatCompletionService
	models    openai.ModelService
	base      string
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
	} else {
		base = openaiBaseURL
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &openaiBackend{chat: openai.NewChatCompletionService(opts...), models: openai.NewModelService(opts...),
		base: base, model: model, maxTokens: o.MaxOutputTokens}, nil
}

func (b *openaiBackend) endpoint() (baseURL, keyVar string) { return b.base, "OPENAI_API_KEY" }

func (b *openaiBackend) maxOutputTokens() int64 { return b.maxTokens }

// check lists the models: the cheapest request that needs a valid key.
func (b *openaiBackend) check(ctx context.Context) error {
	var raw *http.Response
	if _, err := b.models.List(ctx, option.WithResponseInto(&raw)); err != nil {
		return openaiError(err, raw)
	}
	return nil
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
	var raw *http.Response
	resp, err := b.chat.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		return agent.Reply{}, openaiError(err, raw)
	}
	if len(resp.Choices) == 0 {
		return agent.Reply{}, &callError{provider: "openai", status: http.StatusOK, message: "the response has no choices", emptyReply: true}
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

// openaiError classifies an SDK error; resp is the response it came with,
// if any. OpenAI wraps its message in {"error": {...}}, which the SDK
// decodes. Compatible servers may send {"message": ...}, {"detail": ...},
// {"error": "..."} (vLLM refusing a key) or plain text: the SDK leaves the
// body readable for those, and when it cannot decode the body at all its
// error has no status, so the status comes from resp.
func openaiError(err error, resp *http.Response) error {
	ce := &callError{provider: "openai", err: err}
	var apiErr *openai.Error
	var code string
	switch {
	case errors.As(err, &apiErr):
		ce.status, ce.message, code, resp = apiErr.StatusCode, apiErr.Message, apiErr.Code, apiErr.Response
	case resp != nil && resp.StatusCode >= 400:
		ce.status = resp.StatusCode
	default:
		return ce
	}
	if resp != nil {
		ce.retryAfter = retryAfter(resp.Header)
		if ce.message == "" {
			ce.message = bodyMessage(resp)
		}
	}
	ce.contextExceeded = code == "context_length_exceeded" || isContextExceeded(ce.status, ce.message+" "+code)
	return ce
}

// bodyMessage reads the error text of a response whose body has no
// OpenAI error envelope.
func bodyMessage(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) // best effort: the status says enough without it
	var body struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Message+body.Detail+body.Error != "" {
		return body.Message + body.Detail + body.Error
	}
	return strings.TrimSpace(string(raw))
}
