package report

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// ReplyKind is one of the short replies to a trigger.
type ReplyKind string

// The short replies; the value names the template.
const (
	// ReplyRefusal: the requester has no write access.
	ReplyRefusal ReplyKind = "refusal"
	// ReplyAlreadyWorking: a job for the issue is queued or running (Link).
	ReplyAlreadyWorking ReplyKind = "already_working"
	// ReplyNotMyPR: a command on a pull request the bot did not open.
	ReplyNotMyPR ReplyKind = "not_my_pr"
	// ReplyClosed: the issue is closed or locked (Locked).
	ReplyClosed ReplyKind = "closed"
	// ReplyHelp: usage, who may use it, examples, the limits (Limits).
	ReplyHelp ReplyKind = "help"
	// ReplyStopRefused: a stop by someone who may not stop the job.
	ReplyStopRefused ReplyKind = "stop_refused"
	// ReplyNothingToStop: a stop with no job running.
	ReplyNothingToStop ReplyKind = "nothing_to_stop"
	// ReplyNotAllowed: allowed_users or allowed_teams leave the requester
	// out (ConfigFile).
	ReplyNotAllowed ReplyKind = "not_allowed"
	// ReplyOverBudget: a budget is used up (Budget).
	ReplyOverBudget ReplyKind = "over_budget"
	// ReplyKept: a command kept for the next round of a pull request (Link).
	ReplyKept ReplyKind = "kept"
	// ReplyPRClosed: a round asked for on a closed pull request (Merged).
	ReplyPRClosed ReplyKind = "pr_closed"
	// ReplyNoIssue: the bot's pull request names no issue it fixes.
	ReplyNoIssue ReplyKind = "no_issue"
)

// Reply is the data of the short replies.
type Reply struct {
	Marker    string
	Requester string
	// Label and Command trigger the bot (AGENTFIX_TRIGGER_LABEL,
	// AGENTFIX_COMMAND).
	Label, Command string
	// Link is the running job's status comment (already working, kept).
	Link string
	// Locked is set when the issue is locked rather than closed.
	Locked bool
	// IsPR is set for a command on a pull request.
	IsPR bool
	// Merged is set when a closed pull request was merged.
	Merged bool
	// Limits are the lines help shows under "Limits in this repository".
	Limits []string
	// Budget says which budget is used up and when it resets (over
	// budget); ConfigFile is the repository's configuration file (not
	// allowed).
	Budget     string
	ConfigFile string
	// StoppedBy is who had stopped the automatic rounds a resume lifted.
	StoppedBy string
}

// Reply renders reply k.
func (x *Texts) Reply(k ReplyKind, d Reply) (string, error) { return x.render(string(k)+".md.tmpl", d) }

// ReplyMarker is the hidden marker of the replies to one delivery.
func ReplyMarker(deliveryID string) string { return ghapp.Marker("reply " + deliveryID) }

// Limits is the line help shows of a job's limits.
func Limits(maxSteps int, maxCostUSD float64, maxDuration time.Duration) string {
	return fmt.Sprintf("each job: at most %d agent steps, %s of model spend and %s",
		maxSteps, USD(maxCostUSD), Duration(maxDuration))
}

// Comments finds and posts the bot's comments; *ghapp.Client implements
// it.
type Comments interface {
	FindComment(ctx context.Context, repo ghapp.Repo, number int, marker string) (ghapp.Comment, bool, error)
	CreateComment(ctx context.Context, repo ghapp.Repo, number int, body string) (ghapp.Comment, error)
}

// PostOnce posts body on issue or pull request number unless a comment of
// the bot with marker is already there (an earlier attempt of the same
// task posted it), and returns the comment.
func PostOnce(ctx context.Context, gh Comments, repo ghapp.Repo, number int, marker, body string) (ghapp.Comment, error) {
	if c, found, err := gh.FindComment(ctx, repo, number, marker); err != nil || found {
		return c, err
	}
	return gh.CreateComment(ctx, repo, number, body)
}
