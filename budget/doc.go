// Package budget enforces the spending limits of DESIGN.md §9 in Redis:
// per job, per repository per UTC day and per installation per UTC day.
//
// Parallel workers cannot overspend because nothing is charged blindly:
// before each model call the worker reserves an upper bound of what the call
// may cost (Reserve), and one Lua script checks all three scopes and records
// the reservation in all of them atomically — it succeeds only when, in
// every scope, spent + held by other reservations + this estimate stays
// within the limit. After the call the worker settles the reservation with
// the actual cost (Settle), which releases the hold and adds the actual
// amount to what was spent. So the total charged never exceeds a limit as
// long as each call costs no more than its estimate; Settle reports a call
// that did.
//
// A reservation held by a worker that died expires after Options.
// ReservationTTL and stops counting. Keys of a UTC day expire 48 h after
// the day began; job keys 48 h after their last use. All keys of one
// installation share a Redis Cluster hash slot, so the scripts work on a
// cluster too.
//
// Amounts are kept in micro-dollars (integers), so increments never drift.
// A model without a price costs 0 USD: its spend is counted in tokens, which
// have limits of their own (zero means no limit); without token limits such
// a job is bounded by its steps and time only.
package budget
