package ghapp

import (
	"bytes"
	"embed"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/agentfix/agentfix/internal/logattr"
)

//go:embed templates/setup_*.html
var setupTemplates embed.FS

func parsePages() (*template.Template, error) {
	t, err := template.New("setup").Option("missingkey=error").ParseFS(setupTemplates, "templates/setup_*.html")
	if err != nil {
		return nil, fmt.Errorf("setup: parse page templates: %w", err)
	}
	return t, nil
}

// formPage is the data of the form.
type formPage struct {
	choices
	Error       string
	Notes       []string
	MaxName     int
	Permissions []permission
	Chosen      map[string]bool
	Events      []string
	WebhookURL  string
	CallbackURL string
	FromConfig  bool
}

// reviewPage is the data of the page that posts the manifest to GitHub.
type reviewPage struct {
	Manifest, ActionURL, Owner, WebHost, Expires string
}

// donePage is the data of the last page.
type donePage struct {
	AppName, AppURL, InstallURL string
	AppID                       int64
	EnvFile, KeyFile            string
	Label, Command              string
}

// messagePage is a page with one message: a refusal, a failure, or that
// setup is finished.
type messagePage struct {
	Title, Class, Message string
	Lines                 []string
	StartAgain            bool
}

func (s *Setup) showForm(w http.ResponseWriter, r *http.Request, status int, c choices, errMsg string) {
	base, browser, err := s.bases(r)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "Bad request", err.Error(), false)
		return
	}
	s.render(w, status, "form", formPage{
		choices:     c,
		Error:       errMsg,
		Notes:       s.notes(base, browser),
		MaxName:     maxAppName,
		Permissions: permissions(),
		Chosen:      map[string]bool{"members": c.Members, "workflows": c.Workflows, "actions": c.Actions},
		Events:      events(),
		WebhookURL:  base + "/webhook",
		CallbackURL: base + "/setup/callback",
		FromConfig:  s.publicURL != "",
	})
}

// fail shows a refusal or failure.
func (s *Setup) fail(w http.ResponseWriter, status int, title, msg string, again bool, lines ...string) {
	s.render(w, status, "message", messagePage{Title: title, Class: "error", Message: msg, Lines: lines, StartAgain: again})
}

// finished says the App is created and a restart is due.
func (s *Setup) finished(w http.ResponseWriter, status int, app *createdApp) {
	s.render(w, status, "message", messagePage{
		Title:   "Setup is finished",
		Class:   "note",
		Message: fmt.Sprintf("This process created the GitHub App %s (id %d) and saved its credentials in %s. Restart agentfix to leave setup mode; this page is then gone.", app.Name, app.ID, ".env"),
	})
}

func (s *Setup) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("setup: render page "+name, logattr.Err, err)
		http.Error(w, "render page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// bases returns the bot's public base URL (PublicURL, or the browser's) and
// the base URL the browser used for r.
func (s *Setup) bases(r *http.Request) (public, browser string, err error) {
	browser, err = requestBase(r)
	if err != nil {
		return "", "", err
	}
	if s.publicURL != "" {
		return s.publicURL, browser, nil
	}
	return browser, browser, nil
}

// hostPort is a host name or IP address with an optional port.
var hostPort = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$`)

// requestBase returns the scheme and host the browser used for r. A proxy's
// X-Forwarded-Proto and X-Forwarded-Host are honoured only from a loopback
// peer: a tunnel agent or reverse proxy on the same machine. From anywhere
// else they could be anyone's, and AGENTFIX_PUBLIC_URL is the way to name
// the address.
func requestBase(r *http.Request) (string, error) {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if fromLoopback(r) {
		if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
			scheme = p
		}
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
			host = h
		}
	}
	if !hostPort.MatchString(host) {
		return "", fmt.Errorf("the request's host %q is not a host name with an optional port", host)
	}
	return scheme + "://" + strings.ToLower(host), nil
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// firstValue returns the first of a comma-separated header's values: the
// one the proxy nearest the client set.
func firstValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

// notes warns about addresses GitHub cannot use.
func (s *Setup) notes(base, browser string) []string {
	var out []string
	bu, err := url.Parse(base)
	if err != nil {
		return []string{fmt.Sprintf("The public URL %q does not parse: %v.", base, err)}
	}
	if s.publicURL != "" && !strings.EqualFold(base, browser) {
		out = append(out, fmt.Sprintf("You opened this page at %s, but AGENTFIX_PUBLIC_URL is %s, where GitHub sends you back after creating the App. The callback needs a cookie this browser gets only at that address: open %s/setup instead.", browser, base, base))
	}
	switch {
	case isLocal(bu.Hostname()):
		out = append(out, fmt.Sprintf("GitHub cannot reach %s, so webhooks would not arrive. For a try-out, run a tunnel to this port (README: Create the GitHub App), set AGENTFIX_PUBLIC_URL to its https address, restart agentfix and open /setup there.", bu.Host))
	case bu.Scheme == "http":
		out = append(out, "GitHub would send webhooks over plain http. Serve agentfix over https (a reverse proxy or a tunnel) and set AGENTFIX_PUBLIC_URL to that address.")
	}
	return out
}

// isLocal reports whether host is a name or address GitHub cannot reach.
func isLocal(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".internal") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return !strings.Contains(h, ".") // a bare machine name
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
}
