package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
)

// openaiBaseURL is OpenAI's own API; OPENAI_BASE_URL points elsewhere.
const openaiBaseURL = "https://api.openai.com/v1/"

// maxResponseBytes bounds a provider's response body.
const maxResponseBytes = 32 << 20

// openaiBackend speaks the Chat Completions API of OpenAI and of compatible
// servers (vLLM, Ollama, llama.cpp) with net/http. The wire format it uses
// is small and stable; the openai-go SDK would add about 20 MB to the
// binary, because its package registers the types of the whole API.
type openaiBackend struct {
	http      *http.Client
	base      string // ends in a slash
	key       string
	model     string
	maxTokens int64
	timeout   time.Duration
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
	if base == "" {
		base = openaiBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &openaiBackend{http: client, base: base, key: key, model: model, maxTokens: o.MaxOutputTokens, timeout: o.RequestTimeout}, nil
}

func (b *openaiBackend) endpoint() (baseURL, keyVar string) { return b.base, "OPENAI_API_KEY" }

// The request and response bodies of POST chat/completions, as far as the
// agent uses them.
type (
	chatRequest struct {
		Model               string        `json:"model"`
		Messages            []chatMessage `json:"messages"`
		Tools               []chatTool    `json:"tools,omitempty"`
		MaxCompletionTokens int64         `json:"max_completion_tokens,omitempty"`
	}
	chatMessage struct {
		Role string `json:"role"`
		// Content is nil only for an assistant message that has tool
		// calls and no text.
		Content    *string        `json:"content,omitempty"`
		Refusal    string         `json:"refusal,omitempty"`
		ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	chatToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	chatTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	chatResponse struct {
		Choices []struct {
			FinishReason string      `json:"finish_reason"`
			Message      chatMessage `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
)

func (b *openaiBackend) query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	req := chatRequest{Model: b.model, MaxCompletionTokens: b.maxTokens}
	for _, m := range messages {
		p, err := openaiMessage(m)
		if err != nil {
			return agent.Reply{}, err
		}
		req.Messages = append(req.Messages, p)
	}
	for _, t := range tools {
		if !json.Valid(t.Parameters) {
			return agent.Reply{}, fmt.Errorf("schema of tool %s is not JSON", t.Name)
		}
		var ct chatTool
		ct.Type = "function"
		ct.Function.Name, ct.Function.Description, ct.Function.Parameters = t.Name, t.Description, t.Parameters
		req.Tools = append(req.Tools, ct)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return agent.Reply{}, fmt.Errorf("openai: encode request: %w", err)
	}
	var resp chatResponse
	if err := b.do(ctx, http.MethodPost, "chat/completions", body, &resp); err != nil {
		return agent.Reply{}, err
	}
	if len(resp.Choices) == 0 {
		return agent.Reply{}, &callError{provider: "openai", status: http.StatusOK, message: "the response has no choices", emptyReply: true}
	}
	return openaiReply(resp), nil
}

// check lists the models: the cheapest request that needs a valid key.
func (b *openaiBackend) check(ctx context.Context) error {
	return b.do(ctx, http.MethodGet, "models", nil, nil)
}

// do sends one request to path under the base URL and decodes a 2xx
// response's JSON into out (when out is not nil). Every failure is a
// *callError.
func (b *openaiBackend) do(ctx context.Context, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return &callError{provider: "openai", err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agentfix")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.key)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return &callError{provider: "openai", err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	switch {
	case err != nil:
		return &callError{provider: "openai", err: fmt.Errorf("read response: %w", err)}
	case len(raw) > maxResponseBytes:
		return &callError{provider: "openai", err: fmt.Errorf("the response is larger than %d bytes", maxResponseBytes)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return openaiError(resp, raw)
	case out == nil:
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &callError{provider: "openai", err: fmt.Errorf("decode response: %w", err)}
	}
	return nil
}

func openaiMessage(m agent.Message) (chatMessage, error) {
	content := m.Content
	switch m.Role {
	case agent.RoleSystem, agent.RoleUser:
		return chatMessage{Role: string(m.Role), Content: &content}, nil
	case agent.RoleTool:
		return chatMessage{Role: "tool", Content: &content, ToolCallID: m.ToolCallID}, nil
	case agent.RoleAssistant:
		a := chatMessage{Role: "assistant"}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content = &content
		}
		for _, c := range m.ToolCalls {
			tc := chatToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Arguments)
			a.ToolCalls = append(a.ToolCalls, tc)
		}
		return a, nil
	}
	return chatMessage{}, fmt.Errorf("openai: message with unknown role %q", m.Role)
}

func openaiReply(resp chatResponse) agent.Reply {
	choice := resp.Choices[0]
	msg := agent.Message{Role: agent.RoleAssistant}
	if c := choice.Message.Content; c != nil {
		msg.Content = *c
	}
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

// openaiError classifies a response with an error status. OpenAI wraps its
// message in {"error": {...}}; compatible servers send {"message": ...},
// {"detail": ...} or plain text.
func openaiError(resp *http.Response, raw []byte) *callError {
	ce := &callError{provider: "openai", status: resp.StatusCode, retryAfter: retryAfter(resp.Header)}
	var body struct {
		Error *struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	var code string
	switch {
	case json.Unmarshal(raw, &body) != nil:
		ce.message = strings.TrimSpace(string(raw[:min(len(raw), 4096)]))
	case body.Error != nil:
		ce.message = body.Error.Message
		_ = json.Unmarshal(body.Error.Code, &code) // a number or null leaves no code
	default:
		ce.message = body.Message + body.Detail
	}
	ce.err = fmt.Errorf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	ce.contextExceeded = code == "context_length_exceeded" || isContextExceeded(ce.status, ce.message+" "+code)
	return ce
}
