package admin

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

// The browser tests run the real handler against headless Chromium (Debian's
// chromium, which `make test` installs). `go test -short` skips them for a
// quick local run; without -short a missing Chromium fails them, so CI never
// passes without having run them.

var screenshots = flag.String("screenshots", "", "write screenshots of the runs and run pages to this directory")

// browserTimeout bounds a whole browser session.
const browserTimeout = 2 * time.Minute

// newBrowser starts headless Chromium for the test, with no network but
// loopback, and returns its context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped with -short")
	}
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("chromium not found on PATH: the browser tests need it (run `make test` as root, which installs Debian's chromium, or apt-get install chromium; `go test -short` skips these tests)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Resolve no name at all: the tests use 127.0.0.1 only.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1280, 1000),
	)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return bctx
}

// newTab opens a tab in a fresh browser context (no cookies), sending
// header with every request when it is not nil.
func newTab(t *testing.T, browser context.Context, header map[string]string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if header != nil {
		h := network.Headers{}
		for k, v := range header {
			h[k] = v
		}
		err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
			return err
		}))
		if err != nil {
			t.Fatalf("set headers: %v", err)
		}
	}
	return tab
}

// open navigates tab to url and returns the HTTP status of the document.
func open(t *testing.T, tab context.Context, url string) int64 {
	t.Helper()
	resp, err := chromedp.Run(tab, chromedp.NavigateResponse(url))
	if err != nil {
		t.Fatalf("navigate to %s: %v", url, err)
	}
	return resp.Status
}

// eval evaluates a JavaScript expression in the tab's page.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runsPage is what the runs page shows, read from the DOM.
type runsPage struct {
	Rows []struct {
		Repo   string `json:"repo"`
		Status string `json:"status"`
		Cost   string `json:"cost"`
		Link   string `json:"link"`
	} `json:"rows"`
}

const runsPageJS = `({rows: [...document.querySelectorAll('tr.run')].map(tr => ({
	repo: tr.querySelector('.repo').textContent,
	status: tr.querySelector('.status').textContent,
	cost: tr.querySelector('.cost').textContent,
	link: tr.querySelector('a').getAttribute('href'),
}))})`

