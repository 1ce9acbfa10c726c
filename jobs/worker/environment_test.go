package worker

import (
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// runInImage labels the harness's issue with the repository's files and
// configuration committed on main, and returns the review message the
// model got, the pull request and the status comment, once the job ended.
func runInImage(t *testing.T, h *harness, files map[string]string) (review string, pr ghfake.PR, status string) {
	t.Helper()
	h.f.Commit(hRepo, "main", files, "an environment for the agent")
	h.model.add(fixCalc(), submit("Fixed Add."), submit(""))
	h.startWorker(h.imageWorker)
	h.label(hRequester)
	h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
	msgs := h.model.lastMessages()
	if len(msgs) != 3 {
		t.Fatalf("model queries = %d, want 3; final comment:\n%s\nlogs:\n%s", len(msgs), h.finals()[0].Body, tail(h.logs.String(), 6000))
	}
	prs := h.prs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1; final comment:\n%s", len(prs), h.finals()[0].Body)
	}
	st := h.commentsWith(h.issue, "agentfix:status")
	if len(st) != 1 {
		t.Fatalf("status comments = %d, want 1", len(st))
	}
	return msgs[2], prs[0], st[0].Body
}

// checkInImage checks that the test command ran inside the image ref, that
// it passed, and that the pull request and the status comment name the
// image with its digest.
func checkInImage(t *testing.T, ref, marker, review string, pr ghfake.PR, status string) {
	t.Helper()
	for _, want := range []string{marker, "passed on a clean checkout of your change"} {
		if !strings.Contains(review, want) {
			t.Errorf("the review message lacks %q:\n%s", want, review)
		}
	}
	if pr.Draft {
		t.Errorf("the pull request is a draft:\n%s", pr.Body)
	}
	repo, _, _ := strings.Cut(ref, ":1")
	named := "image `" + ref + "` (`" + repo + "@sha256:"
	for _, want := range []string{"The agent's commands and the tests ran in " + named, "named in `.github/agent-fix.yml`", "it passed on the final change"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, pr.Body)
		}
	}
	if !strings.Contains(status, "🧱 Environment: "+named) {
		t.Errorf("the status comment does not name the image:\n%s", status)
	}
}

func TestGoRepositoryInItsImage(t *testing.T) {
	t.Parallel()
	host := imageRegistry(t)
	ref := goImage(t, host)
	h := newHarness(t)
	review, pr, status := runInImage(t, h, map[string]string{
		"go.mod":       "module example.com/widget\n\ngo 1.22\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n",
		// Setup builds the tests once, so the test runs find the build
		// cache warm.
		config.RepoFile: "image: " + ref + "\nsetup: go test -count=1 -run '^$' ./...\ntest: cat /etc/image-marker && go test ./...\n",
	})
	checkInImage(t, ref, "inside the go image", review, pr, status)
	if !strings.Contains(review, "ok  \texample.com/widget") {
		t.Errorf("the review message lacks go test's result:\n%s", review)
	}
}

func TestPythonRepositoryInItsImage(t *testing.T) {
	t.Parallel()
	host := imageRegistry(t)
	ref := pythonImage(t, host)
	h := newHarness(t)
	review, pr, status := runInImage(t, h, map[string]string{
		"calc.go":       "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"calc.py":       "def add(a, b):\n    return a + b\n",
		"test_calc.py":  "import unittest\n\nimport calc\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n",
		config.RepoFile: "image: " + ref + "\ntest: cat /etc/image-marker && python3 -m unittest -v\n",
	})
	checkInImage(t, ref, "inside the python image", review, pr, status)
	if !strings.Contains(review, "test_add (test_calc.TestAdd") {
		t.Errorf("the review message lacks unittest's result:\n%s", review)
	}
}

