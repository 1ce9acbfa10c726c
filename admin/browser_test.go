package admin

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

// The browser tests run the real handler against headless Chromium (Debian's
// chromium, which `make test` installs). `go test -short` skips them for a
// quick local run; without -short a missing Chromium fails them, so CI never
// passes without having run them.

var screenshots = flag.String("screenshots", "", "write screenshots of the admin pages, the queue monitor and bot view's page to this directory")

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
		Repo     string `json:"repo"`
		Status   string `json:"status"`
		Value    string `json:"value"`
		Exit     string `json:"exit"`
		Model    string `json:"model"`
		Cost     string `json:"cost"`
		WallTime string `json:"wallTime"`
		Link     string `json:"link"`
	} `json:"rows"`
	Total   string `json:"total"`
	Reloads bool   `json:"reloads"`
	Nav     string `json:"nav"`
}

const runsPageJS = `({rows: [...document.querySelectorAll('tr.run')].map(tr => ({
	repo: tr.querySelector('.repo').textContent,
	status: tr.querySelector('.status').textContent,
	value: tr.querySelector('.status').title,
	exit: tr.querySelector('.exit').textContent,
	model: tr.querySelector('.model').textContent,
	cost: tr.querySelector('.cost').textContent,
	wallTime: tr.querySelector('.walltime').textContent,
	link: tr.querySelector('a').getAttribute('href'),
})),
	total: (document.querySelector('tfoot .total-cost') || {}).textContent || '',
	reloads: !!document.querySelector('meta[http-equiv=refresh]'),
	nav: [...document.querySelectorAll('#agentfix-nav a')].map(a => a.textContent + (a.getAttribute('aria-current') ? '*' : '')).join(' '),
})`

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
	Status       string   `json:"status"`
	ExitMarks    []string `json:"exitMarks"`
	WallTime     string   `json:"wallTime"`
	Model        string   `json:"model"`
	Reloads      bool     `json:"reloads"`
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
	status: document.querySelector('h1 .status').textContent,
	exitMarks: [...document.querySelectorAll('.action .exitmark')].map(e => e.textContent),
	wallTime: document.querySelector('.summary .walltime').textContent,
	model: document.querySelector('.summary .model').textContent,
	reloads: !!document.querySelector('meta[http-equiv=refresh]'),
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
	want := []string{"cat greet.go", "grep -n Hello greet.go", "sed -i s/Helo/Hello/ greet.go"}
	if strings.Join(p.Commands, "|") != strings.Join(want, "|") {
		t.Errorf("commands = %q, want %q", p.Commands, want)
	}
	if len(p.Observations) != 4 {
		t.Fatalf("observations = %d, want 4 (three commands, one review message)", len(p.Observations))
	}
	first := p.Observations[0]
	if first.Open || first.Visible || !strings.HasPrefix(first.Summary, "Observation") {
		t.Errorf("first observation open=%v visible=%v summary=%q, want collapsed", first.Open, first.Visible, first.Summary)
	}
	if !strings.Contains(first.Text, "// "+xss) {
		t.Errorf("first observation = %q, want the command output with %q as text", first.Text, xss)
	}
	review := p.Observations[3]
	if review.Open || !strings.HasPrefix(review.Summary, "Review message") || !strings.Contains(review.Text, "diff --git a/greet.go") {
		t.Errorf("fourth observation = %+v, want the collapsed review message with the diff", review)
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
	if want := []string{"✓ exit 0", "✗ exit 1", "✓ exit 0"}; strings.Join(p.ExitMarks, "|") != strings.Join(want, "|") {
		t.Errorf("the commands' exits = %q, want %q", p.ExitMarks, want)
	}
	if p.Model != "scripted/demo" || p.Reloads {
		t.Errorf("model %q, reloads %v; want scripted/demo, a page that does not reload (the run ended)", p.Model, p.Reloads)
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
	type row struct{ Repo, Status, Value, Exit, Model, Cost, WallTime, Link string }
	var rows []row
	for _, r := range list.Rows {
		rows = append(rows, row{r.Repo, r.Status, r.Value, r.Exit, r.Model, r.Cost, r.WallTime, r.Link})
	}
	want := []row{
		{"octo/other", "Running", "running", "–", "openai/gpt-5", "$0.0120", "34 min", "/admin/runs/" + runningRunID},
		{"octo/hello", "Pull request opened", "pr_opened", "Submitted", "scripted/demo", "$0.0277", "1 min 20 s", "/admin/runs/" + testRunID},
		{"octo/hello", "Failed", "failed", "Limit reached", "anthropic/claude-sonnet-4", "$0.8125", "45 min", "/admin/runs/" + failedRunID},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("runs page rows (-want +got):\n%s", diff)
	}
	if list.Total != "$0.8522" || !list.Reloads || list.Nav != "Runs* Tasks Queues" {
		t.Errorf("total %q, reloads %v, nav %q; want $0.8522, reloading (a run is running), Runs* Tasks Queues", list.Total, list.Reloads, list.Nav)
	}
	screenshot(t, tab, "runs")

	// The filter, as a person uses it: choose, then press Filter.
	err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS(`select[name=repo]`), "octo/hello"),
		chromedp.SetValue(chromedp.CSS(`select[name=status]`), "failed"),
	)
	if err != nil {
		t.Fatalf("choose the filter: %v", err)
	}
	resp, err := chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(`form.filter button`)))
	if err != nil {
		t.Fatalf("filter: %v", err)
	}
	if !strings.HasSuffix(resp.URL, "/admin/runs?repo=octo%2Fhello&status=failed") {
		t.Errorf("filtered at %s", resp.URL)
	}
	filtered := eval[runsPage](t, tab, runsPageJS)
	if len(filtered.Rows) != 1 || filtered.Rows[0].Link != "/admin/runs/"+failedRunID || filtered.Total != "$0.8125" || filtered.Reloads {
		t.Errorf("filtered runs = %+v, want the failed run alone, total $0.8125, not reloading", filtered)
	}
	screenshot(t, tab, "runs-filtered")

	link := "/admin/runs/" + testRunID
	if code := open(t, tab, ts.URL+link); code != http.StatusOK {
		t.Fatalf("%s = %d, want 200", link, code)
	}
	p := eval[runPage](t, tab, runPageJS)
	checkRunPage(t, p)
	if !p.Nav {
		t.Error("the admin run page lacks the admin navigation")
	}
	if p.Status != "Pull request opened" || p.WallTime != "1 min 20 s" {
		t.Errorf("status %q, wall time %q; want Pull request opened, 1 min 20 s", p.Status, p.WallTime)
	}
	screenshot(t, tab, "run")

	// From the run to its delivery's tasks, and from a task back to its
	// run.
	enqueueJobs(t, f)
	if _, err := chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(`.task-link a`))); err != nil {
		t.Fatalf("follow the link to the run's tasks: %v", err)
	}
	tasks := eval[[]string](t, tab, `[...document.querySelectorAll('tr.task')].map(tr => tr.querySelector('.task-id').textContent + ' ' + tr.querySelector('.run-link').textContent)`)
	if strings.Join(tasks, "|") != "fix:octo/hello#7 the run Pull request opened" {
		t.Errorf("the tasks of the run's delivery = %q, want its fix task linked to the run", tasks)
	}
	if code := open(t, tab, ts.URL+"/admin/tasks"); code != http.StatusOK {
		t.Fatalf("/admin/tasks = %d, want 200", code)
	}
	screenshot(t, tab, "tasks")
	resp, err = chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(`#queue-agent tr.task:nth-child(2) .run-link a`)))
	if err != nil {
		t.Fatalf("follow a task's run link: %v", err)
	}
	if !strings.HasSuffix(resp.URL, "/admin/runs/"+runningRunID) || resp.Status != http.StatusOK {
		t.Errorf("the revise task's run link led to %d %s, want the running run", resp.Status, resp.URL)
	}
}

