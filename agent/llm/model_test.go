package llm

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

func TestNew(t *testing.T) {
	key := Options{APIKey: "k", Getenv: noEnv}
	tests := []struct {
		name    string
		model   string
		opts    Options
		wantErr string
	}{
		{"openai", "openai/gpt-5", key, ""},
		{"anthropic", "anthropic/claude-sonnet-4-5", key, ""},
		{"dated version", "anthropic/claude-sonnet-4-5-20250929", key, ""},
		{"unknown provider", "gemini/gemini-2.5-pro", key,
			`model "gemini/gemini-2.5-pro": want provider/model with provider one of anthropic/MODEL, openai/MODEL`},
		{"no provider", "gpt-5", key, `model "gpt-5": want provider/model with provider one of anthropic/MODEL, openai/MODEL`},
		{"no model", "openai/", key, `model "openai/": want provider/model with provider one of anthropic/MODEL, openai/MODEL`},
		{"unpriced allowed", "openai/qwen3-coder", Options{APIKey: "k", Getenv: noEnv, AllowUnpriced: true}, ""},
		{"priced by configuration", "openai/qwen3-coder", Options{APIKey: "k", Getenv: noEnv, Prices: map[string]Price{"openai/qwen3-coder": {Input: 0.2, Output: 0.8}}}, ""},
		{"bad configured price", "openai/gpt-5", Options{APIKey: "k", Getenv: noEnv, Prices: map[string]Price{"openai/gpt-5": {Input: -1, Output: 1}}},
			"model openai/gpt-5: price of openai/gpt-5: negative price"},
		{"no OpenAI key", "openai/gpt-5", Options{Getenv: noEnv},
			"model openai/gpt-5: no API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server that needs none)"},
		{"OpenAI-compatible server without a key", "openai/llama", Options{BaseURL: "http://127.0.0.1:1/v1", AllowUnpriced: true, Getenv: noEnv}, ""},
		{"no Anthropic key", "anthropic/claude-sonnet-4-5", Options{Getenv: noEnv}, "model anthropic/claude-sonnet-4-5: no API key: set ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.model, tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("New error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if m.Name() != tt.model {
				t.Errorf("Name() = %q, want %q", m.Name(), tt.model)
			}
		})
	}
}

func TestMaxOutputTokens(t *testing.T) {
	tests := []struct {
		model string
		opt   int64
		want  int64
	}{
		{"openai/gpt-5", 0, 0}, // the server's default
		{"openai/gpt-5", 4096, 4096},
		{"anthropic/claude-sonnet-4-5", 0, DefaultAnthropicMaxTokens},
		{"anthropic/claude-sonnet-4-5", 1000, 1000},
	}
	for _, tt := range tests {
		m, err := New(tt.model, Options{APIKey: "k", Getenv: noEnv, MaxOutputTokens: tt.opt})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MaxOutputTokens(); got != tt.want {
			t.Errorf("%s with MaxOutputTokens %d: MaxOutputTokens() = %d, want %d", tt.model, tt.opt, got, tt.want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-golden +got); run go test -update if the change is intended:\n%s", path, diff)
	}
}

func TestUnpricedModelMessages(t *testing.T) {
	tests := []struct {
		golden, model string
	}{
		{"unpriced_typo", "openai/gpt5"},
		{"unpriced_typo_anthropic", "anthropic/claude-sonet-4-5"},
		{"unpriced_unknown", "openai/qwen3-coder"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			_, err := New(tt.model, Options{APIKey: "k", Getenv: noEnv})
			if err == nil {
				t.Fatalf("New(%q) succeeded, want the unpriced model refused", tt.model)
			}
			golden(t, tt.golden, err.Error()+"\n")
		})
	}
}