func TestMissingImageEndsBeforeTheModel(t *testing.T) {
	t.Parallel()
	host := imageRegistry(t)
	h := newHarness(t)
	ref := host + "/env/missing:1"
	h.configure("main", "image: "+ref+"\ntest: go test ./...\n")
	h.startWorker(h.imageWorker)
	h.label(hRequester)
	h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
	if n := h.model.calls(); n != 0 {
		t.Errorf("model queries = %d, want none", n)
	}
	final := h.finals()[0].Body
	for _, want := range []string{"I did not open a pull request: the image `" + ref + "` (named in .github/agent-fix.yml) cannot be used, so the agent did not start: ", "Name an image the worker can pull"} {
		if !strings.Contains(final, want) {
			t.Errorf("final comment lacks %q:\n%s", want, final)
		}
	}
	if strings.Contains(final, "What the agent did") {
		t.Errorf("final comment tells of an agent that never ran:\n%s", final)
	}
	if len(h.prs()) != 0 {
		t.Error("a pull request was opened")
	}
}

// TestSetupCachesWarmTheNextJob runs two jobs of one repository: the
// second's setup finds what the first's left in HOME, through a copy.
func TestSetupCachesWarmTheNextJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.configure("main", "setup: 'if [ -f \"$HOME/warm\" ]; then echo warm > \"$HOME/seen\"; else echo cold > \"$HOME/seen\"; fi; touch \"$HOME/warm\"'\n"+
		"test: 'cat \"$HOME/seen\"'\n")
	h.model.add(fixCalc(), submit("Fixed Add."), submit(""))
	h.startWorker(func(o *Options) { h.setupCaches(o) })
	h.label(hRequester)
	h.waitFor("the first final comment", func() bool { return len(h.finals()) == 1 })

	first := h.issue
	h.issue = h.f.AddIssue(hRepo, ghfake.Issue{Title: "Add is still wrong", Body: "again", Author: "carol"})
	h.model.add(fixCalc(), submit("Fixed Add again."), submit(""))
	h.label(hRequester)
	h.waitFor("the second final comment", func() bool { return len(h.finals()) == 1 })

	msgs := h.model.lastMessages()
	if len(msgs) != 6 {
		t.Fatalf("model queries = %d, want 6", len(msgs))
	}
	for i, want := range map[int]string{2: "```\ncold\n```", 5: "```\nwarm\n```"} {
		if !strings.Contains(msgs[i], want) {
			t.Errorf("review message of job %d lacks %q:\n%s", i/3+1, want, msgs[i])
		}
	}
	if len(h.commentsWith(first, "agentfix:final")) != 1 {
		t.Error("the first issue did not keep its one final comment")
	}
}

// TestRoundSetupRunsTheDefaultBranchsFiles is the red team's High
// finding: a round on the bot's branch, whose files the agent wrote in the
// round before, runs setup on the default branch's files, and the round's
// files are back for the agent afterwards.
func TestRoundSetupRunsTheDefaultBranchsFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.f.Commit(hRepo, "main", map[string]string{
		"scripts/setup.sh": "echo trusted > \"$HOME/who\"\n",
		config.RepoFile:    "setup: sh scripts/setup.sh\ntest: 'cat \"$HOME/who\"; cat scripts/setup.sh'\n",
	}, "setup from a script")
	// Round 1 (the fix): the agent rewrites the setup script.
	h.model.add(fixCalc(), edit("scripts/setup.sh", "echo trusted", "echo written by the agent"), submit("Fixed Add."), submit(""))
	h.startWorker()
	h.label(hRequester)
	h.waitFor("the fix's final comment", func() bool { return len(h.finals()) == 1 })
	pr := h.botPR()

	// Round 2, asked for on the pull request: setup runs main's script.
	h.model.add(edit("README.md", "# widget", "# widget\n\nAdds."), submit("Documented it."), submit(""))
	h.commentOn(pr, h.f.BotLogin(), hRequester, "/agent-fix document it")
	h.waitForComments("the round's reply", pr, "agentfix:final revise:", 1)
	msgs := h.model.lastMessages()
	review := msgs[len(msgs)-1]
	for _, want := range []string{"```\ntrusted\necho written by the agent > \"$HOME/who\"\n```"} {
		if !strings.Contains(review, want) {
			t.Errorf("the round's review message lacks %q (setup ran the agent's script, or the round's files were not put back):\n%s", want, review)
		}
	}
}
