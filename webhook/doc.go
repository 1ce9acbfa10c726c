// Package webhook is the HTTP edge of the bot: it takes GitHub's deliveries,
// checks their size and signature, decides from the payload alone whether a
// delivery is a trigger (DESIGN.md §4), claims the delivery once, enqueues
// its tasks (package jobs) and answers 202 within milliseconds. It never
// calls GitHub, git or a model.
//
// One handler type per event, each in its own file, turns a payload into a
// small request and a decision; the decisions are tested without HTTP.
//
// # Bodies in flight
//
// A body is read only after its declared size (at most MaxBodyBytes, else
// 413) and the form of its signature header (else 401) were checked. Its
// buffer starts small and doubles as the bytes fill it; each growth is
// booked first against the budget of all bodies in flight
// (Options.MaxInflightBytes) and against the share of its client, the
// remote address as the server sees it (Options.MaxClientInflightBytes), and
// given back before the answer is written. So a body holds memory for what
// it sent, never for what it declared, and a client that fills its share is
// answered 503 (with Retry-After) while everyone else's deliveries are
// read. A body must also keep arriving: it has Options.BodyTimeout for its
// first bytes and Options.BodyTimeoutPerMiB more for each MiB received,
// else it is answered 408 and its connection closed; so a client that
// trickles bytes, with a declared length or chunked, is cut off within
// seconds, however often it comes back.
package webhook
