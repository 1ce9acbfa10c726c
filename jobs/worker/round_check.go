package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// roundCheckPrefix keys the check run a round put on the head it started
// from ("<sha> <id>"), so a retry of the job completes the same one.
const roundCheckPrefix = "agentfix:roundcheck:"

// roundCheck is the check run on the head commit a round started from.
type roundCheck struct {
	id  int64
	sha string
}

// startRoundCheck puts the agentfix check run, in progress, on head — the
// pull request's head as the round starts — or finds the one an earlier
// attempt of the job put there. Failures are logged: the App may lack the
// checks permission.
//
// A round that pushes a commit leaves two check runs: this one, completed
// as neutral and titled "Superseded by <commit>", and the one on the new
// head with the round's outcome (as a fix job's). The pull request shows
// the new head's, so its checks say what the round did, while the old
// head's history says a round started there.
func (j *job) startRoundCheck(ctx context.Context, head string) {
	r := j.round
	key := roundCheckPrefix + j.key
	if v, err := j.w.rdb.Get(ctx, key).Result(); err == nil {
		sha, idText, _ := strings.Cut(v, " ")
		if id, err := strconv.ParseInt(idText, 10, 64); err == nil && sha == head {
			r.check = roundCheck{id: id, sha: sha}
			return
		}
	} else if !errors.Is(err, redis.Nil) {
		j.log.Warn("read the round's check run", logattr.Err, err)
	}
	summary, err := j.w.texts.render(tmplCheckRun, checkData{Outcome: "running", Issue: j.p.Number,
		Requester: j.p.Requester.Login, Model: j.cfg.Model, RunID: j.runID()})
	var cr ghapp.CheckRun
	if err == nil {
		cr, err = j.gh.CreateCheckRun(ctx, j.repo, ghapp.NewCheckRun{Name: CheckRunName, HeadSHA: head, ExternalID: j.runID(),
			Status: "in_progress", Title: fmt.Sprintf("Revising #%d", r.pr.Number), Summary: summary})
	}
	if err != nil {
		j.log.Warn("create the round's check run", logattr.Err, err)
		return
	}
	r.check = roundCheck{id: cr.ID, sha: head}
	if err := j.w.rdb.Set(ctx, key, head+" "+strconv.FormatInt(cr.ID, 10), resultTTL).Err(); err != nil {
		j.log.Warn("remember the round's check run", logattr.Err, err)
	}
}

// endRoundCheck completes the round's check run with outcome.
func (j *job) endRoundCheck(ctx context.Context, outcome, commit string, res agent.Result) {
	r := j.round
	if r.check.id == 0 {
		return
	}
	conclusion, title := roundConclusion(outcome, commit)
	summary, err := j.w.texts.render(tmplCheckRun, checkData{Outcome: conclusion, Issue: j.p.Number,
		Requester: j.p.Requester.Login, ExitStatus: res.Status, Detail: incompleteDetail(res), Model: j.cfg.Model,
		Steps: res.Steps, CostUSD: res.CostUSD, Duration: res.Duration, RunID: j.runID(), Verification: verificationOf(res)})
	if err == nil {
		_, err = j.gh.UpdateCheckRun(ctx, j.repo, r.check.id, ghapp.CheckRunUpdate{Name: CheckRunName, Status: "completed",
			Conclusion: conclusion, Title: title, Summary: summary})
	}
	if err != nil {
		j.log.Warn("complete the round's check run", logattr.Err, err)
	}
}

// roundConclusion is the conclusion and title of the check run on the head
// a round started from.
func roundConclusion(outcome, commit string) (conclusion, title string) {
	switch outcome {
	case outcomePRUpdated:
		return "neutral", fmt.Sprintf("Superseded by %s, which has this round's result", shortSHA(commit))
	case outcomeNoChanges:
		return "neutral", "No change: the agent changed nothing"
	case outcomeCancelled:
		return "cancelled", "Stopped"
	case outcomeRefused:
		return "failure", "Refused: the change touches workflows"
	}
	return "failure", "Failed: the round pushed nothing"
}

// shortSHA is a commit id as people read it.
func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
