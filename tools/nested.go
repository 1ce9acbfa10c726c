package tools

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/workspace"
)

// MaxNestedInstructionsBytes bounds one nested instructions file shown to
// the model (a quarter of the output limit, if that is less).
const MaxNestedInstructionsBytes = 4 << 10

// NestedInstructions is one directory's instructions file for agents, as
// the instructions template gets it.
type NestedInstructions struct {
	// Dir is the directory, relative to the repository root.
	Dir string
	// Path is the file, Dir/AGENTS.md.
	Path string
	// Text is the file's text, sanitised and cut.
	Text string
}

// nestedInstructions checks the directories of Options.NestedInstructions
// and returns them outermost first, their text sanitised like issue text
// and cut to MaxNestedInstructionsBytes or a quarter of outputLimit.
func nestedInstructions(dirs map[string]string, outputLimit int) ([]NestedInstructions, error) {
	var out []NestedInstructions
	var errs []error
	for dir, text := range dirs {
		clean := path.Clean(strings.TrimSuffix(dir, "/"))
		switch {
		case dir == "" || clean == ".":
			errs = append(errs, errors.New("nested instructions for the repository root: they belong in agent.Task's RepoInstructions"))
			continue
		case !filepath.IsLocal(clean) || strings.Contains(clean, "\\"):
			errs = append(errs, fmt.Errorf("nested instructions: directory %q is not a path inside the repository", dir))
			continue
		}
		limit := min(MaxNestedInstructionsBytes, outputLimit/4)
		out = append(out, NestedInstructions{Dir: clean, Path: clean + "/AGENTS.md", Text: agent.CapText(agent.SanitizeText(text), limit)})
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i].Dir, "/"), strings.Count(out[j].Dir, "/")
		if di != dj {
			return di < dj
		}
		return out[i].Dir < out[j].Dir
	})
	return out, errors.Join(errs...)
}

func parseInstructions() (*template.Template, error) {
	b, _ := promptFiles.ReadFile("prompts/instructions.tmpl") // embedded: always there
	t, err := template.New("instructions").Option("missingkey=error").Funcs(templateFuncs()).Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("parse instructions: %w", err)
	}
	return t, nil
}

// instructionsFor returns the nested instructions not shown yet of the
// directories holding the given paths (as a call names them: relative to
// /workspace or absolute under it), rendered to follow an observation,
// and marks them shown.
func (e *Env) instructionsFor(paths []string) (string, error) {
	if len(e.nested) == 0 || len(paths) == 0 {
		return "", nil
	}
	var rels []string
	for _, p := range paths {
		if rel, ok := repoPath(p); ok {
			rels = append(rels, rel)
		}
	}
	e.mu.Lock()
	var due []NestedInstructions
	for _, n := range e.nested {
		if e.shown[n.Dir] {
			continue
		}
		for _, rel := range rels {
			if rel == n.Dir || strings.HasPrefix(rel, n.Dir+"/") {
				e.shown[n.Dir] = true
				due = append(due, n)
				break
			}
		}
	}
	e.mu.Unlock()
	if len(due) == 0 {
		return "", nil
	}
	var b strings.Builder
	if err := e.instructions.Execute(&b, due); err != nil {
		return "", fmt.Errorf("render instructions: %w", err)
	}
	return b.String(), nil
}

// repoPath turns a path as a call names it into a clean path relative to
// the repository root; ok is false for one outside it.
func repoPath(p string) (string, bool) {
	if path.IsAbs(p) {
		rel, ok := strings.CutPrefix(path.Clean(p), workspace.WorkspaceDir+"/")
		return rel, ok
	}
	clean := path.Clean(p)
	return clean, clean != "." && filepath.IsLocal(clean)
}

// commandWords returns the words of a bash command that may name paths:
// every word of every simple command, and what follows the = of an
// option such as --file=pkg/a.go.
func commandWords(command string) []string {
	var words []string
	for _, c := range splitCommands(command) {
		for _, w := range c.words {
			words = append(words, w)
			if _, v, ok := strings.Cut(w, "="); ok && v != "" {
				words = append(words, v)
			}
		}
	}
	return words
}
