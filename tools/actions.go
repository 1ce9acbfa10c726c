package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentfix/agentfix/agent"
)

// textCallID is the id of the call parsed from a text-mode reply.
const textCallID = "text"

// Actions returns the actions of an assistant message. In tool mode every
// tool call must name a tool and carry a JSON object of its arguments with
// the required ones present; in text mode the message text must hold
// exactly one fenced bash block. Anything else is an *agent.FormatError
// whose message says precisely what was wrong.
func (e *Env) Actions(msg agent.Message) ([]agent.ToolCall, error) {
	if e.opts.TextMode {
		if len(msg.ToolCalls) > 0 {
			return nil, formatErr("tool calls are not available here; put the one command to run in a ```bash block")
		}
		return parseText(msg.Content)
	}
	if len(msg.ToolCalls) == 0 {
		return nil, formatErr("your reply has no tool call; call one of the tools (%s)", strings.Join(toolNames, ", "))
	}
	for _, c := range msg.ToolCalls {
		if _, err := decodeCall(c); err != nil {
			return nil, err
		}
	}
	return msg.ToolCalls, nil
}

func formatErr(format string, args ...any) *agent.FormatError {
	return &agent.FormatError{Msg: fmt.Sprintf(format, args...)}
}

// decodeCall checks one tool call and returns its decoded arguments: a
// bashArgs, editorArgs or submitArgs.
func decodeCall(c agent.ToolCall) (any, error) {
	switch c.Name {
	case BashTool:
		var a bashArgs
		if err := decodeArgs(c.Name, c.Arguments, &a, "command"); err != nil {
			return nil, err
		}
		if a.Command == nil {
			return nil, missingArg(c.Name, "command")
		}
		return a, nil
	case EditorTool:
		var a editorArgs
		if err := decodeArgs(c.Name, c.Arguments, &a, "command", "path", "file_text", "old_str", "new_str", "insert_line", "view_range"); err != nil {
			return nil, err
		}
		if a.Command == nil {
			return nil, missingArg(c.Name, "command")
		}
		if a.Path == nil {
			return nil, missingArg(c.Name, "path")
		}
		return a, nil
	case SubmitTool:
		var a submitArgs
		if err := decodeArgs(c.Name, c.Arguments, &a, "summary"); err != nil {
			return nil, err
		}
		return a, nil
	}
	return nil, formatErr("there is no tool named %q; the tools are %s", c.Name, strings.Join(toolNames, ", "))
}

func missingArg(tool, arg string) error {
	return formatErr("the %s call lacks the required argument %q", tool, arg)
}

// decodeArgs decodes raw strictly into dst; names are the tool's argument
// names, for the message about an unknown one. Empty arguments are {}.
func decodeArgs(tool string, raw json.RawMessage, dst any, names ...string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return formatErr("the arguments of %s must be one JSON object, but more follows it", tool)
		}
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return formatErr("the arguments of %s are not valid JSON: %v (at byte %d)", tool, syntax, syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return formatErr("the arguments of %s are not valid JSON: they end too early", tool)
	case errors.As(err, &typ) && typ.Field == "":
		return formatErr("the arguments of %s must be a JSON object, not %s", tool, withArticle(typ.Value))
	case errors.As(err, &typ):
		return formatErr("the argument %q of %s must be %s, not %s", typ.Field, tool, jsonKind(typ.Field), withArticle(typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return formatErr("%s has no argument %s; its arguments are: %s", tool, field, strings.Join(names, ", "))
	}
	return formatErr("the arguments of %s cannot be read: %v", tool, err)
}

// withArticle puts "a" or "an" before a JSON kind such as "array".
func withArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// jsonKind names the JSON type an argument needs.
func jsonKind(field string) string {
	switch field {
	case "insert_line":
		return "an integer"
	case "view_range":
		return "an array of two integers"
	}
	return "a string"
}

// parseText returns the action of a text-mode reply: the content of its one
// ```bash block, as a bash call, or a submit call when the block is
// `submit` or `submit <summary>`.
func parseText(content string) ([]agent.ToolCall, error) {
	blocks, others, err := bashBlocks(content)
	if err != nil {
		return nil, err
	}
	switch {
	case len(blocks) == 0 && len(others) > 0:
		return nil, formatErr("your reply has no ```bash block (found a block tagged %q); put the one command to run in a block that starts with ```bash", others[0])
	case len(blocks) == 0:
		return nil, formatErr("your reply has no ```bash block; put the one command to run in a fenced block that starts with ```bash")
	case len(blocks) > 1:
		return nil, formatErr("your reply has %d ```bash blocks, but it must have exactly one; put one command in one block (chain steps with &&) and run the next one in your next reply", len(blocks))
	}
	cmd := strings.TrimSpace(blocks[0])
	if cmd == "" {
		return nil, formatErr("the ```bash block in your reply is empty")
	}
	var call agent.ToolCall
	if rest, ok := strings.CutPrefix(cmd, "submit"); ok && (rest == "" || strings.ContainsAny(rest[:1], " \t\n")) {
		call = newCall(SubmitTool, map[string]string{"summary": strings.TrimSpace(rest)})
	} else {
		call = newCall(BashTool, map[string]string{"command": cmd})
	}
	return []agent.ToolCall{call}, nil
}

func newCall(name string, args map[string]string) agent.ToolCall {
	raw, _ := json.Marshal(args) // a map of strings always marshals
	return agent.ToolCall{ID: textCallID, Name: name, Arguments: raw}
}

// bashBlocks returns the contents of the fenced blocks tagged bash, and the
// tags of other fenced blocks. A fence is a line of three or more backticks
// (up to three spaces of indentation); a block ends at a line of at least
// as many backticks and nothing else.
func bashBlocks(content string) (blocks, others []string, err error) {
	lines := strings.Split(content, "\n")
	for i := 0; i < len(lines); i++ {
		ticks, info, ok := openFence(lines[i])
		if !ok {
			continue
		}
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if closesFence(lines[j], ticks) {
				end = j
				break
			}
		}
		lang, _, _ := strings.Cut(info, " ")
		if lang != "bash" {
			if lang != "" {
				others = append(others, lang)
			}
			if end < 0 {
				break
			}
			i = end
			continue
		}
		if end < 0 {
			return nil, nil, formatErr("the ```bash block in your reply is not closed; end it with a line of ```")
		}
		blocks = append(blocks, strings.Join(lines[i+1:end], "\n"))
		i = end
	}
	return blocks, others, nil
}

// openFence reports whether line opens a fenced block, with its backtick
// count and info string.
func openFence(line string) (ticks int, info string, ok bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return 0, "", false
	}
	for ticks < len(s) && s[ticks] == '`' {
		ticks++
	}
	if ticks < 3 {
		return 0, "", false
	}
	info = strings.TrimSpace(s[ticks:])
	if strings.Contains(info, "`") {
		return 0, "", false
	}
	return ticks, info, true
}

// closesFence reports whether line closes a block opened with ticks
// backticks.
func closesFence(line string, ticks int) bool {
	s := strings.TrimSpace(line)
	return len(s) >= ticks && strings.Trim(s, "`") == ""
}
