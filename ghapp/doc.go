// Package ghapp is the bot's side of GitHub: it authenticates as the GitHub
// App (a short JWT signed with the App's private key) and as its installations
// (installation tokens from ghinstallation, cached per installation and
// refreshed before they expire), and it offers the REST calls the worker makes
// as methods of a small per-installation Client — and the one call REST
// lacks, MarkReadyForReview, a GraphQL mutation sent as a plain JSON POST to
// the GraphQL endpoint of the same host (https://api.github.com/graphql, or
// https://HOST/api/graphql for GitHub Enterprise Server) through the same
// authenticated, retrying transport.
//
// An App is built once from Options; App.Installation returns the Client of an
// installation, App.Token a token scoped to one repository for git, and
// App.Forget drops what is cached for an installation that was deleted or
// suspended.
//
// # Retries
//
// Every request goes through one retrying transport above the authentication,
// so each call is retried on its own (with a fresh token or JWT per attempt)
// and a GitHub hiccup never re-runs a job:
//
//   - 5xx answers and connection errors are retried with exponential backoff
//     and jitter, at most Options.Retry.MaxAttempts attempts, for idempotent
//     methods (GET, HEAD, PUT, PATCH, DELETE) and for the POSTs that are safe to
//     repeat: installation tokens (a second token is harmless), reactions and
//     labels (GitHub keeps one of each), requested reviewers (a set),
//     redeliveries (the edge claims each delivery id once), pull request
//     creation (a repeat after a lost success answers 422 "already exists",
//     which CreatePR resolves to the existing pull request) and the GraphQL
//     mutation marking a pull request ready for review (marking it twice is
//     harmless).
//   - POSTs that would create a duplicate — issue comments, review comment
//     replies, check runs — are sent once by the transport. The Client makes
//     them idempotent itself: after an ambiguous failure (5xx or connection
//     error, when GitHub may have acted) it looks for what the first attempt may
//     have created — a comment of the bot carrying the same marker (see Marker),
//     a check run with the same external id — and creates again only when it
//     finds nothing. A comment without a marker is not retried after an
//     ambiguous failure.
//   - 403 and 429 rate limits (Retry-After, X-RateLimit-Remaining: 0 with
//     X-RateLimit-Reset, secondary rate limit messages) are retried for every
//     method, since GitHub did not process the request, after the wait GitHub
//     asks for when it is at most Options.Retry.MaxRateLimitWait; a longer wait
//     ends the call with a *RateLimitError that says when the limit resets.
//   - Any other 4xx answer (401, 404, 422, …) is returned at once, as an
//     *APIError (errors.Is(err, ErrNotFound) for 404). A GraphQL answer
//     with errors (GitHub sends them with 200) is a *GraphQLError.
//
// Installation tokens and JWTs live in memory only. They are never part of an
// error, a log record or a URL; Token's String and LogValue methods redact
// the value.
//
// # Setup mode
//
// Setup is the /setup page of setup mode (mounted by cmd/bot when no App is
// configured): GitHub's manifest flow creates the App in three clicks, and its
// credentials are saved in .env in the working directory for the next start.
// deploy/github-app-manifest.json is the same manifest with placeholder URLs.
package ghapp
