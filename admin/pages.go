package admin

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/agentfix/agentfix/internal/logattr"
)

//go:embed templates/*.html templates/style.css
var templateFiles embed.FS

// pages are the parsed page templates and the stylesheet they inline.
type pages struct {
	byName map[string]*template.Template
	css    template.CSS
	csp    string
}

// pageNames are the templates that render a whole page (each with the
// layout).
var pageNames = []string{"login", "message", "runs", "run"}

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
	// Admin shows the admin navigation (runs, queues, log out).
	Admin bool
	CSS   template.CSS
	Data  any
}

// render writes page name with data and the security headers: no caching
// (the pages show private code), no referrer (a signed link must not leak
// through one), and the Content-Security-Policy.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	s.renderPage(w, r, code, name, page{Title: titleOf(name, data), Admin: s.showNav(r), Data: data})
}

func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.CSS = s.pages.css
	var buf bytes.Buffer
	if err := s.pages.byName[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("render admin page", logattr.Path, r.URL.Path, logattr.Err, err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", s.pages.csp)
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
	s.renderPage(w, r, code, "message", page{Title: heading, Admin: s.showNav(r), Data: messageView{heading, text}})
}

func titleOf(name string, data any) string {
	switch d := data.(type) {
	case runView:
		return "Run " + d.Meta.RunID
	case runsView:
		return "Runs"
	}
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
