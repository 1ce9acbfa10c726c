package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// tmplPRCompleted is the note that takes the place of a draft's notice in
// the pull request body once a round completed the change.
const tmplPRCompleted = "pr_completed.md.tmpl"

// draftMarks are the title prefixes openPR gives a pull request that should
// have been a draft where GitHub refuses drafts.
var draftMarks = []string{"[incomplete] ", "[draft] "}

// The notices pr_body.md.tmpl starts a draft's body with; group 1 is what
// they say of why. A body edited on GitHub may have CRLF line ends.
var (
	incompleteNoticeRe = regexp.MustCompile(`(?m)^> \[!WARNING\]\r?\n> This change is incomplete: the run ended before the agent submitted it \(([^\r\n]*)\)\. It was opened as a draft for you to judge\.\r?\n`)
	draftNoticeRe      = regexp.MustCompile(`(?m)^> \[!NOTE\]\r?\n> Opened as a draft: ([^\r\n]*)\.\r?\n`)
)

// readiness is what a round did about its pull request being a draft.
type readiness struct {
	// Marked is set when the round marked the pull request ready for
	// review (or, where GitHub refuses drafts, took the bot's mark off its
	// title).
	Marked bool
	// Failure says, for people, why GitHub did not let it.
	Failure string
}

// markReady marks a round's pull request ready for review when the round
// completed it: the round pushed a change the agent submitted, draftReason
// finds nothing that keeps it a draft (a failed test command, draft: true),
// and the pull request is a draft whose body has the bot's draft notice
// (not one a person made a draft) or has one of the bot's draftMarks in its
// title. A draft is marked ready through GitHub's GraphQL API, a marked
// title loses its mark, and then the body's draft notice gives way to a
// note saying which round completed the change (completeBody). A pull
// request that is no longer a draft but whose body still has the notice
// gets the note without a claim of having marked it. A GitHub failure is
// logged and returned in words for the round's reply; it never fails the
// job. saved.Ready remembers it was done, so a retry of the job says so
// again without asking GitHub twice.
func (j *job) markReady(ctx context.Context, saved *savedResult, outcome, commit string) readiness {
	if outcome != outcomePRUpdated || saved.Result.Status != agent.Submitted || j.draftReason(*saved) != "" {
		return readiness{}
	}
	pr := j.round.pr // as the round read it when it started
	title, marked := cutDraftMark(pr.Title)
	notice := hasDraftNotice(pr.Body)
	switch {
	case saved.Ready:
	case marked || pr.Draft && notice:
		if err := j.undraft(ctx, pr, title, marked); err != nil {
			j.log.Warn("mark the pull request ready for review", logattr.PR, pr.Number, logattr.Err, err)
			return readiness{Failure: githubTrouble(err)}
		}
		saved.Ready = true
		if err := j.w.state.saveResult(ctx, j.key, *saved); err != nil {
			j.log.Warn("remember that the pull request was marked ready", logattr.Err, err)
		}
	case notice && !pr.Draft:
		// Ready already, with the notice still saying otherwise: someone
		// marked it ready, or this job did before a crash kept it from
		// remembering. The body catches up; the reply claims nothing.
		j.completeBody(ctx, pr, *saved, commit)
		return readiness{}
	default:
		// Only the bot's own drafts: one whose body lost the bot's notice,
		// or that someone made a draft by hand, stays as people left it.
		return readiness{}
	}
	j.completeBody(ctx, pr, *saved, commit)
	return readiness{Marked: true}
}

// undraft takes pull request pr out of draft, and title's mark off it when
// marked.
func (j *job) undraft(ctx context.Context, pr ghapp.PullRequest, title string, marked bool) error {
	if pr.Draft {
		if err := j.gh.MarkReadyForReview(ctx, j.repo, pr.Number); err != nil {
			return err
		}
	}
	if marked {
		if _, err := j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Title: &title}); err != nil {
			return err
		}
	}
	return nil
}

// hasDraftNotice reports whether body starts a section with one of the
// notices pr_body.md.tmpl gives a draft.
func hasDraftNotice(body string) bool {
	return incompleteNoticeRe.MatchString(body) || draftNoticeRe.MatchString(body)
}

// cutDraftMark returns title without the bot's draft mark, and whether it
// had one.
func cutDraftMark(title string) (string, bool) {
	for _, m := range draftMarks {
		if rest, ok := strings.CutPrefix(title, m); ok {
			return rest, true
		}
	}
	return title, false
}

// completedNote is the data of tmplPRCompleted: the round's verification
// (job.verification) and commit, and what the replaced notice said.
type completedNote struct {
	prBodyData
	Commit string
	// WasIncomplete says the notice was the incomplete one; Why is what it
	// said of why.
	WasIncomplete bool
	Why           string
}

// completeBody rewrites the body of pull request pr once a round completed
// its change (see completedBody); a failure is logged.
func (j *job) completeBody(ctx context.Context, pr ghapp.PullRequest, saved savedResult, commit string) {
	d := completedNote{Commit: shortSHA(commit)}
	j.verification(&d.prBodyData, saved, saved.RunID)
	d.RunID = saved.RunID
	body, ok, err := completedBody(j.w.texts, pr.Body, d)
	switch {
	case err != nil:
		j.log.Warn("render the pull request's completed note", logattr.Err, err)
		return
	case !ok:
		j.log.Info("the pull request's body has no draft notice to replace", logattr.PR, pr.Number)
		return
	}
	if n := utf8.RuneCountInString(body); n > MaxPRBody {
		j.log.Warn(fmt.Sprintf("the pull request's body with the completed note would have %d characters; left as it is", n), logattr.PR, pr.Number)
		return
	}
	if _, err := j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Body: &body}); err != nil {
		j.log.Warn("replace the draft notice in the pull request's body", logattr.PR, pr.Number, logattr.Err, err)
	}
}

// completedBody returns body with its draft notice replaced by the note of
// d (whose WasIncomplete and Why it sets), and whether it had one.
//
// The smallest honest change: the body's sections describe the run that
// opened the pull request and stay as they are — they are still true of
// that run, and the round's own summary is in its reply. Only the notice
// at the top, which says the change is incomplete or a draft, gives way to
// a note that keeps what it said of why and adds which commit and run
// completed the change. (The opening run's saved result, which could render
// the whole body again, lives only a day, and a body rendered anew would
// drop what people edited in it.) A body without the notice — it was
// edited away, or an earlier attempt replaced it — is left alone.
func completedBody(x texts, body string, d completedNote) (string, bool, error) {
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

// githubTrouble says for people why a GitHub call failed: GitHub's own
// answer, without the request's details.
func githubTrouble(err error) string {
	var ge *ghapp.GraphQLError
	var ae *ghapp.APIError
	var rl *ghapp.RateLimitError
	var ue *url.Error
	switch {
	case errors.As(err, &ge):
		return "GitHub answered: " + strings.TrimRight(strings.Join(ge.Messages, "; "), ".")
	case errors.As(err, &ae):
		s := fmt.Sprintf("GitHub answered %d %s", ae.Status, http.StatusText(ae.Status))
		if ae.Message != "" {
			s += ": " + strings.TrimRight(ae.Message, ".")
		}
		return s
	case errors.As(err, &rl):
		return "GitHub's rate limit is used up until " + rl.Reset.UTC().Format(time.RFC3339)
	case errors.As(err, &ue):
		return "GitHub could not be reached"
	}
	return "GitHub's answer was not as expected; the worker's logs have the details"
}
