// Package worker runs the queued jobs: the interactive tasks (acknowledgements,
// replies, stop, help) and the agent jobs that turn an issue or a review into
// commits and a pull request (DESIGN.md §1, §4, §5).
//
// A Worker runs two asynq servers on one Redis, one per queue, each with its
// own concurrency: "interactive" (notice and cancel tasks, seconds) and
// "agent" (fix tasks, minutes). Its dependencies are interfaces declared here
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
// new job. What a job keeps in Redis:
//
//	agentfix:joblock:<key>        one handler per job at a time (SET NX, refreshed)
//	agentfix:status:<key>         the status comment's id and URL ("pending" while being created)
//	agentfix:result:<key>         the agent's result, saved before anything is published, and
//	                              whether the job was fully reported (24 h)
//	agentfix:cancel:<task id>     the cancel marker: which delivery's job, who, why (24 h)
//	agentfix:refused:<repo>#<n>:<login>  one refusal per user per issue (30 days)
//	agentfix:help:<repo>#<n>:<login>     help at most every 10 minutes per user per issue
//	agentfix:followup:<task id>   commands kept for one more revise round
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
