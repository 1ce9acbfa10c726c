package main

import (
	"html/template"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentfix/agentfix/config"
)

// mountSetup serves the setup-mode pages: / redirects to /setup, which says
// how to create and configure the GitHub App by hand. (The operations issue
// replaces it with the one-click manifest flow of package ghapp.)
func mountSetup(r chi.Router, cfg *config.App) {
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/setup", http.StatusFound)
	})
	r.Get("/setup", func(w http.ResponseWriter, r *http.Request) {
		data := setupData{
			NewAppURL:  cfg.GitHubWebURL + "settings/apps/new",
			WebhookURL: cfg.PublicURL + "/webhook",
			FromConfig: cfg.PublicURL != "",
			Label:      cfg.TriggerLabel,
			Command:    cfg.Command,
		}
		if !data.FromConfig {
			data.WebhookURL = requestBase(r) + "/webhook"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := setupPage.Execute(w, data); err != nil {
			http.Error(w, "render setup page", http.StatusInternalServerError)
		}
	})
}

// requestBase guesses the public base URL from the request, honouring a
// proxy's X-Forwarded-Proto (display only).
func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

type setupData struct {
	NewAppURL, WebhookURL string
	FromConfig            bool
	Label, Command        string
}

var setupPage = template.Must(template.New("setup").Option("missingkey=error").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>agentfix setup</title></head>
<body>
<h1>agentfix setup</h1>
<p>No GitHub App is configured, so agentfix runs in setup mode: it answers
<code>/healthz</code>, <code>/readyz</code> and this page, and accepts no webhooks.</p>

<h2>1. Create the GitHub App</h2>
<ol>
<li>Open <a href="{{.NewAppURL}}">{{.NewAppURL}}</a>
(for an organization: its Settings → Developer settings → GitHub Apps → New GitHub App).</li>
<li>Webhook: active, URL <code>{{.WebhookURL}}</code>{{if not .FromConfig}}
(taken from this request; set <code>AGENTFIX_PUBLIC_URL</code> if GitHub reaches the bot at another address){{end}},
secret: a long random string, for example the output of <code>openssl rand -hex 32</code>.</li>
<li>Repository permissions: Contents, Issues, Pull requests and Checks — Read and write; Metadata — Read-only.
Optional: Workflows — Read and write (only if repositories allow the bot to change <code>.github/workflows/</code>);
organization permission Members — Read-only (for <code>allowed_teams</code>).</li>
<li>Subscribe to events: Issues, Issue comment, Pull request review, Pull request review comment.
Installation events arrive without subscribing.</li>
<li>Create the App, note its App ID, and generate a private key (a <code>.pem</code> file downloads).</li>
</ol>

<h2>2. Configure agentfix</h2>
<p>Set these in the environment, or in a <code>.env</code> file in the bot's working directory (readable by the bot only: <code>chmod 600 .env</code>):</p>
<pre>
AGENTFIX_APP_ID=&lt;the App ID&gt;
AGENTFIX_PRIVATE_KEY_FILE=&lt;path to the .pem file&gt;
AGENTFIX_WEBHOOK_SECRET=&lt;the webhook secret&gt;
AGENTFIX_REDIS_URL=redis://localhost:6379/0
AGENTFIX_MODEL=openai/gpt-5
OPENAI_API_KEY=&lt;your key&gt;
</pre>
<p>Without <code>AGENTFIX_REDIS_URL</code>, <code>bot serve</code> uses an in-process Redis that loses queued jobs when it stops.
Then restart the bot. An incomplete App configuration stops startup with a line naming the missing variable.</p>

<h2>3. Install the App</h2>
<p>On the App's page choose Install App and pick repositories. Then label an issue
<code>{{.Label}}</code>, or comment <code>{{.Command}}</code> on it.</p>
</body>
</html>
`))
