package worker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// TestLabelToPullRequest is the whole pipeline in one process: a signed
// issues.labeled delivery → the real webhook router → real Redis → the
// worker → the real OpenAI provider against a scripted endpoint → tools in
// a real bwrap sandbox → a real push to the git HTTP server → one pull
// request on the fake GitHub.
func TestLabelToPullRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	scanned := 0
	script := fixScript(h.markers)
	// While the agent works, nothing in the job's directories (the working
	// copy and its .git/config, the private git dir, the sandbox cache)
	// holds a token.
	script[2].before = func() {
		for _, dir := range h.runningJobDirs() {
			scanned += h.scanForTokens(dir)
		}
	}
	h.model.add(script...)
	reg, _ := h.startWorker()
	h.label(hRequester)
	h.waitFor("the job's final comment, the notice's 👀 and both tasks done", func() bool {
		return len(h.commentsWith(h.issue, "agentfix:final")) == 1 && len(h.f.Reactions(hRepo)) == 1 &&
			h.taskState() == "completed" && metricValue(t, reg, "agentfix_jobs_total", map[string]string{"kind": "notice"}) == 1
	})

	if scanned == 0 {
		t.Errorf("no job file was scanned while the agent ran")
	}
	prs := h.prs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1: %+v", len(prs), prs)
	}
	pr := prs[0]
	if pr.Head != "agent-fix/issue-1" || pr.Base != "main" || pr.Draft || pr.Author != h.f.BotLogin() {
		t.Errorf("PR head %s base %s draft %v author %s, want agent-fix/issue-1 into main, ready, by the bot", pr.Head, pr.Base, pr.Draft, pr.Author)
	}
	if pr.Title != "Fix #1: Add subtracts" {
		t.Errorf("PR title = %q", pr.Title)
	}
	for _, want := range []string{"Fixes #1\n", "Fixed Add: it subtracted. Thanks @&#8203;octocat! This also fixes #&#8203;99.", "&lt;img", "| Model | `openai/gpt-test` |", "| Steps | 5 |", "1 review round"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, pr.Body)
		}
	}
	if diff := cmp.Diff([]string{hRequester}, pr.RequestedReviewers); diff != "" {
		t.Errorf("requested reviewers (-want +got):\n%s", diff)
	}

	// The branch holds exactly the agent's change, committed by the bot on
	// top of main, crediting the requester.
	want := map[string]string{}
	for k, v := range hFiles {
		want[k] = v
	}
	want["calc.go"] = strings.Replace(hFiles["calc.go"], "a - b", "a + b", 1)
	if diff := cmp.Diff(want, h.f.Files(hRepo, pr.Head)); diff != "" {
		t.Errorf("files on the branch (-want +got):\n%s", diff)
	}
	main, _ := h.f.Branch(hRepo, "main")
	head := h.f.HeadCommit(hRepo, pr.Head)
	if len(head.Parents) != 1 || head.Parents[0] != main || head.AuthorName != h.f.BotLogin() {
		t.Errorf("head commit %+v, want the bot's commit on main %s", head, main)
	}
	if !strings.Contains(head.Message, "Co-authored-by: alice <1001+alice@users.noreply.github.com>") {
		t.Errorf("commit message lacks the requester's trailer:\n%s", head.Message)
	}

	// The conversation: 👀 on the issue, one status comment in its final
	// state, one final comment.
	if rs := h.f.Reactions(hRepo); !slices.ContainsFunc(rs, func(r ghfake.Reaction) bool {
		return r.Subject == "issue" && r.SubjectID == 1 && r.Content == "eyes" && r.User == h.f.BotLogin()
	}) {
		t.Errorf("no 👀 on the issue: %+v", rs)
	}
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	if !strings.Contains(status[0].Body, "✅ **Done**: opened pull request #2.") || status[0].Edits < 3 {
		t.Errorf("status comment (%d edits) is not in its final state:\n%s", status[0].Edits, status[0].Body)
	}
	final := h.commentsWith(h.issue, "agentfix:final")[0]
	if !strings.Contains(final.Body, "@alice, I opened #2 for this issue") {
		t.Errorf("final comment:\n%s", final.Body)
	}
	if n := len(h.botComments(h.issue)); n != 2 {
		t.Errorf("bot comments on the issue = %d, want 2 (status, final)", n)
	}

	// The check run on the head commit, completed.
	checks := h.f.CheckRuns(hRepo)
	if len(checks) != 1 || checks[0].HeadSHA != head.SHA || checks[0].Status != "completed" || checks[0].Conclusion != "success" || checks[0].Name != "agentfix" {
		t.Errorf("check runs = %+v, want one completed agentfix success on %s", checks, head.SHA)
	}

	// The run record, on disk and in Redis.
	list, err := h.store.List(context.Background(), 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("runs = %v, %v; want one", list, err)
	}
	m := list[0]
	if m.Status != string(outcome.PROpened) || m.ExitStatus != "submitted" || m.Steps != 5 || m.PR != 2 || m.Requester != hRequester || m.Tokens.Input != 5000 {
		t.Errorf("run meta = %+v", m)
	}
	rec, err := h.store.Get(context.Background(), m.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Patch, "+\treturn a + b") || strings.Count(string(rec.Trajectory), "\n") != 7 {
		t.Errorf("run record: patch %q, %d trajectory lines, want the fix and 7 records", rec.Patch, strings.Count(string(rec.Trajectory), "\n"))
	}
	// The sandbox environment and the working copy's git config the agent
	// printed hold no token.
	for _, want := range []string{"PATH=", "[core]", "planted"} {
		if !strings.Contains(string(rec.Trajectory), want) {
			t.Errorf("the trajectory lacks %q: the environment, the git config or the planted hooks were not printed", want)
		}
	}
	for _, tok := range h.secrets() {
		if strings.Contains(string(rec.Trajectory), tok) || strings.Contains(h.logs.String(), tok) {
			t.Errorf("an installation token is in the trajectory or the logs")
		}
	}
	if n := h.scanForTokens(h.data); n < 5 {
		t.Errorf("scanned %d files under the data dir, want the cache and the run record", n)
	}
	if entries, _ := os.ReadDir(filepath.Join(h.data, "jobs")); len(entries) != 0 {
		t.Errorf("job directories left behind: %v", entries)
	}
	// No hook or fsmonitor the agent planted ran on the worker.
	if left, _ := os.ReadDir(h.markers); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("planted hooks ran on the worker: %v", names)
	}

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentfix_jobs_total", map[string]string{"kind": "fix", "outcome": string(outcome.PROpened)}, 1},
		{"agentfix_jobs_total", map[string]string{"kind": "notice", "outcome": string(outcome.Acknowledged)}, 1},
		{"agentfix_agent_steps_total", nil, 5},
		{"agentfix_model_tokens_total", map[string]string{"provider": "openai", "type": "input"}, 5000},
		{"agentfix_job_duration_seconds", nil, 1}, // sample count
	} {
		if got := metricValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// metricValue returns a counter's value, or a histogram's sample count,
// from reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
