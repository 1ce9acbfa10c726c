package worker

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// Every text the bot writes for people is one of these templates, rendered
// with missingkey=error and golden-tested (testdata/*.golden).
//
//go:embed templates/*.md.tmpl
var templateFiles embed.FS

// Template names.
const (
	tmplStatus         = "status.md.tmpl"
	tmplFinal          = "final.md.tmpl"
	tmplPRBody         = "pr_body.md.tmpl"
	tmplPRRound        = "pr_round.md.tmpl"
	tmplCheckRun       = "check_run.md.tmpl"
	tmplRefusal        = "refusal.md.tmpl"
	tmplAlreadyWorking = "already_working.md.tmpl"
	tmplNotMyPR        = "not_my_pr.md.tmpl"
	tmplClosed         = "closed.md.tmpl"
	tmplHelp           = "help.md.tmpl"
	tmplStopRefused    = "stop_refused.md.tmpl"
	tmplNothingToStop  = "nothing_to_stop.md.tmpl"
)

// MaxPRBody is GitHub's limit on a pull request body, in characters.
const MaxPRBody = 65536

// maxPatchShown bounds, in bytes, the partial diff shown in a final
// comment. (The templates cut the agent's summary to 8,000 characters in
// comments other than the PR body.)
const maxPatchShown = 20000

// texts holds the parsed templates.
type texts struct{ t *template.Template }

func parseTexts() (texts, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"neutralize": neutralizeBlock,
		"code":       codeSpan,
		"fence":      fenceBlock,
		"usd":        usd,
		"duration":   humanDuration,
		"clip":       clip,
	}).ParseFS(templateFiles, "templates/*.md.tmpl")
	if err != nil {
		return texts{}, fmt.Errorf("parse reply templates: %w", err)
	}
	return texts{t}, nil
}

// render executes template name with data.
func (x texts) render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := x.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
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

// codeSpan shows s (one line) as inline code, whatever backticks it holds.
func codeSpan(s string) string {
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

// fenceBlock shows text in a fenced code block of language lang that no
// line of text can close.
func fenceBlock(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }

// humanDuration rounds d for people: 42s, 3m12s, 1h4m.
func humanDuration(d time.Duration) string {
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

// plainTitle makes issue text safe as a pull request or commit title:
// closing keywords lose their effect, so merging cannot close other issues.
func plainTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return closingRe.ReplaceAllString(s, "$1$2$3#\u200b$4")
}

// replyData is the data of the short replies (refusal, already working,
// not my PR, closed, help, stop refused, nothing to stop).
type replyData struct {
	Marker    string
	Requester string
	// Label and Command trigger the bot (AGENTFIX_TRIGGER_LABEL,
	// AGENTFIX_COMMAND).
	Label, Command string
	// Link is the running job's status comment (already working).
	Link string
	// Locked is set when the issue is locked rather than closed.
	Locked bool
	// IsPR is set for a command on a pull request.
	IsPR bool
	// Merged is set when a closed pull request was merged.
	Merged bool
	// Limits are the lines help shows under "Limits in this repository":
	// the operator's per-job limits (operatorLimits); per-repository
	// configuration and budgets add their own lines.
	Limits []string
	// Budget says which budget is used up and when it resets (over
	// budget); ConfigFile is the repository's configuration file (not
	// allowed).
	Budget     string
	ConfigFile string
}
