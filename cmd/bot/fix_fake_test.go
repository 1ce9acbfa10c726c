package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeCall is one scripted reply of fakeOpenAI: a tool call, or, with
// block set, no reply until the client gives up (after before ran).
type fakeCall struct {
	tool string
	args map[string]string
	// before runs when the request arrives, e.g. to cancel the run.
	before func()
	block  bool
	// status, when set, answers with that HTTP error instead of a reply.
	status int
}

// fakeOpenAI is an OpenAI-compatible /v1/chat/completions server that
// answers each request with the next scripted tool call and records the
// requests, so bot fix runs the real provider and SDK against it.
type fakeOpenAI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []fakeCall
	bodies []fakeRequest
	// served counts every request, the startup check of the key too.
	served int
}

// fakeRequest is the part of a chat completion request the tests check.
type fakeRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// lastContent is the text of the request's last message.
func (r fakeRequest) lastContent() string {
	if len(r.Messages) == 0 {
		return ""
	}
	b, _ := json.Marshal(r.Messages[len(r.Messages)-1].Content)
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

func newFakeOpenAI(t *testing.T, script ...fakeCall) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// environ points the OpenAI provider at the fake.
func (f *fakeOpenAI) environ() []string {
	return []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + f.srv.URL + "/v1", "AGENTFIX_MODEL=openai/gpt-5"}
}

func (f *fakeOpenAI) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.bodies...)
}

// calls is the number of requests the fake got, of any kind.
func (f *fakeOpenAI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.served++
	f.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" { // the startup check of the key
		if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
			f.t.Errorf("fake OpenAI: Authorization %q, want the configured key", got)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"gpt-5","object":"model","created":1700000000,"owned_by":"openai"}]}`)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("fake OpenAI: %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		f.t.Errorf("fake OpenAI: Authorization %q, want the configured key", got)
	}
	raw, _ := io.ReadAll(r.Body)
	var body fakeRequest
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake OpenAI: request is not JSON: %v", err)
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	n := len(f.bodies)
	var c fakeCall
	ok := n <= len(f.script)
	if ok {
		c = f.script[n-1]
	}
	f.mu.Unlock()
	if !ok {
		f.t.Errorf("fake OpenAI: request %d has no scripted reply", n)
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, http.StatusBadRequest)
		return
	}
	if c.before != nil {
		c.before()
	}
	if c.block {
		<-r.Context().Done()
		return
	}
	if c.status != 0 {
		http.Error(w, `{"error":{"message":"scripted failure","type":"server_error"}}`, c.status)
		return
	}
	args, _ := json.Marshal(c.args)
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": "gpt-5",
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": c.tool, "arguments": string(args)},
			}}},
		}},
		"usage": map[string]any{"prompt_tokens": 800, "completion_tokens": 100, "total_tokens": 900},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
