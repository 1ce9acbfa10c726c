package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
)

// replyData returns the common data of a short reply to requester for the
// delivery: its marker and the operator's trigger and limits.
func (w *Worker) replyData(requester, deliveryID string) replyData {
	c := w.opts.Config
	return replyData{
		Marker: ghapp.Marker("reply " + deliveryID), Requester: requester,
		Label: c.TriggerLabel, Command: c.Command, Limits: operatorLimits(c),
	}
}

// operatorLimits are the operator's per-job limits as help shows them.
func operatorLimits(c *config.App) []string {
	return []string{fmt.Sprintf("each job: at most %d agent steps, %s of model spend and %s",
		c.MaxSteps, usd(c.MaxCostUSD), humanDuration(c.MaxDuration))}
}

// reply renders template name with d and posts it on issue or pull request
// number, once for d.Marker.
func (w *Worker) reply(ctx context.Context, gh GitHub, repo ghapp.Repo, number int, name string, d replyData) error {
	body, err := w.texts.render(name, d)
	if err != nil {
		return err
	}
	return w.postOnce(ctx, gh, repo, number, d.Marker, body)
}

// postOnce posts body unless a comment of the bot with marker is already
// there (an earlier attempt of the same task posted it).
func (w *Worker) postOnce(ctx context.Context, gh GitHub, repo ghapp.Repo, number int, marker, body string) error {
	if _, found, err := gh.FindComment(ctx, repo, number, marker); err != nil {
		return err
	} else if found {
		return nil
	}
	_, err := gh.CreateComment(ctx, repo, number, body)
	return err
}

// refuse tells a requester without write access, once per user per issue,
// that the bot does not work for them.
func (w *Worker) refuse(ctx context.Context, gh GitHub, repo ghapp.Repo, number int, isPR bool, login, deliveryID string) error {
	key := fmt.Sprintf("%s%s#%d:%s", refusedPrefix, strings.ToLower(repo.String()), number, strings.ToLower(login))
	first, err := w.state.claimOnce(ctx, key, refusedTTL)
	if err != nil || !first {
		return err
	}
	d := w.replyData(login, deliveryID)
	d.IsPR = isPR
	if err := w.reply(ctx, gh, repo, number, tmplRefusal, d); err != nil {
		w.state.unclaim(ctx, key)
		return err
	}
	return nil
}

// ensureStatus returns the status comment of job key, posting it
// ("queued") when neither the notice nor an earlier attempt did.
func (w *Worker) ensureStatus(ctx context.Context, gh GitHub, repo ghapp.Repo, number int, key, requester string) (commentRef, error) {
	return w.state.statusComment(ctx, key, func(ctx context.Context) (commentRef, error) {
		marker := ghapp.Marker("status " + key)
		if c, found, err := gh.FindComment(ctx, repo, number, marker); err != nil {
			return commentRef{}, err
		} else if found {
			return commentRef{ID: c.ID, URL: c.HTMLURL}, nil
		}
		body, err := w.texts.render(tmplStatus, statusData{Marker: marker, Requester: requester, Phase: PhaseQueued, OnPR: isRoundKey(key)})
		if err != nil {
			return commentRef{}, err
		}
		c, err := gh.CreateComment(ctx, repo, number, body)
		if err != nil {
			return commentRef{}, err
		}
		return commentRef{ID: c.ID, URL: c.HTMLURL}, nil
	})
}

// newStatusComment returns the editor of job key's status comment ref.
func (w *Worker) newStatusComment(gh GitHub, repo ghapp.Repo, ref commentRef, key, requester string, log *slog.Logger) *statusComment {
	return &statusComment{
		gh: gh, repo: repo, texts: w.texts, interval: w.opts.StatusInterval, now: w.now, log: log, ref: ref,
		data: statusData{
			Marker: ghapp.Marker("status " + key), Requester: requester, Phase: PhaseQueued, OnPR: isRoundKey(key),
			MaxSteps: w.opts.Config.MaxSteps, MaxCostUSD: w.opts.Config.MaxCostUSD,
		},
	}
}
