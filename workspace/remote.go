package workspace

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// tokenUser is the user name GitHub expects with an installation token.
const tokenUser = "x-access-token"

// Remote is a repository on the git server: its clone URL as the API gives
// it (clone_url; GitHub Enterprise and test servers work unchanged) and the
// installation token that may read or write it. The token is sent as the
// password of x-access-token basic auth by go-git, in process: it is never
// part of a URL, a git config, a file or a log record. String, GoString and
// LogValue redact it.
type Remote struct {
	URL   string
	Token string
}

// String names the remote without its token.
func (r Remote) String() string { return r.URL + " (token redacted)" }

// GoString redacts the token for %#v.
func (r Remote) GoString() string {
	return fmt.Sprintf("workspace.Remote{URL: %q, Token: [redacted]}", r.URL)
}

// LogValue redacts the token in log records.
func (r Remote) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", r.URL), slog.String("token", "[redacted]"))
}

// check refuses a URL git could not use safely: only http and https, no
// credentials in the URL (the token travels separately), no query.
func (r Remote) check() error {
	u, err := url.Parse(r.URL)
	if err != nil {
		return fmt.Errorf("clone url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("clone url %q: scheme must be http or https", r.URL)
	case u.Host == "":
		return fmt.Errorf("clone url %q: no host", r.URL)
	case u.User != nil:
		return fmt.Errorf("clone url of %s: credentials in the URL are refused (the token is passed separately)", u.Host)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("clone url %q: query or fragment", r.URL)
	case strings.ContainsAny(r.Token, "\r\n"):
		return fmt.Errorf("token for %s contains a line break", r.URL)
	}
	return nil
}

// auth returns go-git's basic auth for the token; nil (anonymous) when
// there is none. go-git's BasicAuth.String redacts the password.
func (r Remote) auth() transport.AuthMethod {
	if r.Token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: tokenUser, Password: r.Token}
}
