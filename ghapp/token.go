package ghapp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/repo"
)

// Repo names a repository (package repo's identity).
type Repo = repo.Name

// ParseRepo parses "owner/name" (repo.Parse).
func ParseRepo(s string) (Repo, error) { return repo.Parse(s) }

// validRepo reports whether r could be a GitHub repository.
func validRepo(r Repo) bool { return repo.ValidPart(r.Owner) && repo.ValidPart(r.Name) }

// Token is an installation access token for git over HTTPS (user
// "x-access-token", the token as password). It is kept in memory only:
// String and LogValue redact it, so printing or logging a Token is safe;
// only Value holds the secret.
type Token struct {
	Value     string
	ExpiresAt time.Time
}

// String redacts the token.
func (t Token) String() string { return "[installation token, redacted]" }

// GoString redacts the token for %#v.
func (t Token) GoString() string { return "ghapp.Token{[redacted]}" }

// LogValue redacts the token in log records.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("value", "[redacted]"), slog.Time("expires_at", t.ExpiresAt))
}

// tokenKey keys the token cache: a token scoped to one repository is never
// served for another, nor for unscoped use.
type tokenKey struct {
	installation int64
	repo         string // lower-case "owner/name"
}

// tokenSource is one cached ghinstallation transport; mu serialises its use
// because ghinstallation's Expiry reads the token without its lock.
type tokenSource struct {
	mu sync.Mutex
	tr *ghinstallation.Transport
}

// Token returns an installation token that can access only repo, valid for
// at least Options.MinTokenValidity when GitHub issues tokens that long
// (installation tokens live one hour). Tokens are cached per installation and
// repository and replaced before they expire.
func (a *App) Token(ctx context.Context, installationID int64, repo Repo) (Token, error) {
	if installationID <= 0 {
		return Token{}, fmt.Errorf("token for %s: installation id must be positive, got %d", repo, installationID)
	}
	if !validRepo(repo) {
		return Token{}, fmt.Errorf("token for installation %d: invalid repository %q", installationID, repo)
	}
	key := tokenKey{installationID, strings.ToLower(repo.String())}
	scope := &github.InstallationTokenOptions{Repositories: []string{repo.Name}}
	a.mu.Lock()
	src, ok := a.tokens[key]
	if !ok {
		src = &tokenSource{tr: a.installationTransport(installationID, scope)}
		a.tokens[key] = src
	}
	a.mu.Unlock()

	src.mu.Lock()
	defer src.mu.Unlock()
	tok, err := a.fetchToken(ctx, src.tr)
	if err == nil && tok.ExpiresAt.Sub(a.policy.now()) < a.minValid {
		// ghinstallation renews only in the last minute; a push needs more.
		a.log.LogAttrs(ctx, slog.LevelDebug, "renewing installation token close to expiry",
			slog.Int64(logattr.InstallationID, installationID), slog.String(logattr.Repo, repo.String()))
		src.tr = a.installationTransport(installationID, scope)
		tok, err = a.fetchToken(ctx, src.tr)
	}
	if err != nil {
		return Token{}, fmt.Errorf("token of installation %d for %s: %w", installationID, repo, err)
	}
	return tok, nil
}

// fetchToken asks tr for its token (fetching a new one when needed),
// retrying like any API call.
func (a *App) fetchToken(ctx context.Context, tr *ghinstallation.Transport) (Token, error) {
	for attempt := 1; ; attempt++ {
		v, err := tr.Token(ctx)
		if err == nil {
			exp, _, err := tr.Expiry()
			if err != nil {
				return Token{}, err
			}
			return Token{Value: v, ExpiresAt: exp}, nil
		}
		verdict := a.policy.judge(ctx, attempt, true, nil, err)
		discard(nil, err)
		if !verdict.retry {
			if verdict.err != nil {
				return Token{}, verdict.err
			}
			return Token{}, err
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "installation token request retried",
			slog.Int(logattr.Attempt, attempt), slog.Duration(logattr.Wait, verdict.wait),
			slog.String(logattr.Reason, verdict.reason))
		if err := a.policy.sleep(ctx, verdict.wait); err != nil {
			return Token{}, err
		}
	}
}
