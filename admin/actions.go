package admin

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/agentfix/agentfix/agent"
)

// The tool names of DESIGN.md §7.
const (
	bashTool   = "bash"
	editorTool = "str_replace_editor"
	submitTool = "submit"
)

// call is an action as the page shows it: the tool, its main line (a bash
// command, or an editor command and path) and its other arguments.
type call struct {
	Tool string
	// Command is the bash command.
	Command string
	// Editor is the editor command and Path its path.
	Editor, Path string
	// Args are the remaining arguments, in a fixed order.
	Args []arg
	// BadArgs holds arguments that are not a JSON object, as recorded.
	BadArgs string
}

// arg is one argument of a call; Block shows it as preformatted text.
type arg struct {
	Name, Value string
	Block       bool
}

// editorOrder puts the editor's arguments in the order a reader wants them.
var editorOrder = map[string]int{"view_range": 1, "insert_line": 2, "old_str": 3, "new_str": 4, "file_text": 5}

func describeCall(c agent.ToolCall) call {
	out := call{Tool: c.Name}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args == nil {
		out.BadArgs = string(c.Arguments)
		return out
	}
	take := func(key string) string {
		s, ok := str(args[key])
		if ok {
			delete(args, key)
		}
		return s
	}
	switch c.Name {
	case bashTool:
		out.Command = take("command")
	case editorTool:
		out.Editor, out.Path = take("command"), take("path")
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		oi, oj := editorOrder[names[i]], editorOrder[names[j]]
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	for _, k := range names {
		v, ok := str(args[k])
		if !ok {
			v = compact(args[k])
		}
		out.Args = append(out.Args, arg{Name: k, Value: v, Block: ok && (k != "path" && k != "command")})
	}
	return out
}

// str returns a JSON string's value.
func str(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
