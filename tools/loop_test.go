package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentfix/agentfix/agent"
)

// scriptModel replies with one scripted tool call per query and records
// the tools and last message it saw.
type scriptModel struct {
	mu    sync.Mutex
	calls []agent.ToolCall
	seen  []string // the last message of each query
}

func (m *scriptModel) Name() string { return "test/script" }

func (m *scriptModel) Query(_ context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, messages[len(messages)-1].Content)
	if len(tools) != 3 {
		return agent.Reply{}, fmt.Errorf("got %d tools, want 3", len(tools))
	}
	if len(m.calls) == 0 {
		return agent.Reply{}, fmt.Errorf("script exhausted")
	}
	c := m.calls[0]
	m.calls = m.calls[1:]
	c.ID = fmt.Sprintf("call_%d", len(m.seen))
	return agent.Reply{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{c}}, FinishReason: agent.FinishToolCalls}, nil
}

func TestEnvInTheAgentLoop(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.TestCommand = "sh run_tests.sh" })
	model := &scriptModel{calls: []agent.ToolCall{
		call(EditorTool, ed("view", "calc/calc.go")),
		call(BashTool, map[string]string{"command": "echo 'print(1)' > reproduce.py && sh run_tests.sh"}),
		call(EditorTool, ed("str_replace", "/workspace/calc/calc.go", "old_str", "\treturn a - b", "new_str", "\treturn a + b")),
		call(SubmitTool, map[string]string{}),
		call(BashTool, map[string]string{"command": "rm reproduce.py"}),
		call(SubmitTool, map[string]string{"summary": "Add now adds; run_tests.sh passes."}),
	}}
	a, err := agent.New(model, e.Env, agent.WithConfig(agent.Config{MaxSteps: 10}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agent.Task{Repo: "example/calc", Issue: 1, Title: "Add subtracts", Body: "Add(1, 2) returns -1."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.Submitted || res.Summary != "Add now adds; run_tests.sh passes." {
		t.Errorf("result %s %q (%s), want submitted with the summary", res.Status, res.Summary, res.Reason)
	}
	wantPatch := gitT(t, e.wt.Dir(), "diff", e.wt.Base())
	if res.Patch != wantPatch+"\n" || !strings.Contains(res.Patch, "+\treturn a + b") || strings.Contains(res.Patch, "reproduce.py") {
		t.Errorf("patch:\n%s\nwant:\n%s", res.Patch, wantPatch)
	}
	review := model.seen[4] // the tool result of the first submit
	if !strings.Contains(review, "Facts the harness checked") || !strings.Contains(review, "New files: reproduce.py") || !strings.Contains(review, "`sh run_tests.sh` passed") {
		t.Errorf("the model did not get the review message after the first submit:\n%s", review)
	}
}

func TestEnvAutosubmitAfterTheStepLimit(t *testing.T) {
	e := newTestEnv(t, nil)
	model := &scriptModel{calls: []agent.ToolCall{
		call(EditorTool, ed("str_replace", "calc/calc.go", "old_str", "a - b", "new_str", "a + b")),
		call(SubmitTool, map[string]string{"summary": "fixed"}),
		call(BashTool, map[string]string{"command": "ls"}),
	}}
	a, err := agent.New(model, e.Env, agent.WithConfig(agent.Config{MaxSteps: 2}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agent.Task{Repo: "example/calc", Title: "Add subtracts"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.Autosubmitted || !strings.Contains(res.Patch, "+\treturn a + b") {
		t.Errorf("result %s (%s), patch %q; want autosubmitted with the fix", res.Status, res.Reason, res.Patch)
	}
}
