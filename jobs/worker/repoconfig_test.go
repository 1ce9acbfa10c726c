package worker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// configure commits yml as the repository's .github/agent-fix.yml on
// branch.
func (h *harness) configure(branch, yml string) {
	h.t.Helper()
	h.f.Commit(hRepo, branch, map[string]string{config.RepoFile: yml}, "configure agentfix")
}

// lastMessages returns, for each query the model got in order, the
// content of its last message: the instance prompt, then the observation
// (a tool result) the step before produced.
func (m *fakeModel) lastMessages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.requests {
		msgs, _ := r["messages"].([]any)
		if len(msgs) == 0 {
			out = append(out, "")
			continue
		}
		last, _ := msgs[len(msgs)-1].(map[string]any)
		content, _ := last["content"].(string)
		out = append(out, content)
	}
	return out
}

// finals returns the bot's final comments on the issue.
func (h *harness) finals() []ghfake.Comment { return h.commentsWith(h.issue, "agentfix:final") }

func TestRepoTestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		test       string
		draft      bool
		inReview   string // in the review message the model got
		inBody     []string
		finalWords string
	}{
		{
			name:       "passing test, ready",
			test:       "grep -q 'a + b' calc.go && echo calc ok",
			inReview:   "- The repository's test command `grep -q 'a + b' calc.go && echo calc ok` passed on a clean checkout of your change (outside your sandbox, with a fresh HOME):\n\n```\ncalc ok\n```",
			inBody:     []string{"The harness ran the repository's test command `grep -q 'a + b' calc.go && echo calc ok` when the agent reviewed its change: it passed on the final change."},
			finalWords: "I opened #2 for this issue; it is ready for your review.",
		},
		{
			name:     "failing test, draft",
			test:     "echo 'FAIL: calc.Sub is missing'; exit 3",
			draft:    true,
			inReview: "- The repository's test command `echo 'FAIL: calc.Sub is missing'; exit 3` failed with exit code 3 on a clean checkout of your change (outside your sandbox, with a fresh HOME):\n\n```\nFAIL: calc.Sub is missing\n```",
			inBody: []string{
				"> Opened as a draft: the test command failed with exit code 3 on the change, and its output has no per-test results to compare with the base commit.",
				"it failed with exit code 3 on the final change.",
				"<details><summary>The end of its output</summary>\n\n```\nFAIL: calc.Sub is missing\n```",
			},
			finalWords: "I opened #2 for this issue as a draft: the test command failed with exit code 3 on the change",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.configure("main", "test: "+yamlQuote(tt.test)+"\ninstructions: Keep the change to calc.go.\nlabels: [bot-made, needs-review]\n")
			h.model.add(fixCalc(), submit("Fixed Add."), submit(""))
			h.startWorker()
			h.label(hRequester)
			h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })

			msgs := h.model.lastMessages()
			if len(msgs) != 3 {
				t.Fatalf("model queries = %d, want 3", len(msgs))
			}
			if !strings.Contains(msgs[0], "Keep the change to calc.go.") {
				t.Errorf("the task lacks the repository's instructions:\n%s", msgs[0])
			}
			if !strings.Contains(msgs[2], tt.inReview) {
				t.Errorf("the review message lacks %q:\n%s", tt.inReview, msgs[2])
			}
			prs := h.prs()
			if len(prs) != 1 {
				t.Fatalf("pull requests = %d, want 1", len(prs))
			}
			if prs[0].Draft != tt.draft {
				t.Errorf("PR draft = %v, want %v", prs[0].Draft, tt.draft)
			}
			for _, want := range tt.inBody {
				if !strings.Contains(prs[0].Body, want) {
					t.Errorf("PR body lacks %q:\n%s", want, prs[0].Body)
				}
			}
			if diff := cmp.Diff([]string{"bot-made", "needs-review"}, h.f.Labels(hRepo, prs[0].Number)); diff != "" {
				t.Errorf("PR labels (-want +got):\n%s", diff)
			}
			if final := h.finals()[0].Body; !strings.Contains(final, tt.finalWords) {
				t.Errorf("final comment lacks %q:\n%s", tt.finalWords, final)
			}
		})
	}
}

// yamlQuote quotes s as a YAML single-quoted scalar.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func TestInvalidRepoConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.configure("main", "test: make test\nmax_steps: many\ncolour: blue\n")
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the job to end for good", func() bool { return h.taskState() == "archived" })
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 {
		t.Fatalf("status comments = %d, want 1", len(status))
	}
	for _, want := range []string{
		"❌ **Failed**: the repository's configuration cannot be used. Fix .github/agent-fix.yml on the default branch and ask again.",
		".github/agent-fix.yml:2: max_steps: must be a positive integer",
		".github/agent-fix.yml:3: colour: unknown key",
	} {
		if !strings.Contains(status[0].Body, want) {
			t.Errorf("status comment lacks %q:\n%s", want, status[0].Body)
		}
	}
	if n := gitCalls(h.f); n != 0 {
		t.Errorf("the git server got %d requests, want none (no clone)", n)
	}
	if len(h.prs()) != 0 || h.model.calls() != 0 {
		t.Errorf("PRs %d, model calls %d; want none", len(h.prs()), h.model.calls())
	}
}

