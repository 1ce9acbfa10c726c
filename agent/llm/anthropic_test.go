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

func anthropicMessage(stop, content string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":` + content + `,
	  "stop_reason":"` + stop + `","stop_sequence":null,
	  "usage":{"input_tokens":50,"output_tokens":20,"cache_read_input_tokens":3000,"cache_creation_input_tokens":400}}`
}

const toolUseContent = `[{"type":"text","text":"Running the tests."},{"type":"tool_use","id":"toolu_2","name":"bash","input":{"command":"go test ./..."}}]`

func newTestAnthropic(t *testing.T, f *fakeProvider, s *sleeper) *Model {
	t.Helper()
	m, err := New("anthropic/claude-sonnet-4-5", Options{APIKey: "test-key", BaseURL: f.srv.URL, Sleep: s.Sleep, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAnthropicCacheControlAndToolUse(t *testing.T) {
	f := newFakeProvider(t, "/v1/messages", response{status: 200, body: anthropicMessage("tool_use", toolUseContent)})
	m := newTestAnthropic(t, f, &sleeper{})
	history := append(append([]agent.Message(nil), testHistory...),
		agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: "toolu_a", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			{ID: "toolu_b", Name: "bash", Arguments: json.RawMessage(`"{\"command\": \"cat"`)},
		}},
		agent.Message{Role: agent.RoleTool, Content: "a.go", ToolCallID: "toolu_a"},
		agent.Message{Role: agent.RoleTool, Content: "", ToolCallID: "toolu_b"},
		agent.Message{Role: agent.RoleAssistant, Content: "No call this time."},
		agent.Message{Role: agent.RoleUser, Content: "Your last reply could not be used."},
	)
	reply, err := m.Query(context.Background(), history, testTools)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Reply{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "Running the tests.",
			ToolCalls: []agent.ToolCall{{ID: "toolu_2", Name: "bash", Arguments: json.RawMessage(`{"command":"go test ./..."}`)}}},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{InputTokens: 50, OutputTokens: 20, CacheReadTokens: 3000, CacheWriteTokens: 400},
		CostUSD:      (50*3.0 + 20*15.0 + 3000*0.30 + 400*3.75) / 1e6,
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
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 16384,
	  "system": [{"type": "text", "text": "You fix issues.", "cache_control": {"type": "ephemeral"}}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "Fix #1."}]},
	    {"role": "assistant", "content": [
	      {"type": "text", "text": "Looking."},
	      {"type": "tool_use", "id": "call_0", "name": "bash", "input": {"command": "pwd"}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "call_0", "is_error": false, "content": [{"type": "text", "text": "/workspace"}]}]},
	    {"role": "assistant", "content": [
	      {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}},
	      {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {"raw_arguments": "\"{\\\"command\\\": \\\"cat\""}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_a", "is_error": false, "content": [{"type": "text", "text": "a.go"}]},
	      {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": false, "content": [{"type": "text", "text": "(empty)"}],
	       "cache_control": {"type": "ephemeral"}}]},
	    {"role": "assistant", "content": [{"type": "text", "text": "No call this time."}]},
	    {"role": "user", "content": [{"type": "text", "text": "Your last reply could not be used.", "cache_control": {"type": "ephemeral"}}]}
	  ],
	  "tools": [{"name": "bash", "description": "Run a command.",
	    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
	}`), &wantBody); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBody, reqs[0].body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got := reqs[0].header.Get("X-Api-Key"); got != "test-key" {
		t.Errorf("X-Api-Key %q, want the key", got)
	}
	if reqs[0].header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
}

