package worker

import (
	"context"

	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// replier posts the short replies to triggers, each once per delivery
// (its marker), and the refusals once per user per issue (their claims).
type replier struct {
	texts *report.Texts
	store *store.Store
	cfg   *config.App
}

// reply is a short reply's data and the delivery it answers.
type reply struct {
	report.Reply
	delivery string
}

// data returns the common data of a short reply to requester for the
// delivery: its marker and the operator's trigger and limits.
func (r *replier) data(requester, deliveryID string) reply {
	c := r.cfg
	return reply{delivery: deliveryID, Reply: report.Reply{
		Marker: report.ReplyMarker(deliveryID), Requester: requester,
		Label: c.TriggerLabel, Command: c.Command, Limits: []string{report.Limits(c.MaxSteps, c.MaxCostUSD, c.MaxDuration)},
	}}
}

// post renders reply k with d and posts it on issue or pull request number,
// once for its delivery there: a claim keeps a delivery's notice and its
// job, which may both answer it at once, from posting twice, and the
// marker keeps a retry whose earlier post went through from posting again.
// A failed post frees the claim for the next try.
func (r *replier) post(ctx context.Context, gh report.Comments, repo ghapp.Repo, number int, k report.ReplyKind, d reply) error {
	c := store.ReplyClaim(repo, number, d.delivery)
	first, err := r.store.ClaimOnce(ctx, c)
	if err != nil || !first {
		return err
	}
	if err := r.postOnce(ctx, gh, repo, number, k, d); err != nil {
		r.store.Unclaim(ctx, c)
		return err
	}
	return nil
}

// postOnce posts reply k unless a comment on number has d's marker.
func (r *replier) postOnce(ctx context.Context, gh report.Comments, repo ghapp.Repo, number int, k report.ReplyKind, d reply) error {
	body, err := r.texts.Reply(k, d.Reply)
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, gh, repo, number, d.Marker, body)
	return err
}

// once posts reply k unless claim c was won before; a failed post frees
// the claim for the next try.
func (r *replier) once(ctx context.Context, c store.Claim, gh report.Comments, repo ghapp.Repo, number int, k report.ReplyKind, d reply) error {
	first, err := r.store.ClaimOnce(ctx, c)
	if err != nil || !first {
		return err
	}
	if err := r.post(ctx, gh, repo, number, k, d); err != nil {
		r.store.Unclaim(ctx, c)
		return err
	}
	return nil
}

// refuse tells a requester without write access, once per user per issue,
// that the bot does not work for them.
func (r *replier) refuse(ctx context.Context, gh report.Comments, repo ghapp.Repo, number int, isPR bool, login, deliveryID string) error {
	d := r.data(login, deliveryID)
	d.IsPR = isPR
	return r.once(ctx, store.RefusalClaim(repo, number, login), gh, repo, number, report.ReplyRefusal, d)
}

// notAllowed tells a requester the repository's configuration does not let
// them trigger the bot, once per user per issue (like the refusal of users
// without write access, with which it shares the claim).
func (r *replier) notAllowed(ctx context.Context, gh report.Comments, repo ghapp.Repo, number int, isPR bool, login, deliveryID string) error {
	d := r.data(login, deliveryID)
	d.IsPR, d.ConfigFile = isPR, config.RepoFile
	return r.once(ctx, store.RefusalClaim(repo, number, login), gh, repo, number, report.ReplyNotAllowed, d)
}

// overBudget tells the requester which budget is used up and when it
// resets, once per delivery (its notice and its job may both find it).
func (r *replier) overBudget(ctx context.Context, gh report.Comments, repo ghapp.Repo, number int, login, deliveryID string, over *budget.ExceededError) error {
	d := r.data(login, deliveryID)
	d.Budget = over.Message()
	return r.post(ctx, gh, repo, number, report.ReplyOverBudget, d)
}