func TestSetupCommands(t *testing.T) {
	t.Parallel()
	t.Run("network on, then off for the agent", func(t *testing.T) {
		// A service on the worker's loopback (Redis, /metrics) that neither
		// setup, in its own network namespace, nor the agent reaches.
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte("local-service"))
		}))
		t.Cleanup(srv.Close)
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		fetch := "exec 3<>/dev/tcp/127.0.0.1/" + port + " && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
		setup := `{ grep -q tap0 /proc/net/dev && echo setup-has-network; (` + fetch + `) || echo setup-no-loopback; } > "$HOME/deps.txt" 2>&1`
		h := newHarness(t)
		h.configure("main", "setup:\n  - "+yamlQuote(setup)+"\n")
		h.model.add(bash(`cat "$HOME/deps.txt"; `+fetch+` || echo no network`), fixCalc(), submit("Fixed Add."), submit(""))
		h.startWorker()
		h.label(hRequester)
		h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
		if n := hits.Load(); n != 0 {
			t.Errorf("the worker's loopback service got %d requests, want none", n)
		}
		obs := h.model.lastMessages()[1]
		for _, want := range []string{"setup-has-network", "setup-no-loopback", "no network"} {
			if !strings.Contains(obs, want) {
				t.Errorf("the agent saw %q, want %q: setup's own network without the worker's loopback, and no network of its own", obs, want)
			}
		}
		if len(h.prs()) != 1 {
			t.Errorf("pull requests = %d, want 1", len(h.prs()))
		}
	})
	t.Run("a failing command ends the job", func(t *testing.T) {
		h := newHarness(t)
		h.configure("main", "setup:\n  - echo preparing\n  - "+yamlQuote("echo 'npm ERR! registry unreachable' >&2; exit 7")+"\n  - echo never\n")
		h.startWorker()
		h.label(hRequester)
		h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
		final := h.finals()[0].Body
		for _, want := range []string{
			"I did not open a pull request: the setup command `echo 'npm ERR! registry unreachable' >&2; exit 7` of .github/agent-fix.yml failed with exit code 7, so the agent did not start.",
			"The end of its output:\n\n```\nnpm ERR! registry unreachable\n```",
		} {
			if !strings.Contains(final, want) {
				t.Errorf("final comment lacks %q:\n%s", want, final)
			}
		}
		if status := h.commentsWith(h.issue, "❌ **Failed**: the setup command"); len(status) != 1 {
			t.Errorf("the status comment does not say the setup failed")
		}
		h.waitFor("the task to end", func() bool { return h.taskState() == "completed" })
		if h.model.calls() != 0 || len(h.prs()) != 0 {
			t.Errorf("model calls %d, PRs %d; want none", h.model.calls(), len(h.prs()))
		}
	})
}

func TestRepoLimitsLowerTheOperators(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // the operator's limits: 20 steps, $1, 5m
	h.configure("main", "max_steps: 2\nmax_cost_usd: 100\n")
	h.model.add(bash("ls"), bash("cat calc.go"))
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
	if final := h.finals()[0].Body; !strings.Contains(final, "step limit reached: 2 of 2 steps") {
		t.Errorf("final comment:\n%s", final)
	}
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "> ℹ️ .github/agent-fix.yml: max_cost_usd: 100.00 is above the operator's limit; 1.00 applies") {
		t.Errorf("status comment does not note the limit it could not raise:\n%+v", status)
	}
	if h.model.calls() != 2 {
		t.Errorf("model calls = %d, want 2", h.model.calls())
	}
}

// TestInstructionsFromTheDefaultBranch: the repository's AGENTS.md reaches
// the agent's task and the status comment names it; a nested one is shown
// when the agent first reads a file under it.
func TestInstructionsFromTheDefaultBranch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.Commit(hRepo, "main", map[string]string{
		"AGENTS.md":         "Always run go vet before you submit.\n",
		"pkg/api/AGENTS.md": "The API is frozen: never rename exported names.\n",
		"pkg/api/api.go":    "package api\n",
	}, "agents")
	h.model.add(
		turn{calls: []call{{"str_replace_editor", map[string]string{"command": "view", "path": "pkg/api/api.go"}}}},
		fixCalc(), submit("Fixed Add."), submit(""),
	)
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the pull request", func() bool { return len(h.prs()) == 1 })
	first, third := h.model.request(0), h.model.request(2)
	if !strings.Contains(first, "Always run go vet before you submit.") || !strings.Contains(first, "AGENTS.md") {
		t.Errorf("the first request lacks the repository's AGENTS.md:\n%s", first)
	}
	if strings.Contains(first, "The API is frozen") || !strings.Contains(third, "The API is frozen: never rename exported names.") {
		t.Errorf("the nested AGENTS.md should first appear after the view of pkg/api/api.go")
	}
	status := h.commentsWith(h.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "instructions in AGENTS.md, pkg/api/AGENTS.md") {
		t.Errorf("status comment does not name the instructions files:\n%+v", status)
	}
}
