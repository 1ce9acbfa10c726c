package report

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// NoPRDetail says in words why a run without a change made no pull
// request (the exit reason itself is in the run record).
func NoPRDetail(res agent.Result) string {
	switch res.Status {
	case agent.LimitsExceeded:
		return fmt.Sprintf("the agent reached a limit before it had a change (%s).", res.Reason)
	case agent.FormatErrorExit:
		return "the model's replies could not be used, several times in a row."
	case agent.ContextExceeded:
		return "the conversation outgrew the model's context window before the agent had a change."
	case agent.EnvDead:
		return "the sandbox stopped working before the agent had a change."
	case agent.APIError:
		return "the model provider kept failing before the agent had a change."
	case agent.Stuck:
		return "the agent repeated the same action with the same result, so the run ended before it had a change."
	case agent.ModelAuth:
		return "the model provider refused the bot's credentials; the bot's operator must fix the model credentials (its API key) before it can work."
	}
	return "an internal error ended the run before the agent had a change."
}

// IncompleteDetail says why an autosubmitted change is incomplete; empty
// for a submitted one.
func IncompleteDetail(res agent.Result) string {
	if res.Status != agent.Autosubmitted {
		return ""
	}
	switch res.Cause {
	case agent.LimitsExceeded:
		return strings.TrimPrefix(res.Reason, string(agent.LimitsExceeded)+": ")
	case agent.FormatErrorExit:
		return "the model's replies could not be used"
	case agent.ContextExceeded:
		return "the conversation outgrew the model's context window"
	case agent.EnvDead:
		return "the sandbox stopped working"
	case agent.APIError:
		return "the model provider kept failing"
	case agent.Stuck:
		return "the agent repeated the same action with the same result"
	case agent.ModelAuth:
		return "the model provider refused the bot's credentials, which the bot's operator must fix"
	}
	return "an internal error ended the run"
}

// ImageFailure says, for people, that the image a job's environment names
// (where says by whom) cannot be used, with the registry's or the
// unpacker's answer: the agent did not start.
func ImageFailure(image, where, answer string) string {
	return fmt.Sprintf("the image %s (%s) cannot be used, so the agent did not start: %s. Name an image the worker can pull, or ask the bot's operator to give it access.",
		Code(image), where, strings.TrimSuffix(answer, "."))
}

// Verification says how a run's change was checked, for check run
// summaries.
func Verification(res agent.Result) string {
	switch res.Status {
	case agent.Submitted:
		return "the agent reviewed its own change before submitting it"
	case agent.Autosubmitted:
		return "not reviewed: the change was submitted automatically when the run ended"
	}
	return "no change to verify"
}

// TestVerdict says how a test command ended: "passed", "failed with exit
// code 2", "timed out".
func TestVerdict(exitCode int, timedOut bool) string {
	switch {
	case timedOut:
		return "timed out"
	case exitCode == 0:
		return "passed"
	}
	return fmt.Sprintf("failed with exit code %d", exitCode)
}

// CancelDetail says in words why GitHub stopped a job (a closed issue, a
// removed installation); "" for a person's stop.
func CancelDetail(reason string) string {
	switch reason {
	case string(jobs.CancelIssueClosed):
		return "the issue was closed."
	case string(jobs.CancelInstallationDeleted), string(jobs.CancelInstallationSuspended), string(jobs.CancelRepositoriesRemoved):
		return "the App was removed from this repository."
	}
	return ""
}

// TriggerWords says in words where a command was written.
func TriggerWords(k jobs.TriggerKind) string {
	switch k {
	case jobs.TriggerReview:
		return "in a review"
	case jobs.TriggerReviewComment:
		return "in an inline review comment"
	case jobs.TriggerLabel:
		return "by labelling the issue"
	}
	return "in a comment"
}

// CheckConclusion is the conclusion and title of a job's check run once
// the job ended with o; incomplete is set for an autosubmitted change,
// pushed is the commit the job pushed (the check on the head a round
// started from is superseded by it).
func CheckConclusion(o outcome.Outcome, incomplete bool, pushed string, onPushed bool) (conclusion, title string) {
	switch {
	case o.Published() && onPushed && incomplete:
		return "neutral", "Incomplete: the run ended before the agent submitted"
	case o.Published() && onPushed:
		return "success", "The agent submitted this change"
	case o.Published():
		return "neutral", fmt.Sprintf("Superseded by %s, which has this round's result", ShortSHA(pushed))
	case o == outcome.NoChanges:
		return "neutral", "No change: the agent changed nothing"
	case o == outcome.Cancelled:
		return "cancelled", "Stopped"
	case o == outcome.WorkflowsRefused:
		return "failure", "Refused: the change touches workflows"
	case o == outcome.SymlinksRefused:
		return "failure", "Refused: the change holds symbolic links"
	}
	return "failure", "Failed: the round pushed nothing"
}

// GitHubTrouble says for people why a GitHub call failed: GitHub's own
// answer, without the request's details.
func GitHubTrouble(err error) string {
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
