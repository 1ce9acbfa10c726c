package session

import (
	"context"
	"path"
	"slices"

	"github.com/agentfix/agentfix/agent"
)

// maxInstructionsRead bounds what is read of one instructions file; the
// agent and the tools cut what they show further.
const maxInstructionsRead = 64 << 10

// Instructions are the repository's instructions files for agents: the
// repository-wide one (AGENTS.md at the root, else CLAUDE.md, else
// .github/copilot-instructions.md), for the task, and the AGENTS.md files
// of subdirectories, shown when the agent first works under them.
type Instructions struct {
	Root   *agent.InstructionsFile
	Nested map[string]string // directory → text
}

// Names lists the files, for people: the root one first.
func (in Instructions) Names() []string {
	var out []string
	if in.Root != nil {
		out = append(out, in.Root.Path)
	}
	dirs := make([]string, 0, len(in.Nested))
	for d := range in.Nested {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		out = append(out, path.Join(d, "AGENTS.md"))
	}
	return out
}

// Tree reads the files of a commit (*workspace.WorkTree does, from its
// private git dir).
type Tree interface {
	Files(ctx context.Context, commit string, match func(path string) bool, maxBytes int) (map[string]string, error)
}

// ReadInstructions reads the instructions files of commit — the default
// branch's head, so only what people with write access wrote instructs the
// agent, never a file an earlier round of the agent changed.
func ReadInstructions(ctx context.Context, t Tree, commit string) (Instructions, error) {
	roots := agent.InstructionsFiles()
	files, err := t.Files(ctx, commit, func(p string) bool {
		return slices.Contains(roots, p) || path.Base(p) == "AGENTS.md"
	}, maxInstructionsRead)
	if err != nil {
		return Instructions{}, err
	}
	var in Instructions
	for _, name := range roots {
		if text, ok := files[name]; ok {
			in.Root = &agent.InstructionsFile{Path: name, Text: text}
			break
		}
	}
	for p, text := range files {
		if path.Base(p) != "AGENTS.md" || path.Dir(p) == "." {
			continue
		}
		if in.Nested == nil {
			in.Nested = map[string]string{}
		}
		in.Nested[path.Dir(p)] = text
	}
	return in, nil
}
