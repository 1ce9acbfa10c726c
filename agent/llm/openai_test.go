package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

var testTools = []agent.ToolSpec{{
	Name: "bash", Description: "Run a command.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
}}

var testHistory = []agent.Message{
	{Role: agent.RoleSystem, Content: "You fix issues."},
	{Role: agent.RoleUser, Content: "Fix #1."},
	{Role: agent.RoleAssistant, Content: "Looking.", ToolCalls: []agent.ToolCall{{ID: "call_0", Name: "bash", Arguments: json.RawMessage(`{"command":"pwd"}`)}}},
	{Role: agent.RoleTool, Content: "/workspace", ToolCallID: "call_0"},
}

func completion(finish, message string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5",
	  "choices":[{"index":0,"finish_reason":"` + finish + `","message":` + message + `}],
	  "usage":{"prompt_tokens":1200,"completion_tokens":50,"total_tokens":1250,"prompt_tokens_details":{"cached_tokens":1000}}}`
}

const toolCallMessage = `{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`

func newTestOpenAI(t *testing.T, f *fakeProvider, s *sleeper, mutate ...func(*Options)) *Model {
	t.Helper()
	o := Options{APIKey: "test-key", BaseURL: f.srv.URL + "/v1/", Sleep: s.Sleep, Getenv: noEnv}
	for _, m := range mutate {
		m(&o)
	}
	m, err := New("openai/gpt-5", o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenAIToolCalls(t *testing.T) {
	f := newFakeProvider(t, "/v1/chat/completions", response{status: 200, body: completion("tool_calls", toolCallMessage)})
	m := newTestOpenAI(t, f, &sleeper{})
	reply, err := m.Query(context.Background(), testHistory, testTools)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Reply{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "Let me look.",
			ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{InputTokens: 200, OutputTokens: 50, CacheReadTokens: 1000},
		CostUSD:      (200*1.25 + 50*10 + 1000*0.125) / 1e6,
	}
	if diff := cmp.Diff(want, reply); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(`{
	  "model": "gpt-5",
	  "messages": [
	    {"role": "system", "content": "You fix issues."},
	    {"role": "user", "content": "Fix #1."},
	    {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"pwd\"}"}}]},
	    {"role": "tool", "content": "/workspace", "tool_call_id": "call_0"}
	  ],
	  "tools": [{"type": "function", "function": {"name": "bash", "description": "Run a command.",
	    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
	}`), &wantBody); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBody, reqs[0].body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got := reqs[0].header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization %q, want the key", got)
	}
}

func TestOpenAIReplies(t *testing.T) {
	tests := []struct {
		name    string
		message string
		finish  string
		want    agent.Message
		wantFin string
	}{
		{"truncated", `{"role":"assistant","content":"I will write"}`, "length",
			agent.Message{Role: agent.RoleAssistant, Content: "I will write"}, agent.FinishLength},
		{"text", `{"role":"assistant","content":"Done."}`, "stop",
			agent.Message{Role: agent.RoleAssistant, Content: "Done."}, agent.FinishStop},
		{"arguments that are not JSON", `{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls"}}]}`, "length",
			agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: "bash", Arguments: json.RawMessage(`"{\"command\": \"ls"`)}}}, agent.FinishLength},
		{"empty arguments", `{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"submit","arguments":""}}]}`, "tool_calls",
			agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: "submit", Arguments: json.RawMessage(`{}`)}}}, agent.FinishToolCalls},
		{"refusal", `{"role":"assistant","content":"","refusal":"I can't help with that."}`, "stop",
			agent.Message{Role: agent.RoleAssistant, Content: "I can't help with that."}, agent.FinishStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProvider(t, "/v1/chat/completions", response{status: 200, body: completion(tt.finish, tt.message)})
			reply, err := newTestOpenAI(t, f, &sleeper{}).Query(context.Background(), testHistory, testTools)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, reply.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if reply.FinishReason != tt.wantFin {
				t.Errorf("finish reason %q, want %q", reply.FinishReason, tt.wantFin)
			}
		})
	}
}

