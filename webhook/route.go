package webhook

import (
	"errors"

	"github.com/agentfix/agentfix/jobs"
)

// commentRequest is a comment, a review or an inline review comment that
// may carry a command, reduced to what routing needs.
type commentRequest struct {
	deliveryID   string
	action       string // the payload's action
	trigger      string // the action that may trigger: created or submitted
	installation int64
	repo         jobs.Repo
	number       int
	isPR         bool
	prAuthor     jobs.User // isPR only
	sender       jobs.User
	senderIsBot  bool
	body         string
	source       jobs.Trigger
}

// routeComment decides what a comment asks for (DESIGN.md §4): on an issue
// a fix; on a PR opened by a bot a revise round (the worker checks the bot
// is this App); on a PR opened by a person only a notice saying the bot
// revises its own PRs; stop, resume and help only a notice, for the interactive
// worker to act on. A comment that asks for any of these fails when a
// field the task uses is one GitHub never sends (validate.go).
func (r rules) routeComment(c commentRequest) (decision, error) {
	switch {
	case c.action != c.trigger:
		return ignored("action %s is not a trigger (only %s)", c.action, c.trigger), nil
	case c.senderIsBot:
		return ignored("sender %s is a bot", c.sender.Login), nil
	case c.installation == 0:
		return ignored("no installation in the payload (not a GitHub App delivery)"), nil
	}
	cmd, ok := parseCommand(c.body, r.command)
	if !ok {
		return ignored("no %s command", r.command), nil
	}
	if err := errors.Join(checkInstallation(c.installation), checkTarget(c.repo, c.number), checkSender(c.sender)); err != nil {
		return decision{}, err
	}
	notice := &jobs.Notice{
		DeliveryID: c.deliveryID, Installation: c.installation, Repo: c.repo, Number: c.number,
		IsPR: c.isPR, Trigger: c.source, Requester: c.sender, Command: cmd,
	}
	if c.isPR {
		author := c.prAuthor
		notice.Author = &author
	}
	switch {
	case cmd.Verb == jobs.VerbStop:
		notice.Outcome = jobs.OutcomeStop
		return decision{notice: notice}, nil
	case cmd.Verb == jobs.VerbResume:
		notice.Outcome = jobs.OutcomeResume
		return decision{notice: notice}, nil
	case cmd.Verb == jobs.VerbHelp:
		notice.Outcome = jobs.OutcomeHelp
		return decision{notice: notice}, nil
	case !c.isPR:
		return decision{fix: &jobs.FixIssue{
			DeliveryID: c.deliveryID, Installation: c.installation, Repo: c.repo, Number: c.number,
			Trigger: c.source, Requester: c.sender, Instructions: cmd.Instructions,
		}}, nil
	case c.prAuthor.Type == "Bot":
		return decision{revise: &jobs.RevisePR{
			DeliveryID: c.deliveryID, Installation: c.installation, Repo: c.repo, Number: c.number,
			Trigger: c.source, Requester: c.sender, Instructions: cmd.Instructions, Author: c.prAuthor,
		}}, nil
	default:
		notice.Outcome = jobs.OutcomeNotBotsPR
		return decision{notice: notice}, nil
	}
}