func TestAnthropicToolUseRoundTrip(t *testing.T) {
	// The reply of one query goes back in the next as history: its tool_use
	// must reappear unchanged, answered by a tool_result with its id.
	f := newFakeProvider(t, "/v1/messages",
		response{status: 200, body: anthropicMessage("tool_use", toolUseContent)},
		response{status: 200, body: anthropicMessage("end_turn", `[{"type":"text","text":"ok"}]`)},
	)
	m := newTestAnthropic(t, f, &sleeper{})
	history := append([]agent.Message(nil), testHistory[:2]...)
	reply, err := m.Query(context.Background(), history, testTools)
	if err != nil {
		t.Fatal(err)
	}
	history = append(history, reply.Message, agent.Message{Role: agent.RoleTool, Content: "PASS", ToolCallID: reply.Message.ToolCalls[0].ID})
	if _, err := m.Query(context.Background(), history, testTools); err != nil {
		t.Fatal(err)
	}
	msgs := f.Requests()[1].body["messages"].([]any)
	got := msgs[1:]
	var want []any
	if err := json.Unmarshal([]byte(`[
	  {"role": "assistant", "content": [
	    {"type": "text", "text": "Running the tests."},
	    {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "go test ./..."}}]},
	  {"role": "user", "content": [
	    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": false, "content": [{"type": "text", "text": "PASS"}],
	     "cache_control": {"type": "ephemeral"}}]}
	]`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second request's messages after the first (-want +got):\n%s", diff)
	}
}

func TestAnthropicStopReasons(t *testing.T) {
	tests := []struct {
		stop string
		want string
	}{
		{"max_tokens", agent.FinishLength},
		{"model_context_window_exceeded", agent.FinishLength},
		{"end_turn", agent.FinishStop},
		{"stop_sequence", agent.FinishStop},
		{"tool_use", agent.FinishToolCalls},
		{"refusal", "refusal"},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			f := newFakeProvider(t, "/v1/messages", response{status: 200, body: anthropicMessage(tt.stop, `[{"type":"text","text":"cut"}]`)})
			reply, err := newTestAnthropic(t, f, &sleeper{}).Query(context.Background(), testHistory, testTools)
			if err != nil {
				t.Fatal(err)
			}
			if reply.FinishReason != tt.want {
				t.Errorf("finish reason %q, want %q", reply.FinishReason, tt.want)
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	ok := response{status: 200, body: anthropicMessage("end_turn", `[{"type":"text","text":"ok"}]`)}
	tests := []struct {
		name         string
		responses    []response
		wantRequests int
		wantSleeps   []time.Duration
		wantErr      string
		wantContext  bool
	}{
		{
			name:         "overloaded then success",
			responses:    []response{{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, ok},
			wantRequests: 2, wantSleeps: []time.Duration{time.Second},
		},
		{
			name: "rate limited with Retry-After then success",
			responses: []response{
				{status: 429, header: map[string]string{"Retry-After": "12"}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your rate limit"}}`},
				ok,
			},
			wantRequests: 2, wantSleeps: []time.Duration{12 * time.Second},
		},
		{
			name:         "prompt too long",
			responses:    []response{{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`}},
			wantRequests: 1,
			wantErr:      "anthropic: 400 Bad Request: invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum: context window exceeded",
			wantContext:  true,
		},
		{
			name:         "authentication not retried",
			responses:    []response{{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}},
			wantRequests: 1,
			wantErr:      "anthropic refused the key in ANTHROPIC_API_KEY: 401 Unauthorized from http://",
		},
		{
			name:         "permission not retried",
			responses:    []response{{status: 403, body: `{"type":"error","error":{"type":"permission_error","message":"no access"}}`}},
			wantRequests: 1,
			wantErr:      "anthropic refused the key in ANTHROPIC_API_KEY: 403 Forbidden from http://",
		},
		{
			name:         "empty content retried like a 5xx",
			responses:    []response{{status: 200, body: anthropicMessage("end_turn", `[]`)}, ok},
			wantRequests: 2, wantSleeps: []time.Duration{time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProvider(t, "/v1/messages", tt.responses...)
			s := &sleeper{}
			_, err := newTestAnthropic(t, f, s).Query(context.Background(), testHistory, testTools)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Query: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Query error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, agent.ErrContextExceeded); got != tt.wantContext {
				t.Errorf("errors.Is(err, ErrContextExceeded) = %v, want %v", got, tt.wantContext)
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
