package main

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
)

// mountSetup serves setup mode's pages: / redirects to /setup, where
// ghapp.Setup creates the GitHub App from a manifest and saves its
// credentials in .env in the working directory; a restart then leaves
// setup mode.
func (m *Main) mountSetup(r chi.Router, cfg *config.App, log *slog.Logger) error {
	s, err := ghapp.NewSetup(ghapp.SetupOptions{
		WebURL:       cfg.GitHubWebURL,
		APIURL:       cfg.GitHubAPIURL,
		PublicURL:    cfg.PublicURL,
		Dir:          m.WorkDir,
		TriggerLabel: cfg.TriggerLabel,
		Command:      cfg.Command,
		Logger:       log,
	})
	if err != nil {
		return err
	}
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/setup", http.StatusFound)
	})
	r.Handle("/setup", s)
	r.Handle("/setup/*", s)
	return nil
}
