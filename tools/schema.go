package tools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentfix/agentfix/agent"
)

// Tool names (DESIGN.md §7; external clients and tests rely on them).
const (
	BashTool   = "bash"
	EditorTool = "str_replace_editor"
	SubmitTool = "submit"
)

// toolNames lists the tools in the order Tools returns them.
var toolNames = []string{BashTool, EditorTool, SubmitTool}

// bashDescription is the bash tool's description, with each command's time
// limit and the cap on its output.
func bashDescription(timeout time.Duration, outputLimit int) string {
	return `Run a bash command in /workspace, the repository root, and get its output (stdout and stderr together) and exit code.
* Each call runs in a fresh shell that starts in /workspace: cd and export do not persist, so chain commands that belong together, e.g. ` + "`cd sub && go test ./...`" + `.
* There is no network and no terminal. Interactive programs (editors, pagers, top, REPLs, git commands that open an editor) are refused; use non-interactive commands and flags.
* Each command may run for ` + agent.HumanDuration(timeout) + `; then it is killed with every process it started. Processes it starts in the background end with it.
* The output ends with a line ` + "`[exit code N]`" + `. A pipeline's exit code is its last command's: start with ` + "`set -o pipefail`" + ` (e.g. ` + "`set -o pipefail; go test ./... 2>&1 | tail -50`" + `) to see an earlier failure.
* Output longer than ` + strconv.Itoa(outputLimit) + ` bytes is cut to its beginning and end; narrow what you print with grep, head, tail or sed -n.`
}

const bashSchema = `{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "description": "The bash command to run."
    }
  },
  "required": ["command"],
  "additionalProperties": false
}`

const editorDescription = `View, create and edit files in the repository.
* Paths are relative to /workspace or absolute under it; paths outside the repository are refused.
* view: on a file, shows it with line numbers like ` + "`cat -n`" + `; view_range [start, end] shows lines start to end, end -1 meaning the end of the file. On a directory, lists the files and directories up to 2 levels deep, hidden ones excluded.
* create: writes file_text to a new file (parent directories are created). It refuses to overwrite an existing file.
* str_replace: replaces old_str with new_str (empty new_str deletes old_str). old_str must match exactly one place in the file, character for character, including indentation (tabs stay tabs) and whitespace; include enough lines around the change to make it unique.
* insert: inserts new_str after line insert_line (0 inserts at the top of the file).
* undo_edit: reverts the last edit this tool made to the file; call it again to go back further.
* After each edit the changed region is shown with line numbers: check it.
* A view or result longer than %d bytes is cut in the middle; view parts of a long file with view_range.`

const editorSchema = `{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
      "description": "The command to run."
    },
    "path": {
      "type": "string",
      "description": "The file or directory, relative to /workspace or absolute under it, e.g. src/main.go or /workspace/src/main.go."
    },
    "file_text": {
      "type": "string",
      "description": "create: the content of the new file."
    },
    "old_str": {
      "type": "string",
      "description": "str_replace: the exact text to replace; it must occur exactly once in the file."
    },
    "new_str": {
      "type": "string",
      "description": "str_replace: the replacement text (empty to delete old_str). insert: the text to insert."
    },
    "insert_line": {
      "type": "integer",
      "description": "insert: new_str goes after this line; 0 inserts at the top."
    },
    "view_range": {
      "type": "array",
      "items": {"type": "integer"},
      "minItems": 2,
      "maxItems": 2,
      "description": "view of a file: [start, end] line numbers, 1-based and inclusive; end -1 means the end of the file."
    }
  },
  "required": ["command", "path"],
  "additionalProperties": false
}`

const submitDescription = `Submit your change when you are done. The first call does not end your work: it returns your full diff, facts the harness checked (files changed, test files touched, new files, the repository's test command result) and a review checklist. Work through the checklist, then call submit again to finish.`

const submitSchema = `{
  "type": "object",
  "properties": {
    "summary": {
      "type": "string",
      "description": "What you changed and how you verified it, for the pull request description."
    }
  },
  "additionalProperties": false
}`

// toolSpecs returns the specs of the three tools, whose descriptions state
// the command timeout and the output limit.
func toolSpecs(timeout time.Duration, outputLimit int) []agent.ToolSpec {
	return []agent.ToolSpec{
		{Name: BashTool, Description: bashDescription(timeout, outputLimit), Parameters: json.RawMessage(bashSchema)},
		{Name: EditorTool, Description: fmt.Sprintf(editorDescription, outputLimit), Parameters: json.RawMessage(editorSchema)},
		{Name: SubmitTool, Description: submitDescription, Parameters: json.RawMessage(submitSchema)},
	}
}

// bashArgs are the arguments of the bash tool.
type bashArgs struct {
	Command *string `json:"command"`
}

// editorArgs are the arguments of str_replace_editor. Pointers tell a
// missing argument from an empty one.
type editorArgs struct {
	Command    *string `json:"command"`
	Path       *string `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	ViewRange  []int   `json:"view_range"`
}

// submitArgs are the arguments of submit.
type submitArgs struct {
	Summary *string `json:"summary"`
}
