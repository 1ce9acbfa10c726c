package report

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// PRBody is the data of a pull request body. Of the verification:
// TestCommand is the repository's test command; TestRan says it ran in the
// review, TestVerdict how it ended ("passed", "failed with exit code 1",
// "timed out"), TestFinal that it ran on the final change, TestOutput the
// end of its output when it did not pass. ReviewRounds of ReviewStages
// review messages were shown. DraftReason says why a submitted change
// opens as a draft.
type PRBody struct {
	Issue        int
	Incomplete   bool
	Detail       string
	Summary      string
	Truncated    int
	TestCommand  string
	TestRan      bool
	TestPassed   bool
	TestVerdict  string
	TestFinal    bool
	TestOutput   string
	ReviewRounds int
	ReviewStages int
	DraftReason  string
	Requester    string
	Model        string
	Steps        int
	CostUSD      float64
	Duration     time.Duration
	RunID        string
	RunURL       string
	Command      string
	// Evidence is what the harness proved with the repository's tests;
	// nil when it proved nothing (no test command, or an older run).
	Evidence *Evidence
	// Environment names where the agent's commands and the tests ran
	// (session.Environment.Description); "" for an older run.
	Environment string
}

// Evidence is the tests' part of a pull request text: the test command on
// the base commit and on the change, the proven regression tests, the
// failures that also fail on the base commit, what weakens the tests, and
// the notes of the ready-or-draft decision.
type Evidence struct {
	Command      string
	Base, Change string // "passed", "failed with exit code 1", "not run", …
	Proven       []string
	Unproven     []string
	NoProof      string
	Preexisting  []string
	New          []string
	Flags        []string
	Notes        []string
}

// PRBody renders a pull request body within MaxPRBody characters, cutting
// the agent's summary with a visible note when it must.
func (x *Texts) PRBody(d PRBody) (string, error) {
	full := []rune(d.Summary)
	for range 4 {
		body, err := x.render(tmplPRBody, d)
		if err != nil {
			return "", err
		}
		over := utf8.RuneCountInString(body) - MaxPRBody
		if over <= 0 {
			return body, nil
		}
		keep := max(len([]rune(d.Summary))-over-200, 0) // room for the note
		d.Summary, d.Truncated = string(full[:keep]), len(full)-keep
	}
	return "", fmt.Errorf("pull request body stays over %d characters", MaxPRBody)
}

// DraftMarks are the title prefixes a pull request that should have been
// a draft gets where GitHub refuses drafts: "[incomplete] " for an
// autosubmitted change, "[draft] " for one with another reason.
var DraftMarks = []string{"[incomplete] ", "[draft] "}

// DraftMark is the title prefix of a draft where drafts are refused.
func DraftMark(incomplete bool) string {
	if incomplete {
		return DraftMarks[0]
	}
	return DraftMarks[1]
}

// CutDraftMark returns title without the bot's draft mark, and whether it
// had one.
func CutDraftMark(title string) (string, bool) {
	for _, m := range DraftMarks {
		if rest, ok := strings.CutPrefix(title, m); ok {
			return rest, true
		}
	}
	return title, false
}

// The notices pr_body.md.tmpl starts a draft's body with; group 1 is what
// they say of why. A body edited on GitHub may have CRLF line ends.
var (
	incompleteNoticeRe = regexp.MustCompile(`(?m)^> \[!WARNING\]\r?\n> This change is incomplete: the run ended before the agent submitted it \(([^\r\n]*)\)\. It was opened as a draft for you to judge\.\r?\n`)
	draftNoticeRe      = regexp.MustCompile(`(?m)^> \[!NOTE\]\r?\n> Opened as a draft: ([^\r\n]*)\.\r?\n`)
)

// HasDraftNotice reports whether body starts a section with one of the
// notices the body of a draft starts with.
func HasDraftNotice(body string) bool {
	return incompleteNoticeRe.MatchString(body) || draftNoticeRe.MatchString(body)
}

// Completed is the data of the note that takes the place of a draft's
// notice once a round completed the change: the round's verification and
// commit, and what the replaced notice said.
type Completed struct {
	PRBody
	Commit string
	// WasIncomplete says the notice was the incomplete one; Why is what it
	// said of why.
	WasIncomplete bool
	Why           string
}

// CompletedBody returns body with its draft notice replaced by the note
// of d (whose WasIncomplete and Why it sets), and whether it had one.
//
// The smallest honest change: the body's sections describe the run that
// opened the pull request and stay as they are — they are still true of
// that run, and the round's own summary is in its reply. Only the notice
// at the top, which says the change is incomplete or a draft, gives way to
// a note that keeps what it said of why and adds which commit and run
// completed the change. A body without the notice — it was edited away,
// or an earlier attempt replaced it — is left alone.
func (x *Texts) CompletedBody(body string, d Completed) (string, bool, error) {
	m := incompleteNoticeRe.FindStringSubmatchIndex(body)
	d.WasIncomplete = m != nil
	if m == nil {
		m = draftNoticeRe.FindStringSubmatchIndex(body)
	}
	if m == nil {
		return body, false, nil
	}
	d.Why = body[m[2]:m[3]]
	note, err := x.render(tmplPRCompleted, d)
	if err != nil {
		return body, false, err
	}
	return body[:m[0]] + note + body[m[1]:], true, nil
}
