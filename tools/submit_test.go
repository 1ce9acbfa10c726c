package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/workspace"
)

func submitCall(summary string) agent.ToolCall {
	if summary == "" {
		return call(SubmitTool, map[string]string{})
	}
	return call(SubmitTool, map[string]string{"summary": summary})
}

// fixAdd makes the change an agent would: the fix, a reproduction script
// and an edited test.
func fixAdd(t *testing.T, e testEnv) {
	t.Helper()
	e.exec(t, call(EditorTool, ed("str_replace", "calc/calc.go", "old_str", "\treturn a - b", "new_str", "\treturn a + b")))
	e.bash(t, "printf 'from calc import add\\nprint(add(1, 2))\\n' > reproduce.py")
	e.exec(t, call(EditorTool, ed("insert", "calc/calc_test.go", "insert_line", 9, "new_str", "\n// TestAddNegative was added by the agent.")))
}

func TestSubmitTwoPhase(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.TestCommand = "sh run_tests.sh" })
	fixAdd(t, e)

	first := e.exec(t, submitCall(""))
	if first.Submitted {
		t.Fatalf("the first submit ended the run")
	}
	golden(t, "review_first", first.Output)

	final := e.exec(t, submitCall("Fixed Add to add; run_tests.sh passes."))
	want := agent.Observation{Output: "Your change was submitted.", Submitted: true, Summary: "Fixed Add to add; run_tests.sh passes."}
	if final != want {
		t.Errorf("second submit = %+v, want %+v", final, want)
	}
	patch, err := e.Diff(context.Background())
	if err != nil || !strings.Contains(patch, "+\treturn a + b") || !strings.Contains(patch, "reproduce.py") {
		t.Errorf("Diff after submission = %q, %v; want the whole change", patch, err)
	}
}

func TestSubmitTextModeWithFailingTests(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.TestCommand = "sh run_tests.sh"
		o.TextMode = true
	})
	e.bash(t, "echo 'see issue' >> README.md")
	first := e.exec(t, submitCall("Documented the bug."))
	if first.Submitted {
		t.Fatalf("the first submit ended the run")
	}
	golden(t, "review_text_mode", first.Output)
	// The summary of the first call is kept when the last one has none.
	final := e.exec(t, submitCall(""))
	if !final.Submitted || final.Summary != "Documented the bug." {
		t.Errorf("final submit = %+v, want submitted with the first call's summary", final)
	}
}

func TestSubmitNothingToSubmit(t *testing.T) {
	e := newTestEnv(t, nil)
	for i := 0; i < 2; i++ {
		obs := e.exec(t, submitCall("nothing"))
		if obs.Submitted {
			t.Fatalf("submit of an empty change ended the run")
		}
		golden(t, "nothing_to_submit", obs.Output)
	}
	// An edit that is undone leaves nothing either.
	e.bash(t, "echo x >> README.md && git checkout -- README.md")
	if obs := e.exec(t, submitCall("")); obs.Submitted || !strings.HasPrefix(obs.Output, "There is nothing to submit") {
		t.Errorf("submit after a reverted edit = %+v", obs)
	}
	// The stage did not advance: a real change gets its review first.
	e.bash(t, "echo x >> README.md")
	if obs := e.exec(t, submitCall("")); obs.Submitted || !strings.Contains(obs.Output, "Your full diff") {
		t.Errorf("first submit with a change = %+v, want the review", obs)
	}
	if obs := e.exec(t, submitCall("")); !obs.Submitted {
		t.Errorf("second submit with a change = %+v, want submitted", obs)
	}
}

func TestSubmitWorkflowChanges(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		e := newTestEnv(t, nil)
		fixAdd(t, e)
		e.bash(t, "echo '  pull_request:' >> .github/workflows/ci.yml && echo 'on: push' > .github/workflows/new.yml")
		for i := 0; i < 2; i++ {
			obs := e.exec(t, submitCall("Fixed Add."))
			if obs.Submitted {
				t.Fatalf("a workflow change was submitted")
			}
			golden(t, "workflows_refused", obs.Output)
		}
		e.bash(t, "git checkout "+e.wt.Base()+" -- .github/workflows/ci.yml && rm .github/workflows/new.yml")
		if obs := e.exec(t, submitCall("")); obs.Submitted || !strings.Contains(obs.Output, "Facts the harness checked") {
			t.Errorf("submit after reverting the workflows = %+v, want the review", obs)
		}
		if obs := e.exec(t, submitCall("")); !obs.Submitted {
			t.Errorf("final submit = %+v, want submitted", obs)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.AllowWorkflowChanges = true })
		e.bash(t, "echo '  pull_request:' >> .github/workflows/ci.yml")
		obs := e.exec(t, submitCall("CI on pull requests."))
		if obs.Submitted || !strings.Contains(obs.Output, "- Workflow files changed: .github/workflows/ci.yml. This repository allows it") {
			t.Errorf("first submit = %+v, want the review naming the workflow change", obs)
		}
		if obs := e.exec(t, submitCall("")); !obs.Submitted {
			t.Errorf("final submit = %+v, want submitted", obs)
		}
	})
}

