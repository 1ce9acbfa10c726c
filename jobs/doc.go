// Package jobs is the contract between the webhook edge and the workers: the
// two queues, the task types, their versioned payloads, the deterministic
// task ids, and the enqueue helper that applies DESIGN.md §4's conflict rule.
//
// Every accepted trigger delivery becomes one task notice:<delivery-id> on
// the interactive queue (it acknowledges and replies) and, when it starts
// work, one agent task fix:owner/repo#N or revise:owner/repo#PR on the agent
// queue. The checks and pushes GitHub reports become tasks of the bot's
// automatic rounds (ci.go). The consumers live in jobs/worker. This package is a leaf: it
// imports no other package of the project, and nothing of GitHub.
package jobs
