// Package ghfake is a stateful fake of GitHub for tests: the REST API the
// bot uses, served by httptest under a non-empty base path (/api/v3/, like
// GitHub Enterprise Server), the one GraphQL mutation it uses
// (markPullRequestReadyForReview, at /api/graphql), and a real git HTTP
// server (git http-backend behind net/http/cgi) over bare repositories made
// in t.TempDir().
//
// The fake is one GitHub App with one RSA key pair, generated per fake; the
// bot under test gets AppID and PrivateKeyPEM. App endpoints (/app, the
// webhook deliveries, installation tokens) require a valid RS256 JWT signed
// with that key, issued by the App id and expiring within ten minutes.
// Repository endpoints and GraphQL require a current installation token
// whose installation (and, when the token is scoped, whose repository list)
// includes the repository (for GraphQL, the pull request's); the git server
// accepts only such tokens, as the password of user x-access-token. Tokens
// expire (SetTokenTTL, ExpireTokens) and expired ones are refused like
// GitHub does (401).
//
// State is seeded and inspected through methods (NewRepo, Install, AddIssue,
// SetPermission, AddReview, AddTeamMember, …; Comments, PRs, Reactions,
// CheckRuns, Files, TokenScopes, …). Every request is recorded (Calls), and faults can be injected for the
// next matching request (FailNext, Inject): 5xx, 403 rate limits, 429 with
// Retry-After, 422s — before the request takes effect or, with
// Fault.AfterEffect, after it, the way a lost answer looks to a client.
//
// Behaviours modelled on GitHub: issues and pull requests share numbers;
// pull requests see the head commit of their branch as pushed to the git
// server; opening a second open pull request from the same head answers 422
// "A pull request already exists for owner:branch."; a repository can refuse
// drafts (DisableDrafts) with GitHub's 422; reviews can be requested only
// from collaborators other than the author; a pull request has a node id
// (node_id) by which GraphQL finds it, and GraphQL answers its errors with
// status 200 (NOT_FOUND for a node the token cannot reach, an error for any
// other operation); a reaction is created once per user and content;
// listings paginate with Link headers (per_page up to 100), and webhook
// deliveries with cursors; a manifest code converts once.
//
// Checks (checks.go): check runs of other Apps (AddCheckRun) and GitHub
// Actions jobs (AddJob) belong to check suites, one per App and commit
// (per workflow run for Actions), whose status and conclusion follow their
// latest runs; a suite without runs stays queued (AddCheckSuite). A job's
// log is served behind a redirect to an unauthenticated address, as
// GitHub's signed storage URLs are, and a download that carries
// credentials is refused and counted; a job can answer 404, 410 or 403
// instead (Job.LogStatus). Re-running a run's failed jobs makes new
// attempts that supersede the old check runs. A single pull request's
// read computes mergeable and mergeable_state from its branches with git
// merge-tree ("dirty" on conflicts), or answers "unknown" while
// SetMergeableUnknown holds; its commits list who made them (CommitAs).
// CheckSuiteEvent, CheckRunEvent and PushEvent make the webhook payloads
// of that state.
//
// Seeding and inspection methods call t.Fatal on misuse (an unknown
// repository, say), so they must run on the test's goroutine.
package ghfake