func TestOpenAIRetries(t *testing.T) {
	ok := response{status: 200, body: completion("tool_calls", toolCallMessage)}
	unavailable := response{status: 503, body: `{"error":{"message":"overloaded","type":"server_error"}}`}
	tests := []struct {
		name         string
		responses    []response
		maxRetries   int
		wantRequests int
		wantSleeps   []time.Duration
		wantErr      string // empty: success
		wantContext  bool   // the error wraps agent.ErrContextExceeded
	}{
		{
			name: "429 with Retry-After then success",
			responses: []response{
				{status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
				ok,
			},
			wantRequests: 2, wantSleeps: []time.Duration{7 * time.Second},
		},
		{
			name: "retry-after-ms wins",
			responses: []response{
				{status: 429, header: map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"}, body: `{"error":{"message":"slow down"}}`},
				ok,
			},
			wantRequests: 2, wantSleeps: []time.Duration{1500 * time.Millisecond},
		},
		{
			name:         "5xx back off exponentially",
			responses:    []response{unavailable, {status: 500, body: `{"error":{"message":"boom"}}`}, {status: 502, body: "bad gateway"}, ok},
			wantRequests: 4, wantSleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:         "connection dropped then success",
			responses:    []response{{hangup: true}, ok},
			wantRequests: 2, wantSleeps: []time.Duration{time.Second},
		},
		{
			name:         "400 not retried",
			responses:    []response{{status: 400, body: `{"error":{"message":"Invalid value for 'tool_choice'","type":"invalid_request_error","param":"tool_choice","code":null}}`}},
			wantRequests: 1,
			wantErr:      "openai: 400 Bad Request: Invalid value for 'tool_choice'",
		},
		{
			name:         "401 not retried",
			responses:    []response{{status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`}},
			wantRequests: 1,
			wantErr:      "openai refused the key in OPENAI_API_KEY: 401 Unauthorized from http://",
		},
		{
			name:         "400 whose error is a string not retried",
			responses:    []response{{status: 400, body: `{"error":"'messages' is required"}`}},
			wantRequests: 1,
			wantErr:      "openai: 400 Bad Request: 'messages' is required",
		},
		{
			name:         "empty choices retried like a 5xx",
			responses:    []response{{status: 200, body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5","choices":[]}`}, ok},
			wantRequests: 2, wantSleeps: []time.Duration{time.Second},
		},
		{
			name:         "empty choices until the retries run out",
			responses:    []response{{status: 200, body: `{"choices":[]}`}, {status: 200, body: `{"choices":null}`}},
			maxRetries:   1,
			wantRequests: 2, wantSleeps: []time.Duration{time.Second},
			wantErr: "openai: 200 OK: the response has no choices (gave up after 2 attempts)",
		},
		{
			name:         "404 not retried",
			responses:    []response{{status: 404, body: `{"error":{"message":"The model 'gpt-5' does not exist","code":"model_not_found"}}`}},
			wantRequests: 1,
			wantErr:      "openai: 404 Not Found: The model 'gpt-5' does not exist",
		},
		{
			name: "context length 400",
			responses: []response{{status: 400, body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",` +
				`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}},
			wantRequests: 1,
			wantErr:      "openai: 400 Bad Request: This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.: context window exceeded",
			wantContext:  true,
		},
		{
			name:         "vLLM context length 400",
			responses:    []response{{status: 400, body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}`}},
			wantRequests: 1,
			wantErr:      "context window exceeded",
			wantContext:  true,
		},
		{
			name:         "retries run out",
			responses:    []response{unavailable, unavailable, unavailable},
			maxRetries:   2,
			wantRequests: 3, wantSleeps: []time.Duration{time.Second, 2 * time.Second},
			wantErr: "openai: 503 Service Unavailable: overloaded (gave up after 3 attempts)",
		},
		{
			name:         "Retry-After longer than allowed",
			responses:    []response{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{"error":{"message":"quota"}}`}},
			wantRequests: 1,
			wantErr:      "openai: 429 Too Many Requests: quota (asks to retry after 1h0m0s, longer than 5m0s)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProvider(t, "/v1/chat/completions", tt.responses...)
			s := &sleeper{}
			var reported int
			m := newTestOpenAI(t, f, s, func(o *Options) {
				o.MaxRetries = tt.maxRetries
				o.OnError = func(error) { reported++ }
			})
			_, err := m.Query(context.Background(), testHistory, testTools)
			wantReported := tt.wantRequests
			if tt.wantErr == "" {
				wantReported-- // the last request succeeded
			}
			if reported != wantReported {
				t.Errorf("OnError called %d times, want %d (once per failed request)", reported, wantReported)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Query: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Query error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, agent.ErrContextExceeded); got != tt.wantContext {
				t.Errorf("errors.Is(err, ErrContextExceeded) = %v, want %v (err %v)", got, tt.wantContext, err)
			}
			if n := len(f.Requests()); n != tt.wantRequests {
				t.Errorf("%d requests, want %d", n, tt.wantRequests)
			}
			if diff := cmp.Diff(tt.wantSleeps, s.Sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAICancelMidRequest(t *testing.T) {
	f := newFakeProvider(t, "/v1/chat/completions", response{block: true})
	m := newTestOpenAI(t, f, &sleeper{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.received
		cancel()
	}()
	_, err := m.Query(ctx, testHistory, testTools)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Query error = %v, want context.Canceled", err)
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry after cancel)", n)
	}
}

func TestOpenAITextModeAndEnvironment(t *testing.T) {
	f := newFakeProvider(t, "/v1/chat/completions", response{status: 200, body: completion("stop", `{"role":"assistant","content":"`+"```bash\\nls\\n```"+`"}`)})
	env := map[string]string{"OPENAI_BASE_URL": f.srv.URL + "/v1", "OPENAI_API_KEY": "env-key"}
	m, err := New("openai/gpt-5", Options{TextMode: true, MaxOutputTokens: 4096, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !m.TextMode() {
		t.Error("TextMode() = false, want true")
	}
	if _, err := m.Query(context.Background(), testHistory[:2], testTools); err != nil {
		t.Fatal(err)
	}
	req := f.Requests()[0]
	if _, ok := req.body["tools"]; ok {
		t.Errorf("text mode sent tools: %v", req.body["tools"])
	}
	if got := req.body["max_completion_tokens"]; got != 4096.0 {
		t.Errorf("max_completion_tokens = %v, want 4096", got)
	}
	if got := req.header.Get("Authorization"); got != "Bearer env-key" {
		t.Errorf("Authorization %q, want the key from OPENAI_API_KEY", got)
	}
}

// TestOpenAIBaseURL checks that requests go under the configured base URL
// as given, as OpenAI-compatible servers expect: vLLM and Ollama serve the
// API under /v1, a proxy under a path of its own, some servers at the root.
func TestOpenAIBaseURL(t *testing.T) {
	tests := []struct {
		name string
		base string // appended to the server's URL
		dir  string // where the requests must go
	}{
		{"without /v1", "", "/"},
		{"with a slash", "/", "/"},
		{"with /v1", "/v1", "/v1/"},
		{"with /v1/", "/v1/", "/v1/"},
		{"with a path", "/proxy/openai/v1", "/proxy/openai/v1/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			chat := newFakeProvider(t, tt.dir+"chat/completions", response{status: 200, body: completion("stop", `{"role":"assistant","content":"hi"}`)})
			if _, err := newTestOpenAI(t, chat, &sleeper{}, func(o *Options) { o.BaseURL = chat.srv.URL + tt.base }).
				Query(context.Background(), testHistory, testTools); err != nil {
				t.Errorf("Query: %v", err)
			}
			models := newFakeProvider(t, "GET "+tt.dir+"models", response{status: 200, body: `{"object":"list","data":[]}`})
			if err := newTestOpenAI(t, models, &sleeper{}, func(o *Options) { o.BaseURL = models.srv.URL + tt.base }).
				Check(context.Background()); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}