// TestBrowserRunningRunReloads watches a running run's page reload itself
// (a meta refresh: the pages allow no scripts) and stop once the run has
// ended.
func TestBrowserRunningRunReloads(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	ts := f.serve(t, testToken)
	tab := newTab(t, browser, map[string]string{"Authorization": "Bearer " + testToken})
	if code := open(t, tab, ts.URL+"/admin/runs/"+runningRunID); code != http.StatusOK {
		t.Fatalf("the running run's page = %d, want 200", code)
	}
	p := eval[runPage](t, tab, runPageJS)
	if !p.Reloads || p.Status != "Running" || p.WallTime != "34 min" {
		t.Errorf("running run page: reloads %v, status %q, wall time %q; want reloading, Running, 34 min", p.Reloads, p.Status, p.WallTime)
	}
	screenshot(t, tab, "run-running")

	// reloaded waits for the next load of the page: its reload.
	loads := make(chan struct{}, 1)
	err := chromedp.Listen(tab, func(ev any) {
		if _, ok := ev.(*cdppage.EventLoadEventFired); ok {
			select {
			case loads <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	reloaded := func(what string) {
		t.Helper()
		select {
		case <-loads:
		case <-tab.Done():
			t.Fatalf("%s: the page did not reload before the browser session ended (%s)", what, browserTimeout)
		}
	}
	reloaded("while the run runs")
	run, err := f.store.Open(context.Background(), runningRunID, runs.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	err = run.Update(func(m *runs.Meta) {
		m.Status, m.ExitStatus, m.PR = "pr_updated", "submitted", 3
		m.Ended = t0.Add(50 * time.Minute)
		m.Duration = m.Ended.Sub(m.Started)
	})
	if err == nil {
		err = run.Save(context.Background())
	}
	run.Close()
	if err != nil {
		t.Fatal(err)
	}
	reloaded("after the run ended")
	p = eval[runPage](t, tab, runPageJS)
	if p.Reloads || p.Status != "Pull request updated" || p.WallTime != "24 min" {
		t.Errorf("ended run page: reloads %v, status %q, wall time %q; want no reload, Pull request updated, 24 min", p.Reloads, p.Status, p.WallTime)
	}
}

// TestBrowserLocalView opens the page of `bot view DIR` on a loopback
// server: the run page, without the admin navigation.
func TestBrowserLocalView(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	h, err := NewLocalView(localRunDir(t, f), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	tab := newTab(t, browser, nil)
	if code := open(t, tab, ts.URL+"/"); code != http.StatusOK {
		t.Fatalf("bot view's page = %d, want 200", code)
	}
	p := eval[runPage](t, tab, runPageJS)
	checkRunPage(t, p)
	if p.Nav || p.Status != "Submitted" || p.WallTime != "59 s" {
		t.Errorf("local page: nav %v, status %q, wall time %q; want no admin navigation, Submitted, 59 s (the agent's time)", p.Nav, p.Status, p.WallTime)
	}
	screenshot(t, tab, "local")
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
	// The queues page lists both queues, each row linked to its tasks.
	rows, err := chromedp.Run(tab, chromedp.Evaluate[string](`[...document.querySelectorAll('tr.queue')].map(r => r.id + ' ' + r.querySelector('a').getAttribute('href') + ' ' + r.cells[3].textContent).join('\n')`))
	want := "queue-" + jobs.QueueAgent + " /admin/tasks#queue-" + jobs.QueueAgent + " 1\n" +
		"queue-" + jobs.QueueInteractive + " /admin/tasks#queue-" + jobs.QueueInteractive + " 1"
	if err != nil || rows != want {
		t.Errorf("the queues page's rows = %q, %v; want %q", rows, err, want)
	}
	// The admin bar is what a click at the top of the page reaches.
	bar, err := chromedp.Run(tab, chromedp.Evaluate[string](`(() => {
		const hit = document.elementFromPoint(640, 20);
		return (hit && hit.closest('#agentfix-nav') ? 'on top: ' : 'covered: ') +
			[...document.querySelectorAll('#agentfix-nav a')].map(a => a.textContent + (a.getAttribute('aria-current') ? '*' : '')).join(' ');
	})()`))
	if err != nil || bar != "on top: Runs Tasks Queues*" {
		t.Errorf("the queues page's bar = %q, %v; want on top: Runs Tasks Queues*", bar, err)
	}
	screenshot(t, tab, "queues")
	resp, err = chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(`#agentfix-nav a[href="/admin/runs"]`)))
	if err != nil {
		t.Fatalf("follow the bar's Runs link: %v", err)
	}
	if !strings.HasSuffix(resp.URL, "/admin/runs") || resp.Status != http.StatusOK {
		t.Fatalf("the bar's Runs link led to %d %s, want /admin/runs with the session", resp.Status, resp.URL)
	}
	if rows := eval[runsPage](t, tab, runsPageJS).Rows; len(rows) != 3 || rows[1].Repo != "octo/hello" {
		t.Errorf("runs after login = %+v, want the three runs", rows)
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