func TestClosest(t *testing.T) {
	names := []string{"openai/gpt-5", "openai/gpt-5.1", "openai/gpt-5-mini", "openai/gpt-4o", "anthropic/claude-sonnet-4-5"}
	tests := []struct {
		name string
		want []string
	}{
		{"openai/gpt5", []string{"openai/gpt-5"}},
		{"openai/gpt-5-min", []string{"openai/gpt-5-mini", "openai/gpt-5", "openai/gpt-5.1"}},
		{"anthropic/claude-sonet-4-5", []string{"anthropic/claude-sonnet-4-5"}},
		{"openai/qwen3-coder", nil},
		{"ö/ü", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, closest(tt.name, names, 3)); diff != "" {
				t.Errorf("closest(%q) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"gpt5", "gpt-5", 1}, {"kitten", "sitting", 3}, {"äb", "ab", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestPrices(t *testing.T) {
	table, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.DateOnly, table.AsOf); err != nil {
		t.Errorf("as_of %q is not a date: %v", table.AsOf, err)
	}
	if len(table.Models) < 10 {
		t.Errorf("the table has %d models, want the common ones", len(table.Models))
	}
	tests := []struct {
		name      string
		model     string
		overrides map[string]Price
		want      Price
		found     bool
	}{
		{"exact", "openai/gpt-5", nil, Price{Input: 1.25, Output: 10, CacheRead: 0.125}, true},
		{"dated", "openai/gpt-5-2025-08-07", nil, Price{Input: 1.25, Output: 10, CacheRead: 0.125}, true},
		{"override", "openai/gpt-5", map[string]Price{"openai/gpt-5": {Input: 1, Output: 2}}, Price{Input: 1, Output: 2}, true},
		{"override of the undated name", "anthropic/claude-haiku-4-5-20251001", map[string]Price{"anthropic/claude-haiku-4-5": {Input: 9, Output: 9}}, Price{Input: 9, Output: 9}, true},
		{"unknown", "openai/unknown", nil, Price{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := lookup(tt.model, table, tt.overrides)
			if err != nil {
				t.Fatal(err)
			}
			if found != tt.found {
				t.Errorf("found = %v, want %v", found, tt.found)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("price (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPriceCost(t *testing.T) {
	u := agent.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 500_000}
	tests := []struct {
		name  string
		price Price
		want  float64
	}{
		{"all four prices", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, 3 + 1.5 + 0.6 + 1.875},
		{"no cache prices bill the input price", Price{Input: 2, Output: 8}, 2 + 0.8 + 4 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.price.Cost(u); got != tt.want {
				t.Errorf("Cost = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnpricedModelCostsNothing(t *testing.T) {
	f := newFakeProvider(t, "/v1/chat/completions", response{status: 200, body: completion("stop", `{"role":"assistant","content":"hi"}`)})
	m, err := New("openai/qwen3-coder", Options{BaseURL: f.srv.URL + "/v1", AllowUnpriced: true, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Unpriced() {
		t.Error("Unpriced() = false, want true")
	}
	reply, err := m.Query(context.Background(), testHistory, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.CostUSD != 0 || reply.Usage.Total() != 1250 {
		t.Errorf("cost %v, tokens %d; want 0 and the 1250 tokens counted", reply.CostUSD, reply.Usage.Total())
	}
}

func TestScripted(t *testing.T) {
	boom := errors.New("boom")
	s := NewScripted("t", false,
		Turn{Reply: agent.Reply{Message: agent.Message{Content: "one"}}},
		Turn{Err: boom},
	)
	r, err := s.Query(context.Background(), testHistory[:1], testTools)
	if err != nil || r.Message.Role != agent.RoleAssistant || r.Message.Content != "one" {
		t.Errorf("turn 1 = %+v, %v; want an assistant message \"one\"", r.Message, err)
	}
	if _, err := s.Query(context.Background(), testHistory[:2], nil); !errors.Is(err, boom) {
		t.Errorf("turn 2 error = %v, want the scripted error", err)
	}
	if _, err := s.Query(context.Background(), testHistory, nil); err == nil || err.Error() != "scripted/t: no reply left after 2" {
		t.Errorf("turn 3 error = %v, want no reply left", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Query(ctx, testHistory, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled query error = %v, want context.Canceled", err)
	}
	var lens []int
	for _, c := range s.Calls() {
		lens = append(lens, len(c.Messages))
	}
	if diff := cmp.Diff([]int{1, 2, 4}, lens); diff != "" {
		t.Errorf("recorded calls' message counts (-want +got):\n%s", diff)
	}
}

func TestNewReplay(t *testing.T) {
	if _, err := NewReplay(agent.Trajectory{}); err == nil || err.Error() != "replay: the trajectory has no steps" {
		t.Errorf("empty trajectory error = %v", err)
	}
	tr := agent.Trajectory{
		Header: agent.Header{Model: "anthropic/claude-sonnet-4-5", TextMode: true},
		Steps: []agent.Step{
			{Step: 1, Messages: []agent.Message{{Role: agent.RoleAssistant, Content: "a"}, {Role: agent.RoleUser, Content: "out"}},
				FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 5}, CostUSD: 0.5},
			{Step: 2},
		},
	}
	s, err := NewReplay(tr)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "replay/anthropic/claude-sonnet-4-5" || !s.TextMode() {
		t.Errorf("replay name %q text mode %v", s.Name(), s.TextMode())
	}
	r, err := s.Query(context.Background(), testHistory, nil)
	want := agent.Reply{Message: agent.Message{Role: agent.RoleAssistant, Content: "a"}, FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 5}, CostUSD: 0.5}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("replayed reply (-want +got):\n%s", diff)
	}
	if _, err := s.Query(context.Background(), testHistory, nil); err == nil || err.Error() != "replay: step 2 recorded no reply" {
		t.Errorf("replayed failed step error = %v", err)
	}
}
