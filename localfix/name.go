package localfix

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// The parts of a GitHub repository's full name: an owner of letters,
// digits and inner hyphens, and a name of letters, digits, '.', '_' and
// '-'.
var (
	ownerPart = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	namePart  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// validRepoName reports whether s is a repository's full name, owner/name.
func validRepoName(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && ownerPart.MatchString(owner) && namePart.MatchString(name) && name != "." && name != ".."
}

// repoNameFromURL returns the owner/name a GitHub-style remote URL names:
// https://host/owner/name(.git), ssh://git@host/owner/name.git or the
// scp-like git@host:owner/name.git. Any other URL (a local path, a file://
// URL, a path deeper than owner/name) names none.
func repoNameFromURL(remote string) (string, bool) {
	var path string
	if scheme, _, ok := strings.Cut(remote, "://"); ok {
		u, err := url.Parse(remote)
		if err != nil || u.Host == "" {
			return "", false
		}
		switch strings.ToLower(scheme) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return "", false
		}
		path = u.Path
	} else {
		// scp-like: [user@]host:path, with no slash before the colon.
		host, p, ok := strings.Cut(remote, ":")
		if !ok || host == "" || strings.Contains(host, "/") {
			return "", false
		}
		path = p
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if !validRepoName(path) {
		return "", false
	}
	return path, true
}

// repoName returns the repository's full name for the task: flag
// (--repo-name) when set, else the owner/name of the origin remote's URL.
// The directory's name is never used: the agent would take it for the
// repository's real name.
func (r *userRepo) repoName(ctx context.Context, flag string) (string, error) {
	if flag != "" {
		if !validRepoName(flag) {
			return "", fmt.Errorf("--repo-name %q: want owner/name, e.g. octo/calc", flag)
		}
		return flag, nil
	}
	origin, err := r.git(ctx, nil, "config", "--default", "", "--get", "remote.origin.url")
	if err != nil {
		return "", fmt.Errorf("the origin remote: %w", err)
	}
	if origin == "" {
		return "", fmt.Errorf("the agent is told the repository's name (owner/name), and %s has no origin remote to take it from; pass --repo-name owner/name", r.dir)
	}
	name, ok := repoNameFromURL(origin)
	if !ok {
		return "", fmt.Errorf("the agent is told the repository's name (owner/name), and the origin remote of %s, %s, names none (as a GitHub-style https or ssh URL does); pass --repo-name owner/name", r.dir, redactURL(origin))
	}
	return name, nil
}

// redactURL leaves the credentials (a token as the user name, say) out
// of a URL.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return s
}
