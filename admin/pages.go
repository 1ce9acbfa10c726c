package admin

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/agentfix/agentfix/internal/logattr"
)

//go:embed templates/*.html templates/*.css
var templateFiles embed.FS

// pages are the parsed page templates and the stylesheet they inline.
type pages struct {
	byName map[string]*template.Template
	css    template.CSS
	csp    string
}

// pageNames are the templates that render a whole page (each with the
// layout).
var pageNames = []string{"login", "message", "runs", "run", "tasks", "queues"}

func newPages() (*pages, error) {
	css, err := templateFiles.ReadFile("templates/style.css")
	if err != nil {
		return nil, fmt.Errorf("admin: read stylesheet: %w", err)
	}
	sum := sha256.Sum256(css)
	p := &pages{
		byName: map[string]*template.Template{},
		// The stylesheet is the package's own constant, not page data.
		css: template.CSS(css),
		// No scripts at all; the one inline stylesheet by its hash.
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs()).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("admin: parse %s page: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// page is what the layout renders around a page's own data.
type page struct {
	Title string
	// Admin shows the admin navigation (runs, tasks, queues, log out);
	// Nav names the current one ("runs", "tasks", "queues").
	Admin bool
	Nav   string
	// Refresh, when positive, reloads the page after that many seconds
	// (while a run runs; the pages have no scripts).
	Refresh int
	CSS     template.CSS
	Data    any
}

// render writes page name with data.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	s.renderPage(w, r, code, name, page{Title: titleOf(name), Data: data})
}

// renderPage is render with the layout's data given; it sets whether the
// admin navigation shows.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Admin = s.showNav(r)
	s.pages.write(w, r, code, name, p, s.log)
}

// write renders page name in the layout with p and writes it with the
// security headers: no caching (the pages show private code), no referrer
// (a signed link must not leak through one), and the
// Content-Security-Policy.
func (ps *pages) write(w http.ResponseWriter, r *http.Request, code int, name string, p page, log *slog.Logger) {
	p.CSS = ps.css
	var buf bytes.Buffer
	if err := ps.byName[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		log.Error("render admin page", logattr.Path, r.URL.Path, logattr.Err, err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ps.csp)
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// messageView is a page that only says something: an error, a missing
// run, a refused link.
type messageView struct {
	Heading string
	Text    string
}

func (s *Server) message(w http.ResponseWriter, r *http.Request, code int, heading, text string) {
	s.renderPage(w, r, code, "message", page{Title: heading, Data: messageView{heading, text}})
}

// titleOf is the title of the pages render writes (the others name
// theirs).
func titleOf(name string) string {
	if name == "login" {
		return "Log in"
	}
	return name
}

// showNav reports whether the page shows the admin navigation: on /admin
// pages to an authorized reader, never on a signed run page.
func (s *Server) showNav(r *http.Request) bool {
	return s.token != "" && strings.HasPrefix(r.URL.Path, "/admin/") && s.authorized(r)
}
