// Package admin serves the operator's views of the bot (DESIGN.md §3): the
// queues' counts and workers, the list of recent runs, the tasks in the queues and
// a run's trajectory as a readable page, plus the same run page, read-only,
// behind an expiring signed link for people without the admin token, and
// for `bot view DIR` on a run directory on this machine: the output
// directory of `bot fix`, or a worker's, which also holds the run record
// (NewLocalView).
//
// Routes (Server.Routes):
//
//	/admin/queues         each queue's tasks by state, its last 7 days,
//	                      and the workers (GET only: nothing is changed)
//	/admin/runs           recent runs, newest first; ?repo=, ?status=,
//	                      ?delivery= filter them, ?limit= caps them
//	/admin/runs/{run_id}  one run: task, steps, review phase, result, diff
//	/admin/tasks          the tasks in the queues, each linked to its run;
//	                      ?delivery= narrows them to one delivery
//	/admin/login          the token form for browsers; /admin/logout
//	/runs/{run_id}?exp=…&sig=…  one run's page behind a signed link
//
// The pages are for people: statuses in words (the value as recorded is
// the tooltip), one rounded duration per run, its wall time (from the
// job's start to its end; for a local run, the agent's), ✓ or ✗ with the
// exit code of each command, the total spend of the runs listed. A page
// that shows a running run (or, on /admin/tasks, an active task) reloads
// itself with a meta refresh until it ends: the pages have no scripts.
//
// Every admin page has the same top bar (Runs, Tasks, Queues, Log out). A
// task links to its run through the delivery id that every task payload
// and every run record carry: one run is linked directly, several (a
// retried task that started another) through the runs list filtered to the
// delivery. The queues page is the admin's own, read over asynq's
// Inspector, rather than asynqmon: asynqmon renders its page with the
// standard library's html/template, whose method lookup by name keeps
// every method in the binary (BENCHMARKS.md, "Binary size"), and its
// embedded UI alone is 7 MB.
//
// The /admin routes exist only when an admin token is configured
// (AGENTFIX_ADMIN_TOKEN): without one they are not mounted and answer 404.
// With one, every /admin route but the login form needs either the header
// "Authorization: Bearer <token>" or the session cookie the login form sets;
// anything else gets 401 with "WWW-Authenticate: Bearer" and the login form.
// Tokens are compared in constant time. The cookie exists because a browser
// cannot send a bearer header: it holds no token, only an expiry and an
// HMAC of it keyed with the token (so changing the token ends every
// session); it is HttpOnly, SameSite=Strict, scoped to /admin, Secure when
// the request came over TLS or the public URL is https, and lasts 12 hours.
//
// Signed run links (runs.SignLink, runs.VerifyLink) are keyed with
// runs.LinkKey of the webhook secret; a bad or tampered signature and an
// expired link get 403. The link grants reading that one run only.
//
// Everything shown comes from the run records mirrored in Redis (package
// runs) and the queues, so any process can serve any run; `bot view` reads
// the run directory instead, at every request, and answers only loopback
// requests for a loopback host (no authentication, no DNS rebinding).
// Model output, repository content, issue text and task payloads are
// untrusted: pages are rendered with html/template's escaping (DataDog's
// copy of it without method calls, package template/html) and never mark such
// text as safe; a Content-Security-Policy without scripts backs this up,
// and pages are not cached and send no referrer.
//
// The review phase (DESIGN.md §7) is found in the trajectory: it starts at
// the first submit call that did not end the run and whose answer carries
// the diff (the harness's review message; its refusals — nothing to submit,
// workflow files — carry none), or, when no answer carries a diff (custom
// review stages without one), at the first submit call that did not end the
// run; it lasts to the end of the run.
package admin