// runPage is what a run page shows, read from the DOM.
type runPage struct {
	Scripts      int      `json:"scripts"`
	TaskBody     string   `json:"taskBody"`
	ModelTexts   []string `json:"modelTexts"`
	Commands     []string `json:"commands"`
	Observations []struct {
		Open    bool   `json:"open"`
		Visible bool   `json:"visible"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"observations"`
	ReviewMarker string   `json:"reviewMarker"`
	ReviewSteps  []string `json:"reviewSteps"`
	Added        []string `json:"added"`
	Removed      []string `json:"removed"`
	Nav          bool     `json:"nav"`
	Heading      string   `json:"heading"`
}

const runPageJS = `({
	scripts: document.querySelectorAll('script').length,
	taskBody: (document.querySelector('.task-body') || {}).textContent || '',
	modelTexts: [...document.querySelectorAll('.model-text')].map(e => e.textContent),
	commands: [...document.querySelectorAll('pre.cmd')].map(e => e.textContent),
	observations: [...document.querySelectorAll('details.observation')].map(d => ({
		open: d.open,
		visible: !!d.querySelector('pre') && d.querySelector('pre').checkVisibility(),
		summary: d.querySelector('summary').textContent,
		text: d.querySelector('pre') ? d.querySelector('pre').textContent : '',
	})),
	reviewMarker: (document.querySelector('#review-phase') || {}).textContent || '',
	reviewSteps: [...document.querySelectorAll('article.step.review')].map(e => e.id),
	added: [...document.querySelectorAll('pre.diff .add')].map(e => e.textContent),
	removed: [...document.querySelectorAll('pre.diff .del')].map(e => e.textContent),
	nav: !!document.querySelector('nav'),
	heading: document.querySelector('h1').textContent,
})`

// checkRunPage asserts on the run page of the scripted run.
func checkRunPage(t *testing.T, p runPage) {
	t.Helper()
	if p.Scripts != 0 {
		t.Errorf("the page has %d script elements, want none (injected text must stay text)", p.Scripts)
	}
	if !strings.Contains(p.TaskBody, xss) {
		t.Errorf("task body = %q, want the injected %q as text", p.TaskBody, xss)
	}
	if len(p.ModelTexts) < 2 || !strings.Contains(p.ModelTexts[1], xss) {
		t.Errorf("model texts = %q, want step 2's with %q as text", p.ModelTexts, xss)
	}
	want := []string{"cat greet.go", "sed -i s/Helo/Hello/ greet.go"}
	if strings.Join(p.Commands, "|") != strings.Join(want, "|") {
		t.Errorf("commands = %q, want %q", p.Commands, want)
	}
	if len(p.Observations) != 3 {
		t.Fatalf("observations = %d, want 3 (two commands, one review message)", len(p.Observations))
	}
	first := p.Observations[0]
	if first.Open || first.Visible || !strings.HasPrefix(first.Summary, "Observation") {
		t.Errorf("first observation open=%v visible=%v summary=%q, want collapsed", first.Open, first.Visible, first.Summary)
	}
	if !strings.Contains(first.Text, "// "+xss) {
		t.Errorf("first observation = %q, want the command output with %q as text", first.Text, xss)
	}
	review := p.Observations[2]
	if review.Open || !strings.HasPrefix(review.Summary, "Review message") || !strings.Contains(review.Text, "diff --git a/greet.go") {
		t.Errorf("third observation = %+v, want the collapsed review message with the diff", review)
	}
	if !strings.HasPrefix(p.ReviewMarker, "Review phase") || strings.Join(p.ReviewSteps, ",") != "step-4,step-5" {
		t.Errorf("review marker %q on steps %v, want the review phase on step-4,step-5", p.ReviewMarker, p.ReviewSteps)
	}
	if strings.Join(p.Added, "|") != "+++ b/greet.go|+\tfmt.Println(\"Hello\")" && strings.Join(p.Added, "|") != "+\tfmt.Println(\"Hello\")" {
		t.Errorf("added lines = %q, want the new Println", p.Added)
	}
	if strings.Join(p.Removed, "|") != "-\tfmt.Println(\"Helo\")" {
		t.Errorf("removed lines = %q, want the old Println", p.Removed)
	}
	if !strings.Contains(p.Heading, testRunID) {
		t.Errorf("heading = %q, want the run id", p.Heading)
	}
}

func TestBrowserAdminWithBearer(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	ts := f.serve(t, testToken)
	tab := newTab(t, browser, map[string]string{"Authorization": "Bearer " + testToken})

	if code := open(t, tab, ts.URL+"/admin/runs"); code != http.StatusOK {
		t.Fatalf("/admin/runs = %d, want 200", code)
	}
	list := eval[runsPage](t, tab, runsPageJS)
	if len(list.Rows) != 1 {
		t.Fatalf("runs page rows = %+v, want the one run", list.Rows)
	}
	row := list.Rows[0]
	if row.Repo != "octo/hello" || row.Status != "pr_opened" || row.Cost != "$0.0277" || row.Link != "/admin/runs/"+testRunID {
		t.Errorf("run row = %+v, want octo/hello, pr_opened, $0.0277, linking its page", row)
	}
	screenshot(t, tab, "runs")

	if code := open(t, tab, ts.URL+row.Link); code != http.StatusOK {
		t.Fatalf("%s = %d, want 200", row.Link, code)
	}
	p := eval[runPage](t, tab, runPageJS)
	checkRunPage(t, p)
	if !p.Nav {
		t.Error("the admin run page lacks the admin navigation")
	}
	screenshot(t, tab, "run")
}

func TestBrowserLoginAndQueues(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	enqueueBoth(t, f)
	ts := f.serve(t, testToken)
	tab := newTab(t, browser, nil)

	if code := open(t, tab, ts.URL+"/admin/queues"); code != http.StatusUnauthorized {
		t.Fatalf("/admin/queues without a token = %d, want 401", code)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('form.login input[type=password]').length`); n != 1 {
		t.Fatalf("the 401 page has %d password fields, want the login form", n)
	}
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.ID("token"), testToken)); err != nil {
		t.Fatalf("type the token: %v", err)
	}
	resp, err := chromedp.RunResponse(tab, chromedp.Submit(chromedp.ID("token")))
	if err != nil {
		t.Fatalf("log in: %v", err)
	}
	if !strings.HasSuffix(resp.URL, "/admin/queues") || resp.Status != http.StatusOK {
		t.Fatalf("after login: %d %s, want 200 at /admin/queues", resp.Status, resp.URL)
	}
	// asynqmon is a single-page app: its API calls carry the session
	// cookie, and it lists both queues once they answer.
	got, err := chromedp.Run(tab, chromedp.Poll[string](
		`location.pathname === '/admin/queues' && document.body.innerText.includes('`+jobs.QueueInteractive+`') && document.body.innerText.includes('`+jobs.QueueAgent+`') ? location.pathname : ''`,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText`))
		t.Fatalf("the queue monitor did not list both queues after login: %v\n%s", err, text)
	}
	if got != "/admin/queues" {
		t.Errorf("after login at %q, want /admin/queues", got)
	}

	if code := open(t, tab, ts.URL+"/admin/runs"); code != http.StatusOK {
		t.Fatalf("/admin/runs with the session = %d, want 200", code)
	}
	if rows := eval[runsPage](t, tab, runsPageJS).Rows; len(rows) != 1 || rows[0].Repo != "octo/hello" {
		t.Errorf("runs after login = %+v, want octo/hello", rows)
	}
}

