package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/agent"
	"github.com/google/go-cmp/cmp"
)

func rawCall(name, args string) agent.ToolCall {
	return agent.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)}
}

func TestActionsToolMode(t *testing.T) {
	e := &Env{}
	valid := []agent.ToolCall{
		rawCall("bash", `{"command": "ls"}`),
		rawCall("str_replace_editor", `{"command": "view", "path": "a.go", "view_range": [1, -1]}`),
		rawCall("submit", `{}`),
		rawCall("submit", ``),
		rawCall("submit", `{"summary": "done"}`),
	}
	for _, c := range valid {
		got, err := e.Actions(agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{c}})
		if err != nil || len(got) != 1 {
			t.Errorf("Actions(%s %s) = %v, %v; want the call", c.Name, c.Arguments, got, err)
		}
	}

	invalid := []struct {
		name  string
		calls []agent.ToolCall
	}{
		{"no tool call", nil},
		{"unknown tool", []agent.ToolCall{rawCall("python", `{"code": "1"}`)}},
		{"invalid JSON", []agent.ToolCall{rawCall("bash", `{"command": "ls"`)}},
		{"JSON syntax error", []agent.ToolCall{rawCall("bash", `{"command": ls}`)}},
		{"not an object", []agent.ToolCall{rawCall("bash", `"ls"`)}},
		{"trailing data", []agent.ToolCall{rawCall("bash", `{"command": "ls"} {"command": "pwd"}`)}},
		{"missing command", []agent.ToolCall{rawCall("bash", `{}`)}},
		{"null command", []agent.ToolCall{rawCall("bash", `{"command": null}`)}},
		{"wrong type", []agent.ToolCall{rawCall("bash", `{"command": 42}`)}},
		{"unknown argument", []agent.ToolCall{rawCall("bash", `{"cmd": "ls"}`)}},
		{"editor without path", []agent.ToolCall{rawCall("str_replace_editor", `{"command": "view"}`)}},
		{"editor without command", []agent.ToolCall{rawCall("str_replace_editor", `{"path": "a.go"}`)}},
		{"insert_line not an integer", []agent.ToolCall{rawCall("str_replace_editor", `{"command": "insert", "path": "a", "insert_line": "3", "new_str": "x"}`)}},
		{"view_range not an array", []agent.ToolCall{rawCall("str_replace_editor", `{"command": "view", "path": "a", "view_range": "1-5"}`)}},
		{"summary not a string", []agent.ToolCall{rawCall("submit", `{"summary": ["a"]}`)}},
		{"second call invalid", []agent.ToolCall{rawCall("bash", `{"command": "ls"}`), rawCall("bash", `{}`)}},
	}
	var report strings.Builder
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Actions(agent.Message{Role: agent.RoleAssistant, ToolCalls: tt.calls})
			var fe *agent.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *agent.FormatError", err)
			}
			fmt.Fprintf(&report, "%s:\n\t%s\n", tt.name, fe.Msg)
		})
	}
	golden(t, "format_errors_tool_mode", report.String())
}

func TestActionsTextMode(t *testing.T) {
	e := &Env{opts: Options{TextMode: true}}
	tests := []struct {
		name    string
		content string
		want    *agent.ToolCall // nil: a format error
	}{
		{"one bash block", "I'll list files.\n\n```bash\nls -la\n```\n", &agent.ToolCall{ID: "text", Name: "bash", Arguments: json.RawMessage(`{"command":"ls -la"}`)}},
		{"multi-line command", "```bash\ncd calc &&\n  go test ./...\n```", &agent.ToolCall{ID: "text", Name: "bash", Arguments: json.RawMessage(`{"command":"cd calc \u0026\u0026\n  go test ./..."}`)}},
		{"other blocks ignored", "Here is code:\n```go\nfunc main() {}\n```\nNow:\n```bash\ngo build\n```", &agent.ToolCall{ID: "text", Name: "bash", Arguments: json.RawMessage(`{"command":"go build"}`)}},
		{"longer fence", "````bash\necho '```'\n````", &agent.ToolCall{ID: "text", Name: "bash", Arguments: json.RawMessage(`{"command":"echo '` + "```" + `'"}`)}},
		{"submit alone", "Done.\n```bash\nsubmit\n```", &agent.ToolCall{ID: "text", Name: "submit", Arguments: json.RawMessage(`{"summary":""}`)}},
		{"submit with summary", "```bash\nsubmit Fixed Add; go test passes.\n```", &agent.ToolCall{ID: "text", Name: "submit", Arguments: json.RawMessage(`{"summary":"Fixed Add; go test passes."}`)}},
		{"submit multi-line summary", "```bash\nsubmit Fixed Add.\nVerified with go test.\n```", &agent.ToolCall{ID: "text", Name: "submit", Arguments: json.RawMessage(`{"summary":"Fixed Add.\nVerified with go test."}`)}},
		{"submitter is a command", "```bash\nsubmitter --help\n```", &agent.ToolCall{ID: "text", Name: "bash", Arguments: json.RawMessage(`{"command":"submitter --help"}`)}},
		{"no block", "I think the bug is in calc.go.", nil},
		{"sh block only", "```sh\nls\n```", nil},
		{"two blocks", "```bash\nls\n```\nand\n```bash\npwd\n```", nil},
		{"empty block", "```bash\n\n```", nil},
		{"unclosed block", "```bash\nls -la\n", nil},
	}
	var report strings.Builder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Actions(agent.Message{Role: agent.RoleAssistant, Content: tt.content})
			if tt.want == nil {
				var fe *agent.FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("Actions = %v, %v; want a *agent.FormatError", got, err)
				}
				fmt.Fprintf(&report, "%s:\n\t%s\n", tt.name, fe.Msg)
				return
			}
			if err != nil {
				t.Fatalf("Actions: %v", err)
			}
			if diff := cmp.Diff([]agent.ToolCall{*tt.want}, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("tool calls in text mode", func(t *testing.T) {
		_, err := e.Actions(agent.Message{ToolCalls: []agent.ToolCall{rawCall("bash", `{"command":"ls"}`)}})
		var fe *agent.FormatError
		if !errors.As(err, &fe) {
			t.Errorf("err = %v, want a *agent.FormatError", err)
		}
	})
	golden(t, "format_errors_text_mode", report.String())
}
