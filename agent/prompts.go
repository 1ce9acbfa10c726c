package agent

import (
	"embed"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"
)

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// Workspace is the repository root inside the sandbox (DESIGN.md §7).
const Workspace = "/workspace"

// Templates holds text/template source for the prompts. An empty field
// selects the embedded default (agent/prompts/*.tmpl). The data each
// template receives is SystemData, InstanceData, ObservationData,
// FormatErrorData and FormatErrorData again for Truncated. Besides the
// built-in functions, templates may call:
//
//	headtail TEXT CAP  → {Head, Tail, Elided, Total}: TEXT cut to CAP characters
//	fence LANG TEXT    → TEXT in a fenced code block its content cannot close
type Templates struct {
	System      string
	Instance    string
	Observation string
	FormatError string
	Truncated   string
}

// SystemData is what the system prompt is rendered with.
type SystemData struct {
	Workspace string
	TextMode  bool
	Tools     []ToolSpec
}

// InstanceData is what the instance prompt is rendered with: the task with
// its untrusted text sanitised.
type InstanceData struct {
	Task
}

// ObservationData is what an observation is rendered with: the output of
// one action and the most characters of it to show.
type ObservationData struct {
	Output string
	Cap    int
}

// FormatErrorData is what the format-error and truncation prompts are
// rendered with: the error (empty for truncation), the mode and tools, and
// the unusable replies in a row so far against the most allowed.
type FormatErrorData struct {
	Error    string
	TextMode bool
	Tools    []ToolSpec
	Count    int
	Max      int
}

// Prompts are the parsed prompt templates. The zero value is not usable;
// get one from ParsePrompts.
type Prompts struct {
	system      *template.Template
	instance    *template.Template
	observation *template.Template
	formatError *template.Template
	truncated   *template.Template
}

// ParsePrompts parses the given templates over the embedded defaults and
// renders each once with sample data, so a template naming a missing field
// fails here rather than in the middle of a run.
func ParsePrompts(t Templates) (*Prompts, error) {
	var p Prompts
	var errs []error
	parse := func(dst **template.Template, name, text string) {
		if text == "" {
			b, err := promptFiles.ReadFile("prompts/" + name + ".tmpl")
			if err != nil {
				errs = append(errs, fmt.Errorf("read embedded prompt %s: %w", name, err))
				return
			}
			text = string(b)
		}
		tpl, err := template.New(name).Option("missingkey=error").Funcs(promptFuncs()).Parse(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse prompt %s: %w", name, err))
			return
		}
		*dst = tpl
	}
	parse(&p.system, "system", t.System)
	parse(&p.instance, "instance", t.Instance)
	parse(&p.observation, "observation", t.Observation)
	parse(&p.formatError, "format_error", t.FormatError)
	parse(&p.truncated, "truncated", t.Truncated)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// check renders every template with sample data.
func (p *Prompts) check() error {
	tools := []ToolSpec{{Name: "bash"}, {Name: "submit"}}
	task := Task{Repo: "o/r", Issue: 1, Title: "t", Body: "b", Instructions: "i", Notes: "n",
		Revision: &Revision{PR: 2, Diff: "d", ReviewAuthor: "a", ReviewBody: "r",
			Comments: []ReviewComment{{Author: "a", Path: "p", Line: 1, DiffHunk: "h", Body: "c"}}}}
	var errs []error
	for _, mode := range []bool{false, true} {
		if _, err := p.renderSystem(SystemData{Workspace: Workspace, TextMode: mode, Tools: tools}); err != nil {
			errs = append(errs, err)
		}
		fe := FormatErrorData{Error: "e", TextMode: mode, Tools: tools, Count: 1, Max: 3}
		if _, err := p.renderFormatError(fe); err != nil {
			errs = append(errs, err)
		}
		if _, err := p.renderTruncated(fe); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := p.renderInstance(task); err != nil {
		errs = append(errs, err)
	}
	if _, err := p.renderObservation(ObservationData{Output: strings.Repeat("x", 300), Cap: 100}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *Prompts) renderSystem(d SystemData) (string, error) {
	return render(p.system, d)
}

// renderInstance sanitises the task's untrusted text and renders it.
func (p *Prompts) renderInstance(t Task) (string, error) {
	t.Title = strings.Join(strings.Fields(SanitizeText(t.Title)), " ")
	t.Body = SanitizeText(t.Body)
	t.Instructions = SanitizeText(t.Instructions)
	if r := t.Revision; r != nil {
		rc := *r
		rc.ReviewBody = SanitizeText(rc.ReviewBody)
		rc.Comments = make([]ReviewComment, len(r.Comments))
		for i, c := range r.Comments {
			c.Body = SanitizeText(c.Body)
			rc.Comments[i] = c
		}
		t.Revision = &rc
	}
	return render(p.instance, InstanceData{Task: t})
}

func (p *Prompts) renderObservation(d ObservationData) (string, error) {
	return render(p.observation, d)
}

func (p *Prompts) renderFormatError(d FormatErrorData) (string, error) {
	return render(p.formatError, d)
}

func (p *Prompts) renderTruncated(d FormatErrorData) (string, error) {
	return render(p.truncated, d)
}

func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render prompt %s: %w", t.Name(), err)
	}
	return b.String(), nil
}

// promptFuncs are the functions templates may call besides the built-ins.
func promptFuncs() template.FuncMap {
	return template.FuncMap{"headtail": HeadTail, "fence": Fence}
}

// Cut is text shortened to a character budget: its head and tail, and how
// many characters were left out of the Total. Elided is 0 when the text fit
// (then Head is the whole text and Tail is empty).
type Cut struct {
	Head   string
	Tail   string
	Elided int
	Total  int
}

// HeadTail cuts s to at most limit characters (runes), keeping the first
// half and the last half of the budget.
func HeadTail(s string, limit int) Cut {
	total := utf8.RuneCountInString(s)
	if total <= limit {
		return Cut{Head: s, Total: total}
	}
	limit = max(limit, 0)
	head := limit / 2
	tail := limit - head
	return Cut{
		Head:   s[:runeOffset(s, head)],
		Tail:   s[runeOffset(s, total-tail):],
		Elided: total - head - tail,
		Total:  total,
	}
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// Fence returns text in a fenced code block tagged lang, with a fence
// longer than any backtick run in text so the text cannot close it early.
func Fence(lang, text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}
