package report

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// Every text the bot writes for people is one of these templates, rendered
// with missingkey=error and golden-tested (testdata/*.golden).
//
//go:embed templates/*.md.tmpl
var templateFiles embed.FS

// Template names.
const (
	tmplStatus      = "status.md.tmpl"
	tmplFinal       = "final.md.tmpl"
	tmplPRBody      = "pr_body.md.tmpl"
	tmplCheckRun    = "check_run.md.tmpl"
	tmplRoundFinal  = "round_final.md.tmpl"
	tmplThreadReply = "thread_reply.md.tmpl"
	tmplPRCompleted = "pr_completed.md.tmpl"
)

// MaxPRBody is GitHub's limit on a pull request body, in characters.
const MaxPRBody = 65536

// MaxPatchShown bounds, in bytes, the partial diff shown in a final
// comment. (The templates cut the agent's summary to 8,000 characters in
// comments other than the PR body.)
const MaxPatchShown = 20000

// Texts renders the bot's texts. It is safe for concurrent use.
type Texts struct{ t *template.Template }

// New parses the embedded templates.
func New() (*Texts, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"neutralize": neutralizeBlock,
		"code":       Code,
		"fence":      Fence,
		"usd":        USD,
		"duration":   Duration,
		"clip":       clip,
	}).ParseFS(templateFiles, "templates/*.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse the bot's templates: %w", err)
	}
	return &Texts{t}, nil
}

// render executes template name with data.
func (x *Texts) render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := x.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// Final is the data of a job's final comment on its issue.
type Final struct {
	Marker, Requester, Command string
	Outcome                    outcome.Outcome
	PRNumber                   int
	PRURL                      string
	Draft                      bool
	Detail                     string
	StoppedBy                  string
	Summary                    string
	Patch                      string
	SetupOutput                string // the end of a failed setup command's output
	RunID                      string
	Steps                      int
	CostUSD                    float64
	Duration                   time.Duration
	Model                      string
}

// Final renders a job's final comment; a partial patch longer than
// MaxPatchShown is cut.
func (x *Texts) Final(d Final) (string, error) {
	d.Patch = cutPatch(d.Patch)
	return x.render(tmplFinal, d)
}

// cutPatch cuts a patch shown in a comment to MaxPatchShown bytes.
func cutPatch(p string) string {
	if len(p) <= MaxPatchShown {
		return p
	}
	return strings.ToValidUTF8(p[:MaxPatchShown], "") + fmt.Sprintf("\n… (truncated: %d more bytes; the run's record keeps the whole patch)", len(p)-MaxPatchShown)
}

// RoundFinal is the data of a revise round's reply on its pull request.
type RoundFinal struct {
	Final
	// Requesters are everyone the round answers.
	Requesters []string
	// Commit is the pushed commit (short), empty when nothing was pushed.
	Commit string
	// Dropped are who had commands kept for the next round that a stop
	// dropped.
	Dropped []string
	// MarkedReady is set when the round marked the pull request ready for
	// review; NotReady says why it could not.
	MarkedReady bool
	NotReady    string
}

// RoundFinal renders a round's reply on its pull request.
func (x *Texts) RoundFinal(d RoundFinal) (string, error) {
	d.Patch = cutPatch(d.Patch)
	return x.render(tmplRoundFinal, d)
}

// ThreadReply is the data of a round's reply in an inline review thread.
type ThreadReply struct {
	Marker  string
	Outcome outcome.Outcome
	Commit  string
	Path    string
	// Changed is set when Commit changes Path.
	Changed bool
	Detail  string
	// Link is the round's reply on the pull request.
	Link string
}

// ThreadReply renders a round's reply in an inline thread.
func (x *Texts) ThreadReply(d ThreadReply) (string, error) { return x.render(tmplThreadReply, d) }

// Check is the data of a check run's summary.
type Check struct {
	// Running is set while the job runs; then only Issue and Requester
	// are shown besides the table.
	Running   bool
	Issue     int
	Requester string
	// Doing, when set, says what the agent is doing instead of "working
	// on #Issue for @Requester" (the rounds the bot starts on its own).
	Doing      string
	ExitStatus string
	Detail     string
	Model      string
	Steps      int
	CostUSD    float64
	Duration   time.Duration
	RunID      string
	// Verification says how the change was checked (Verification).
	Verification string
	// Environment names where the commands ran ("" when not known).
	Environment string
	// Evidence is the tests' part, as in the pull request body.
	Evidence *Evidence
}

// CheckSummary renders a check run's summary.
func (x *Texts) CheckSummary(d Check) (string, error) { return x.render(tmplCheckRun, d) }

// Code shows s (one line) as inline code, whatever backticks it holds.
func Code(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "``"
	}
	ticks := "`"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return ticks + pad + s + pad + ticks
}

// Fence shows text in a fenced code block of language lang that no line
// of text can close.
func Fence(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

// USD shows an amount of US dollars with cents.
func USD(v float64) string { return fmt.Sprintf("$%.2f", v) }

// Duration rounds d for people: 42s, 3m12s, 1h04m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(math.Round(d.Seconds())))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// clip cuts s to at most n characters, saying how many it left out.
func clip(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("\n\n… (truncated: %d more characters)", len(r)-n)
}

// Tail returns the last n bytes of s at most, cut at a character
// boundary, with a line saying how much was left out.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return fmt.Sprintf("… (%d bytes before this left out)\n", cut) + s[cut:]
}

// ShortSHA is a commit id as people read it.
func ShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// neutralizeBlock neutralizes model-written Markdown and closes a fenced
// code block it left open, so it cannot swallow what the template puts
// after it.
func neutralizeBlock(md string) string {
	md = strings.TrimSpace(Neutralize(md))
	var fence string
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if isFenceClose(trimmed, fence) {
				fence = ""
			}
		default:
			fence = fenceOpen(trimmed, line)
		}
	}
	if fence != "" {
		md += "\n" + fence
	}
	return md
}
