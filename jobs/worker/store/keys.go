package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentfix/agentfix/repo"
)

// Every Redis key the worker writes, by family. A job is one trigger's run
// of an agent task: its key (JobKey) is the task id and the delivery id,
// so a retry (same payload) finds the job's status comment and saved
// result, while a new trigger after the job ended (same task id, new
// delivery) starts a new job. The budgets' keys (agentfix:budget:…)
// belong to package budget, the run records' (agentfix:run:…) to package
// runs, the deliveries' claims to package webhook, asynq's (asynq:…) to
// asynq.
const (
	// jobLockPrefix + job key: one handler per job at a time (SET NX,
	// refreshed while held).
	jobLockPrefix = "agentfix:joblock:"
	// statusPrefix + job key: the status comment's id and URL ("pending"
	// while one task creates it).
	statusPrefix = "agentfix:status:"
	// resultPrefix + job key: the agent's result, saved before anything is
	// published, and whether the job was fully reported.
	resultPrefix = "agentfix:result:"
	// checkPrefix + job key: the check runs the job put on commits
	// ("<sha> <id>" per head), so a retry completes the same ones.
	checkPrefix = "agentfix:check:"
	// jobRunPrefix + job key: the run record of the job's latest attempt,
	// so the next attempt or the sweeper can end it.
	jobRunPrefix = "agentfix:jobrun:"
	// baselinePrefix + key: the base commit's run of a test command
	// (session.BaselineCache), by repository, commit, environment and
	// command.
	baselinePrefix = "agentfix:baseline:"
	// leaderPrefix + name: which worker runs a periodic sweep now.
	leaderPrefix = "agentfix:leader:"
	// cancelPrefix + task id: the cancel marker of one delivery's job.
	cancelPrefix = "agentfix:cancel:"
	// refusedPrefix + repo#number:login: one refusal per user per issue.
	refusedPrefix = "agentfix:refused:"
	// helpPrefix + repo#number:login: help at most every helpTTL.
	helpPrefix = "agentfix:help:"
	// replyPrefix + repo#number:delivery: one short reply per trigger on
	// an issue or pull request (its notice and its job may both answer it,
	// e.g. both find the budget used up or the pull request another's).
	replyPrefix = "agentfix:reply:"
	// followupPrefix + revise task id: commands kept for one more round.
	followupPrefix = "agentfix:followup:"
	// roundEndPrefix + revise task id: the delivery of the round that just
	// ended (see followup.go).
	roundEndPrefix = "agentfix:roundend:"

	// The keys of automatic rounds (auto.go): the rounds the bot starts on
	// its own pull requests, unasked, when their checks fail or they no
	// longer merge with their base branch.

	// autoRoundsPrefix + repo#number: the automatic rounds a pull request
	// had, a set of round ids (one per head commit and kind), which
	// ci.max_rounds bounds.
	autoRoundsPrefix = "agentfix:autorounds:"
	// autoStopPrefix + repo#number: who stopped the automatic rounds of a
	// pull request (a stop command on it), until a resume command; no TTL.
	autoStopPrefix = "agentfix:autostop:"
	// rerunPrefix + repo@commit: the checks whose failed jobs the bot
	// re-ran on a commit (JSON names), so it re-runs them once.
	rerunPrefix = "agentfix:rerun:"
	// autoNotePrefix + repo#number:what: a note of automatic rounds said
	// once on a pull request (the limit reached, flaky checks of a head).
	autoNotePrefix = "agentfix:autonote:"
)

// TTLs of the keys.
const (
	jobLockTTL    = time.Minute
	statusTTL     = 7 * 24 * time.Hour
	statusPending = 2 * time.Minute
	resultTTL     = 24 * time.Hour
	checkTTL      = 24 * time.Hour
	jobRunTTL     = 24 * time.Hour
	baselineTTL   = 7 * 24 * time.Hour
	cancelTTL     = 24 * time.Hour
	refusedTTL    = 30 * 24 * time.Hour
	helpTTL       = 10 * time.Minute
	replyTTL      = 24 * time.Hour
	followupTTL   = 24 * time.Hour
	// autoTTL is how long the state of a pull request's automatic rounds
	// (but its stop) is kept after its last change: longer than a pull
	// request usually stays open unattended.
	autoTTL = 30 * 24 * time.Hour
)

// JobKey identifies a job: its agent task and the delivery that started it.
func JobKey(taskID, deliveryID string) string { return taskID + ":" + deliveryID }

// Claim is a key set once to do something once: SET NX with its TTL.
type Claim struct {
	key string
	ttl time.Duration
}

// RefusalClaim is the one refusal (no write access, or left out by
// allowed_users and allowed_teams) of login on issue or pull request n.
func RefusalClaim(r repo.Name, n int, login string) Claim {
	return Claim{key: fmt.Sprintf("%s%s#%d:%s", refusedPrefix, r.Key(), n, strings.ToLower(login)), ttl: refusedTTL}
}

// HelpClaim is login's help on issue or pull request n, at most once every
// ten minutes.
func HelpClaim(r repo.Name, n int, login string) Claim {
	return Claim{key: fmt.Sprintf("%s%s#%d:%s", helpPrefix, r.Key(), n, strings.ToLower(login)), ttl: helpTTL}
}

// ReplyClaim is the one short reply to a delivery on issue or pull request
// n.
func ReplyClaim(r repo.Name, n int, deliveryID string) Claim {
	return Claim{key: fmt.Sprintf("%s%s#%d:%s", replyPrefix, r.Key(), n, deliveryID), ttl: replyTTL}
}