func TestSubmitReviewStages(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.TestCommand = "pwd; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
		o.ReviewStages = []string{
			"Stage {{.Stage}} of {{.Stages}}: {{len .Files}} files, new: {{join .New \",\"}}.",
			"Stage {{.Stage}} of {{.Stages}}: test exit {{.Test.ExitCode}}, output {{printf \"%q\" .Test.Output}}.",
		}
	})
	e.bash(t, "echo x > new.txt")
	want := []string{
		"Stage 1 of 2: 1 files, new: new.txt.",
		`Stage 2 of 2: test exit 0, output "/workspace\nlo\n".`,
	}
	for i, w := range want {
		obs := e.exec(t, submitCall(""))
		if obs.Submitted || obs.Output != w {
			t.Errorf("submit %d = %+v, want output %q and not submitted", i+1, obs, w)
		}
	}
	if obs := e.exec(t, submitCall("")); !obs.Submitted {
		t.Errorf("submit 3 = %+v, want submitted", obs)
	}
}

func TestSubmitTestCommandTimeout(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.TestCommand = "echo running; sleep 100"
		o.TestTimeout = time.Second
	})
	e.bash(t, "echo x >> README.md")
	obs := e.exec(t, submitCall(""))
	if !strings.Contains(obs.Output, "- The repository's test command `echo running; sleep 100` timed out:") || !strings.Contains(obs.Output, "running") {
		t.Errorf("review after a test timeout:\n%s", obs.Output)
	}
}

func TestNewRejectsBadReviewStages(t *testing.T) {
	e := newTestEnv(t, nil)
	for name, stage := range map[string]string{
		"parse error":   "{{if}}",
		"missing field": "{{.Nope}}",
		"bad function":  "{{nope .Diff}}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(Options{Sandbox: e.sb, Repo: e.wt, Root: e.wt.Dir(), ReviewStages: []string{stage}})
			if err == nil {
				t.Errorf("New with review stage %q: want an error", stage)
			}
		})
	}
}

func TestSubmitDiffTooLarge(t *testing.T) {
	e := newTestEnvTree(t, workspace.WorkTreeOptions{MaxDiffBytes: 4096}, nil)
	e.bash(t, "seq 1 10000 > numbers.txt")
	obs := e.exec(t, submitCall("numbers"))
	if obs.Submitted || !strings.HasPrefix(obs.Output, "Your change was not submitted: its diff is larger") {
		t.Errorf("submit of an oversized diff = %+v", obs)
	}
	e.bash(t, "rm numbers.txt && echo x >> README.md")
	if obs := e.exec(t, submitCall("")); obs.Submitted || !strings.Contains(obs.Output, "Your full diff") {
		t.Errorf("submit after removing the big file = %+v, want the review", obs)
	}
}

// TestSubmitRefusesSymlinks: a symbolic link under .github/ (even where
// workflow changes are allowed) or one whose target leaves the repository
// is never submitted; the answer names each.
func TestSubmitRefusesSymlinks(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.AllowWorkflowChanges = true })
	fixAdd(t, e)
	e.bash(t, "ln -s /etc/passwd passwd && ln -s ../../README.md .github/workflows/readme.yml")
	for i := 0; i < 2; i++ {
		obs := e.exec(t, submitCall("Fixed Add."))
		if obs.Submitted {
			t.Fatalf("a change with refused symlinks was submitted")
		}
		golden(t, "symlinks_refused", obs.Output)
	}
	e.bash(t, "rm passwd .github/workflows/readme.yml")
	if obs := e.exec(t, submitCall("")); obs.Submitted || !strings.Contains(obs.Output, "Facts the harness checked") {
		t.Errorf("submit without the links = %+v, want the review", obs)
	}
}