func TestBrowserSignedLink(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	ts := f.serve(t, testToken)
	key := runs.LinkKey(testSecret)
	good := signedPath(t, key, f.clock().Add(time.Hour))

	t.Run("valid", func(t *testing.T) {
		tab := newTab(t, browser, nil)
		if code := open(t, tab, ts.URL+good); code != http.StatusOK {
			t.Fatalf("signed link = %d, want 200", code)
		}
		p := eval[runPage](t, tab, runPageJS)
		checkRunPage(t, p)
		if p.Nav {
			t.Error("the signed page shows the admin navigation")
		}
	})
	tests := []struct {
		name, path, heading string
	}{
		{"tampered", strings.Replace(good, "sig=", "sig=x", 1), "Invalid link"},
		{"expired", signedPath(t, key, f.clock().Add(-time.Second)), "Link expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := newTab(t, browser, nil)
			if code := open(t, tab, ts.URL+tt.path); code != http.StatusForbidden {
				t.Errorf("%s link = %d, want 403", tt.name, code)
			}
			text := eval[string](t, tab, `document.body.innerText`)
			if !strings.Contains(text, tt.heading) || strings.Contains(text, "greet.go") {
				t.Errorf("%s link page = %q, want %q and nothing of the run", tt.name, text, tt.heading)
			}
		})
	}
}

func TestBrowserAccessRules(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	tests := []struct {
		name   string
		token  string
		header map[string]string
		want   int64
	}{
		{"no token configured", "", map[string]string{"Authorization": "Bearer " + testToken}, http.StatusNotFound},
		{"no credentials", testToken, nil, http.StatusUnauthorized},
		{"wrong token", testToken, map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := f.serve(t, tt.token)
			tab := newTab(t, browser, tt.header)
			for _, path := range []string{"/admin/runs", "/admin/runs/" + testRunID} {
				if code := open(t, tab, ts.URL+path); code != tt.want {
					t.Errorf("%s = %d, want %d", path, code, tt.want)
				}
				if text := eval[string](t, tab, `document.body.innerText`); strings.Contains(text, "octo/hello") {
					t.Errorf("%s shows the run without access:\n%s", path, text)
				}
			}
		})
	}
}
