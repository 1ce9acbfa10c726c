// Package webhook is the HTTP edge of the bot: it takes GitHub's deliveries,
// checks their size and signature, decides from the payload alone whether a
// delivery is a trigger (DESIGN.md §4), claims the delivery once, enqueues
// its tasks (package jobs) and answers 202 within milliseconds. It never
// calls GitHub, git or a model.
//
// One handler type per event, each in its own file, turns a payload into a
// small request and a decision; the decisions are tested without HTTP.
package webhook
