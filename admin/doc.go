// Package admin serves the operator's views of the bot (DESIGN.md §3): the
// asynq queue monitor, the list of recent runs and a run's trajectory as a
// readable page, plus the same run page, read-only, behind an expiring
// signed link for people without the admin token.
//
// Routes (Server.Routes):
//
//	/admin/queues/...     asynqmon, read-only (GET only)
//	/admin/runs           recent runs, newest first
//	/admin/runs/{run_id}  one run: task, steps, review phase, result, diff
//	/admin/login          the token form for browsers; /admin/logout
//	/runs/{run_id}?exp=…&sig=…  one run's page behind a signed link
//
// The /admin routes exist only when an admin token is configured
// (AGENTFIX_ADMIN_TOKEN): without one they are not mounted and answer 404.
// With one, every /admin route but the login form needs either the header
// "Authorization: Bearer <token>" or the session cookie the login form sets;
// anything else gets 401 with "WWW-Authenticate: Bearer" and the login form.
// Tokens are compared in constant time. The cookie exists because a browser
// cannot send a bearer header, and the queue monitor is a single-page app
// whose requests carry cookies: it holds no token, only an expiry and an
// HMAC of it keyed with the token (so changing the token ends every
// session); it is HttpOnly, SameSite=Strict, scoped to /admin, Secure when
// the request came over TLS or the public URL is https, and lasts 12 hours.
//
// Signed run links (runs.SignLink, runs.VerifyLink) are keyed with
// runs.LinkKey of the webhook secret; a bad or tampered signature and an
// expired link get 403. The link grants reading that one run only.
//
// Everything shown comes from the run records mirrored in Redis (package
// runs), so any process can serve any run. Model output, repository content
// and issue text are untrusted: pages are rendered with html/template and
// never mark such text as safe; a Content-Security-Policy without scripts
// backs this up, and pages are not cached and send no referrer.
//
// The review phase (DESIGN.md §7) is found in the trajectory: it starts at
// the first submit call that did not end the run and whose answer carries
// the diff (the harness's review message; its refusals — nothing to submit,
// workflow files — carry none), or, when no answer carries a diff (custom
// review stages without one), at the first submit call that did not end the
// run; it lasts to the end of the run.
package admin
