package admin

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"
)

// queuesRoot is where the queue monitor is mounted.
const queuesRoot = "/admin/queues"

// queueMonitor returns asynqmon at /admin/queues, read-only: its API
// refuses every method but GET, so no task can be deleted, run, archived or
// cancelled from it. Its page gets the admin navigation bar (nav), laid
// over asynqmon's own top bar, which holds only its logo and the button
// that narrows its side menu.
func queueMonitor(rdb redis.UniversalClient, nav []byte) http.Handler {
	mon := asynqmon.New(asynqmon.Options{
		RootPath:     queuesRoot,
		RedisConnOpt: sharedConn{rdb},
		ReadOnly:     true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, queuesRoot+"/api/") {
			mon.ServeHTTP(w, r)
			return
		}
		n := &navWriter{w: w, nav: nav}
		mon.ServeHTTP(n, r)
		n.finish()
	})
}

// sharedConn hands asynqmon the process's Redis client instead of a new
// connection pool. asynqmon closes its client only in its Close, which is
// never called: the client's owner closes it.
type sharedConn struct{ rdb redis.UniversalClient }

// MakeRedisClient returns the shared client (asynq.RedisConnOpt).
func (c sharedConn) MakeRedisClient() any { return c.rdb }

// navWriter puts the navigation bar at the start of the body of asynqmon's
// page. asynqmon renders its page (the same for every path of its
// single-page app) without setting a Content-Type, and sets one for its
// static files and errors, which pass through unchanged.
type navWriter struct {
	w       http.ResponseWriter
	nav     []byte
	decided bool
	// page is set when the response is buffered to add the bar.
	page bool
	code int
	buf  bytes.Buffer
}

func (n *navWriter) Header() http.Header { return n.w.Header() }

func (n *navWriter) decide() {
	if !n.decided {
		n.decided = true
		n.page = n.w.Header().Get("Content-Type") == ""
	}
}

func (n *navWriter) WriteHeader(code int) {
	n.decide()
	if n.page {
		n.code = code
		return
	}
	n.w.WriteHeader(code)
}

func (n *navWriter) Write(b []byte) (int, error) {
	n.decide()
	if n.page {
		return n.buf.Write(b)
	}
	return n.w.Write(b)
}

// finish writes a buffered page with the bar after its <body> tag, and
// the admin pages' headers that suit it: no caching, no referrer (the
// page loads fonts from Google), no framing.
func (n *navWriter) finish() {
	if !n.page {
		return
	}
	body := n.buf.Bytes()
	const tag = "<body>"
	if i := bytes.Index(body, []byte(tag)); i >= 0 && isHTML(body) {
		body = slices.Concat(body[:i+len(tag)], n.nav, body[i+len(tag):])
		h := n.w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
	}
	if n.code != 0 {
		n.w.WriteHeader(n.code)
	}
	_, _ = n.w.Write(body)
}

func isHTML(b []byte) bool {
	const doctype = "<!doctype html>"
	return len(b) >= len(doctype) && strings.EqualFold(string(b[:len(doctype)]), doctype)
}

// queueNavData is what the queue monitor's navigation bar is rendered
// with.
type queueNavData struct {
	CSS template.CSS
	Nav page
}

// renderQueueNav renders the navigation bar for the queue monitor's page,
// with its stylesheet: the admin pages' bar (layout.html's "nav"), fixed
// over asynqmon's top bar.
func renderQueueNav(navCSS []byte) ([]byte, error) {
	t, err := template.New("queuenav").Funcs(funcs()).ParseFS(templateFiles, "templates/layout.html", "templates/queuenav.html")
	if err != nil {
		return nil, fmt.Errorf("admin: parse the queue monitor's bar: %w", err)
	}
	var buf bytes.Buffer
	// The stylesheet is the package's own constant, not page data.
	if err := t.ExecuteTemplate(&buf, "queuenav", queueNavData{CSS: template.CSS(navCSS), Nav: page{Admin: true, Nav: "queues"}}); err != nil {
		return nil, fmt.Errorf("admin: render the queue monitor's bar: %w", err)
	}
	return buf.Bytes(), nil
}
