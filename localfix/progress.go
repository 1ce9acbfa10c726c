package localfix

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/agentfix/agentfix/agent"
)

// progress prints a bot fix run on the terminal as it happens: the start,
// each setup command, one line per agent step as the step ends, and a
// summary. Text that comes from the model or the repository is stripped of
// control characters first, so it cannot drive the terminal. Write errors
// are ignored: the files in the output directory are the record.
type progress struct {
	w        io.Writer
	maxSteps int
	// replay is the trajectory a replay plays ("" for a run with a
	// model): it calls no model and spends nothing, so no cost is shown
	// but $0.00.
	replay string
}

// fixStart is what the first lines of a run show.
type fixStart struct {
	RunID, Model, Sandbox, Repo, Head, Out string
	// RepoName is the repository's full name the task gives the agent.
	RepoName string
	// Setup and Test are the commands the run uses.
	Setup []string
	Test  string
	// Notes are said before the run starts.
	Notes []string
}

func (p *progress) start(s fixStart) {
	fmt.Fprintf(p.w, "bot fix: run %s\n", s.RunID)
	fmt.Fprintf(p.w, "  repository  %s at %s (%s)\n", safeLine(s.RepoName), shortID(s.Head), safeLine(s.Repo))
	if p.replay != "" {
		fmt.Fprintf(p.w, "  model       %s: a replay of %s; no model is called, nothing is spent\n", safeLine(s.Model), safeLine(p.replay))
	} else {
		fmt.Fprintf(p.w, "  model       %s\n", safeLine(s.Model))
	}
	fmt.Fprintf(p.w, "  sandbox     %s\n", s.Sandbox)
	for _, c := range s.Setup {
		fmt.Fprintf(p.w, "  setup       %s\n", safeLine(c))
	}
	test := "none"
	if s.Test != "" {
		test = safeLine(s.Test)
	}
	fmt.Fprintf(p.w, "  test        %s\n", test)
	fmt.Fprintf(p.w, "  output      %s\n", s.Out)
	for _, n := range s.Notes {
		fmt.Fprintf(p.w, "  note        %s\n", safeLine(n))
	}
}

// note says something about the run before the agent starts.
func (p *progress) note(s string) {
	fmt.Fprintf(p.w, "note: %s\n", safeLine(s))
}

func (p *progress) setupStart(cmd string) {
	fmt.Fprintf(p.w, "setup: %s\n", safeLine(cmd))
}

func (p *progress) setupDone(exitCode int, timedOut bool, d time.Duration, output string) {
	switch {
	case timedOut:
		fmt.Fprintf(p.w, "setup: timed out after %s; the output ends:\n%s\n", round(d), indent(safeText(lastLines(output, 20))))
	case exitCode != 0:
		fmt.Fprintf(p.w, "setup: failed with exit code %d after %s; the output ends:\n%s\n", exitCode, round(d), indent(safeText(lastLines(output, 20))))
	default:
		fmt.Fprintf(p.w, "setup: ok in %s\n", round(d))
	}
}

// step prints one line per action of the step: its number, the cost so
// far and the action; a step without actions says why.
func (p *progress) step(s agent.Step) {
	head := fmt.Sprintf("step %d", s.Step)
	if p.maxSteps > 0 {
		width := len(fmt.Sprint(p.maxSteps))
		head = fmt.Sprintf("step %*d/%d", width, s.Step, p.maxSteps)
	}
	if p.replay == "" {
		head = fmt.Sprintf("%s  $%.4f  ", head, s.TotalCostUSD)
	} else {
		head += "  "
	}
	switch {
	case s.FormatError != "":
		fmt.Fprintf(p.w, "%sunusable reply, asked again: %s\n", head, safeLine(s.FormatError))
		return
	case len(s.Messages) == 0:
		fmt.Fprintf(p.w, "%sthe model call failed\n", head)
		return
	case len(s.Actions) == 0:
		fmt.Fprintf(p.w, "%sno action\n", head)
		return
	}
	pad := strings.Repeat(" ", len(head))
	for i, a := range s.Actions {
		line := safeLine(a.Brief(100))
		if i < len(s.Observations) && s.Observations[i].Submitted {
			line += " → submitted"
		}
		if i > 0 {
			head = pad
		}
		fmt.Fprintf(p.w, "%s%s\n", head, line)
	}
}

