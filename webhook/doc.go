// Package webhook is the HTTP edge of the bot: it takes GitHub's deliveries,
// checks their size and signature, decides from the payload alone whether a
// delivery is a trigger (DESIGN.md §4), claims the delivery once, enqueues
// its tasks (package jobs) and answers 202 within milliseconds. It never
// calls GitHub, git or a model.
//
// One handler type per event, each in its own file, turns a payload into a
// small request and a decision; the decisions are tested without HTTP.
// Besides the triggers, completed check suites and failed check runs on
// pull requests (check_suite.go, check_run.go) and pushes to a default
// branch (push.go) become tasks with which the worker decides on its
// automatic rounds; the edge cannot know which pull requests are the
// bot's, so the worker checks.
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
//
// # Refused or ignored
//
// A delivery is answered 400, and nothing is claimed or enqueued, when it
// cannot be one GitHub sent: JSON that is malformed or has a field of the
// wrong type, and, once it would start or stop work, a field the task uses
// outside what GitHub sends:
//
//   - an issue or pull request number that is not positive (absent
//     included);
//   - a repository full_name, in the payload or in repositories_removed,
//     that repo.Parse, the worker's parser, refuses (absent, "a/b/c",
//     "../x");
//   - a sender without a login, or with one that is not a GitHub login
//     (letters, digits, '-' and '_', "[bot]" after an App's), for the
//     deliveries that act for the sender: a fix, a revise round, a notice;
//   - a negative installation id;
//   - a check suite's or check run's head_sha, or a push's after, that is
//     not a full commit id, and a pull request number of a check that is
//     not positive.
//
// Such a delivery is a fault upstream or a forgery made with the secret;
// the 400 shows it as failed in the App's delivery log, and the one
// redelivery the sweeper asks for is refused the same way. A delivery is
// answered 202 "ignored", with the reason, when it is well formed but asks
// nothing of the bot: an event, action or label that is not a trigger, a
// bot sender, a comment without the command, a closed issue, no
// installation (a repository's webhook, not the App's). Those checks come
// first, so a delivery is never refused for a field it does not use. A 503
// means only that the queue was unavailable or the edge overloaded, and is
// worth repeating.
package webhook
