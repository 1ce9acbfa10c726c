// Package redeliver recovers the webhook deliveries GitHub failed to make.
// GitHub does not retry a delivery the bot did not answer with a 2xx (the
// edge was down, Redis was unavailable, a deploy was in progress); it only
// lists it, for three days, and redelivers it on request.
//
// A sweep lists the App's deliveries since a time, groups them by GUID (a
// redelivery keeps the GUID of the original, so a delivery that later
// succeeded is not failed), and asks GitHub to redeliver each failed GUID
// exactly once: before asking, the sweep claims the GUID in Redis (SET NX
// with a TTL longer than GitHub's three days), so two sweeps — two workers,
// or a worker and `bot redeliver` — never redeliver the same delivery
// twice. A request GitHub did not take (a 5xx, a rate limit, a lost
// connection) releases the claim for the next sweep; one GitHub refused
// (4xx) keeps it.
//
// Sweeper.Sweep is one sweep, for `bot redeliver --since 6h`, which
// redelivers every failed delivery. Sweeper.Run is the worker's loop: every
// few minutes one worker, the holder of a leader lock in Redis (SET NX PX
// with a random token, renewed while it sweeps, released with a
// compare-and-delete script), sweeps from shortly before the previous sweep
// (after an outage of the workers, from where they stopped, at most three
// days back). The loop holds back a failed delivery until some delivery
// succeeded after it: while the edge is still down, a redelivery would fail
// and use up the one attempt.
package redeliver
