// Package worker runs the queued jobs: the interactive tasks (acknowledgements,
// replies, stop, help) and the agent jobs that turn an issue or a review into
// commits and a pull request (DESIGN.md §1, §4, §5).
//
// A Worker runs two asynq servers on one Redis, one per queue, each with its
// own concurrency: "interactive" (notice, cancel and follow-up tasks,
// seconds) and "agent" (fix and revise tasks, minutes); the tasks of
// automatic rounds join them (checks and basemoved on the interactive
// queue, ci and conflict rounds on the agent queue). Its dependencies are interfaces declared here
// — GitHub and Installations (ghapp), RepoCache (workspace.Cache), RunStore
// (runs.Store), SandboxFactory and ModelFactory — so cmd/bot wires the real
// ones and tests may pass real ones against fakes.
//
// # Jobs and retries
//
// A job is one trigger's run of an agent task: its key is the task id plus
// the delivery id. A retry of the task (same payload) finds everything of the
// job by that key — its status comment, its saved result, its run record —
// while a new trigger after the job ended (same task id, new delivery) is a
// new job. Every key a job keeps in Redis, with its TTL, is listed in
// package store (keys.go).
//
// The agent's result is saved before publishing, so a GitHub failure after
// the agent retries the publication, never the agent: the retry applies the
// saved patch to a fresh working copy of the same base and commits it with the
// same identity and time, so it pushes the very same commit. Pull requests are
// found by branch before one is opened (and ghapp resolves GitHub's 422
// "already exists"), comments carry hidden markers and are looked up before
// they are posted, and check runs carry the run id: a retry reuses its status
// comment, branch and pull request.
//
// # Revise rounds
//
// A revise task is one round on a pull request this App's bot opened
// (revise.go): a command in a comment, a review or an inline review comment
// on it, or a trigger on the issue, which the fix job moves to the pull
// request when one is open — so one round per pull request runs at a time,
// under the task id revise:owner/repo#PR. The round starts from the pull
// request's head in the cache and adds a commit (never a force push; when
// someone pushed meanwhile, the push is refused and the round says to ask
// again, since the agent worked on the old head). Its task holds the issue,
// the pull request's diff, the instructions, the triggering review's body
// and the review comments of people with write access (round.go,
// review_context.go). The round replies on the pull request with the
// agent's summary and in every inline thread of the reviews that asked for
// it (round_replies.go), and keeps a check run on the head it started from
// (round_check.go). A round whose change the agent submitted and nothing
// keeps a draft (a failed test command, draft: true) marks the bot's draft
// pull request ready for review — a GraphQL call, or the "[incomplete] "
// or "[draft] " mark taken off the title where drafts are refused — and
// puts a note in place of the body's draft notice (ready.go). Commands that
// come while a round is queued or running are kept, and start one
// follow-up round when it ends (followup.go).
//
// # Automatic rounds
//
// The bot also starts rounds nobody asked for on its own pull requests
// (autoround.go): a checks task — a check suite or a failed check run
// completed — starts a ci round (ciround.go) once every check suite on the
// head completed with a failure, after re-running failed GitHub Actions
// jobs once when the repository asks (ci.rerun_failed; a check that then
// passes is said to be flaky); a basemoved task — a push to a default
// branch — starts a conflict round (conflictround.go) on each of the
// bot's pull requests into it that GitHub finds dirty. Both are revise
// rounds under the pull request's task id, with the App's bot as their
// requester, no status comment and one reply; ci.max_rounds bounds them
// per pull request (one per head commit, the limit said once), and a stop
// on the pull request, ci.enabled: false or a person's commit on the
// branch keeps them from starting.
//
// # Repository settings and budgets
//
// A job reads the repository's .github/agent-fix.yml from the default
// branch (repoconfig.go: loadRepoConfig, with its owner's .github
// repository and _extends, each file with a token scoped to its
// repository) and applies it: setup commands in the sandbox with network
// before the agent (setup.go), the test command in the review, the
// instructions in the task, the model, the limits lowered by the
// repository's, allowed_users and allowed_teams, workflow changes, the
// branch prefix, labels and drafts (prfacts.go). The notice and the job
// both check a trigger against those settings and the daily budgets before
// any work (admit.go); an invalid file is reported in the job's status
// comment. Every model call is charged to the job's, the repository's and
// the installation's budgets by agent hooks that reserve an upper bound of
// its cost before the call and settle the actual cost after it (spend.go).
//
// Every report to GitHub once the agent ran uses a context that survives
// the job's cancellation. A job whose context is cancelled with its cancel
// marker set (stop, a closed issue, a removed installation) ends as
// cancelled, for good; without a marker the worker is shutting down, so it
// says "interrupted" and returns the error for asynq to retry the task on
// another worker.
//
// Every text the bot writes for people is an embedded template
// (templates/*.md.tmpl, golden-tested); model-written text in it goes
// through Neutralize.
package worker
