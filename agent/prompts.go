package agent

import (
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	template "github.com/DataDog/datadog-agent/pkg/template/text"
)

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// Workspace is the repository root inside the sandbox (DESIGN.md §7).
const Workspace = "/workspace"

// Templates holds template source for the prompts, in text/template's
// language as DataDog's pkg/template/text runs it: fields, map keys and
// functions, never methods (the engine cannot call them, so the linker can
// drop the methods nothing calls: BENCHMARKS.md, "Binary size"). An empty
// field selects the embedded default (agent/prompts/*.tmpl). The data each
// template receives is SystemData, InstanceData, ObservationData,
// FormatErrorData and FormatErrorData again for Truncated, and NoteData.
// Besides the built-in functions, templates may call:
//
//	headtail TEXT CAP  → {Head, Tail, Elided, Total}: TEXT cut to CAP characters
//	fence LANG TEXT    → TEXT in a fenced code block its content cannot close
//	duration D         → D in words, e.g. "45 minutes" (HumanDuration)
type Templates struct {
	System      string
	Instance    string
	Observation string
	FormatError string
	Truncated   string
	Note        string
}

// SystemData is what the system prompt is rendered with: the mode and
// tools, the run's step and time limits (0: none), and what the Env told
// of its commands (CommandLimits; 0: not told). OutputCap is the most
// characters of one observation the model sees: the smaller of the Env's
// cap and Config.ObservationCap.
type SystemData struct {
	Workspace      string
	TextMode       bool
	Tools          []ToolSpec
	MaxSteps       int
	MaxDuration    time.Duration
	CommandTimeout time.Duration
	OutputCap      int
}

// InstanceData is what the instance prompt is rendered with: the task with
// its untrusted text sanitised and the repository's instructions cut to
// MaxInstructionsBytes.
type InstanceData struct {
	Task
}

// ObservationData is what an observation is rendered with: the output of
// one action, the most characters of it to show, and the harness's note
// (the rendered NoteData; empty when none is due).
type ObservationData struct {
	Output string
	Cap    int
	Note   string
}

// NoteData is what the harness's note after the last observation of a step
// is rendered with; the note is left out when it renders empty. Repeats
// counts the same action with the same observation in a row once it
// reaches RepeatNote (0 before); RepeatsLeft more end the run as stuck.
// Steps of MaxSteps (StepsLeft left) are set once, when 80% of the steps
// are used, and TimeLeft of MaxDuration once, when 80% of the time is
// used; they are 0 otherwise.
type NoteData struct {
	TextMode                   bool
	Repeats, RepeatsLeft       int
	Steps, MaxSteps, StepsLeft int
	TimeLeft, MaxDuration      time.Duration
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
	note        *template.Template
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
	parse(&p.note, "note", t.Note)
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
		RepoInstructions: &InstructionsFile{Path: "AGENTS.md", Text: "a"},
		Revision: &Revision{PR: 2, Diff: "d", ReviewAuthor: "a", ReviewBody: "r",
			Comments: []ReviewComment{{Author: "a", Path: "p", Line: 1, DiffHunk: "h", Body: "c"}},
			Checks:   []FailedCheck{{Name: "n", App: "a", Conclusion: "failure", PreExisting: true, Report: "r"}}, Flaky: []string{"f"},
			Conflict: &Conflict{Base: "main", BaseHead: "b", Head: "h", Files: []ConflictFile{{Path: "p", Ours: "o", Theirs: "t"}}}}}
	var errs []error
	for _, mode := range []bool{false, true} {
		sd := SystemData{Workspace: Workspace, TextMode: mode, Tools: tools, MaxSteps: 75, MaxDuration: time.Hour,
			CommandTimeout: time.Minute, OutputCap: 1000}
		if _, err := p.renderSystem(sd); err != nil {
			errs = append(errs, err)
		}
		nd := NoteData{TextMode: mode, Repeats: 3, RepeatsLeft: 2, Steps: 60, MaxSteps: 75, StepsLeft: 15, TimeLeft: time.Minute, MaxDuration: time.Hour}
		if _, err := p.renderNote(nd); err != nil {
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
	if _, err := p.renderObservation(ObservationData{Output: strings.Repeat("x", 300), Cap: 100, Note: "n"}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *Prompts) renderSystem(d SystemData) (string, error) {
	return render(p.system, d)
}

// renderInstance sanitises the task's untrusted text and renders it. The
// title is never cut: GitHub shows a title as plain text, so only its
// invisible characters are removed and its white space made single spaces.
func (p *Prompts) renderInstance(t Task) (string, error) {
	t.Title = strings.Join(strings.Fields(stripInvisible(t.Title)), " ")
	t.Body = SanitizeText(t.Body)
	t.Instructions = SanitizeText(t.Instructions)
	if f := t.RepoInstructions; f != nil {
		t.RepoInstructions = &InstructionsFile{Path: f.Path, Text: CapText(SanitizeText(f.Text), MaxInstructionsBytes)}
	}
	if r := t.Revision; r != nil {
		rc := *r
		rc.ReviewBody = SanitizeText(rc.ReviewBody)
		rc.Comments = make([]ReviewComment, len(r.Comments))
		for i, c := range r.Comments {
			c.Body = SanitizeText(c.Body)
			rc.Comments[i] = c
		}
		// What checks reported is tools' output, not markdown: only its
		// invisible characters go.
		rc.Checks = make([]FailedCheck, len(r.Checks))
		for i, c := range r.Checks {
			c.Report = stripInvisible(c.Report)
			rc.Checks[i] = c
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

// renderNote renders the harness's note; white space alone is no note.
func (p *Prompts) renderNote(d NoteData) (string, error) {
	text, err := render(p.note, d)
	return strings.TrimSpace(text), err
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
	return template.FuncMap{"headtail": HeadTail, "fence": Fence, "duration": HumanDuration}
}

// HumanDuration writes d in words for a prompt, rounded to what matters at
// its size: "45 minutes", "1 hour 30 minutes", "90 seconds", "500
// milliseconds".
func HumanDuration(d time.Duration) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return fmt.Sprintf("%d %ss", n, name)
	}
	switch {
	case d < time.Second:
		return unit(d.Milliseconds(), "millisecond")
	case d < time.Minute || d < 2*time.Minute && d.Round(time.Second)%time.Minute != 0:
		return unit(int64(d.Round(time.Second)/time.Second), "second")
	case d < time.Hour:
		return unit(int64(d.Round(time.Minute)/time.Minute), "minute")
	}
	d = d.Round(time.Minute)
	h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
	if m == 0 {
		return unit(h, "hour")
	}
	return unit(h, "hour") + " " + unit(m, "minute")
}

// CapText cuts s to at most limit bytes, at a line break when there is one
// in the last quarter (else at a character boundary), and says so with a
// last line naming how much was left out; s that fits is returned as is.
func CapText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= limit*3/4 {
		cut = nl + 1
	}
	return strings.TrimRight(s[:cut], "\n") + fmt.Sprintf("\n\n[… %d of %d bytes left out here]", len(s)-cut, len(s))
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