// fixSummary is what the last lines of a run show.
type fixSummary struct {
	Result         agent.Result
	Patch          string // path of patch.diff
	PatchFiles     int
	PatchSubmitted bool // false: the diff the agent left, not submitted
	Trajectory     string
	// Applied says what --apply did; empty without --apply.
	Applied string
	// ApplyCommand is the shell command that applies the patch; empty
	// when it was applied or is empty. For a bare repository it is to be
	// run in a checkout of BareRepo.
	ApplyCommand, BareRepo string
}

func (p *progress) summary(s fixSummary) {
	r := s.Result
	fmt.Fprintf(p.w, "\nrun %s ended: %s\n", r.RunID, r.Status)
	if r.Reason != "" {
		fmt.Fprintf(p.w, "  reason      %s\n", safeLine(r.Reason))
	}
	if p.maxSteps > 0 {
		fmt.Fprintf(p.w, "  steps       %d of at most %d\n", r.Steps, p.maxSteps)
	} else {
		fmt.Fprintf(p.w, "  steps       %d\n", r.Steps)
	}
	tokens := fmt.Sprintf("%d tokens in, %d out, %d cached", r.Usage.InputTokens+r.Usage.CacheWriteTokens, r.Usage.OutputTokens, r.Usage.CacheReadTokens)
	if p.replay != "" {
		fmt.Fprintf(p.w, "  cost        $0.00: a replay calls no model (the recorded run: $%.4f, %s)\n", r.CostUSD, tokens)
	} else {
		fmt.Fprintf(p.w, "  cost        $%.4f (%s)\n", r.CostUSD, tokens)
	}
	fmt.Fprintf(p.w, "  duration    %s\n", round(r.Duration))
	if r.Summary != "" {
		fmt.Fprintf(p.w, "  summary     %s\n", strings.TrimPrefix(indentBy(safeText(r.Summary), "              "), "              "))
	}
	patch := "empty: nothing changed"
	if s.PatchFiles > 0 {
		patch = fmt.Sprintf("%d %s changed", s.PatchFiles, plural(s.PatchFiles, "file", "files"))
		if !s.PatchSubmitted {
			patch += ", not submitted"
		}
	}
	fmt.Fprintf(p.w, "  patch       %s (%s)\n", s.Patch, patch)
	fmt.Fprintf(p.w, "  trajectory  %s\n", s.Trajectory)
	if s.Applied != "" {
		fmt.Fprintf(p.w, "  apply       %s\n", safeLine(s.Applied))
	}
	switch {
	case s.ApplyCommand != "" && s.BareRepo != "":
		fmt.Fprintf(p.w, "\nTo apply the patch, run this in a checkout of %s:\n  %s\n", s.BareRepo, s.ApplyCommand)
	case s.ApplyCommand != "":
		fmt.Fprintf(p.w, "\nTo apply the patch to your checkout:\n  %s\n", s.ApplyCommand)
	}
}

// shellQuote quotes s as one word for a POSIX shell: as it is when it
// holds only characters no shell reads specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// safeText drops control characters but newlines and tabs, and the
// bidirectional-text controls that reorder what a terminal shows.
func safeText(s string) string {
	return strings.Map(func(r rune) rune {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, strings.ReplaceAll(s, "\r\n", "\n"))
}

// safeLine is safeText on one line.
func safeLine(s string) string {
	return strings.Join(strings.Fields(safeText(s)), " ")
}

func indent(s string) string { return indentBy(s, "  | ") }

func indentBy(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
