package worker

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/devcontainer"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/session"
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

// pipeRunInImage is runInImage in the pipeline world: the fix job of the
// label, run with the worker's handler, with the registry's images.
func pipeRunInImage(t *testing.T, files map[string]string) (review string, pr ghapp.PullRequest, status string) {
	t.Helper()
	p := newPipeWorld(t, fixCalc(), submit("Fixed Add."), submit(""))
	p.git.commit(t, "main", files, "an environment for the agent")
	w := p.worker(p.images)
	if err := w.handleFix(t.Context(), p.label(w, hRequester)); err != nil {
		t.Fatalf("the fix job: %v\nlogs:\n%s", err, tail(p.logs.String(), 6000))
	}
	finals := p.gh.commentsWith(p.issue, "agentfix:final")
	if len(finals) != 1 {
		t.Fatalf("final comments = %d, want 1\nlogs:\n%s", len(finals), tail(p.logs.String(), 6000))
	}
	msgs := p.model.lastMessages()
	if len(msgs) != 3 {
		t.Fatalf("model queries = %d, want 3; final comment:\n%s\nlogs:\n%s", len(msgs), finals[0].Body, tail(p.logs.String(), 6000))
	}
	prs := p.gh.botPRs()
	if len(prs) != 1 {
		t.Fatalf("pull requests = %d, want 1; final comment:\n%s", len(prs), finals[0].Body)
	}
	st := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(st) != 1 {
		t.Fatalf("status comments = %d, want 1", len(st))
	}
	return msgs[2], prs[0], st[0].Body
}

// checkInImage checks that the test command ran inside the image ref, that
// it passed, and that the pull request (draft or not, with body) and the
// status comment name the image with its digest.
func checkInImage(t *testing.T, ref, marker, review string, draft bool, body, status string) {
	t.Helper()
	for _, want := range []string{marker, "passed on a clean checkout of your change"} {
		if !strings.Contains(review, want) {
			t.Errorf("the review message lacks %q:\n%s", want, review)
		}
	}
	if draft {
		t.Errorf("the pull request is a draft:\n%s", body)
	}
	repo, _, _ := strings.Cut(ref, ":1")
	named := "image `" + ref + "` (`" + repo + "@sha256:"
	for _, want := range []string{"The agent's commands and the tests ran in " + named, "named in `.github/agent-fix.yml`", "it passed on the final change"} {
		if !strings.Contains(body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, body)
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
	checkInImage(t, ref, "inside the go image", review, pr.Draft, pr.Body, status)
	if !strings.Contains(review, "ok  \texample.com/widget") {
		t.Errorf("the review message lacks go test's result:\n%s", review)
	}
}

// TestPythonRepositoryInItsImage: the second language of the end-to-end
// image runs (#12): a repository whose tests need a toolchain the worker
// does not have, here Python, fixed and tested in its own image, on the
// pipeline world (TestGoRepositoryInItsImage has the whole way through the
// webhook edge and GitHub's API).
func TestPythonRepositoryInItsImage(t *testing.T) {
	t.Parallel()
	host := imageRegistry(t)
	ref := pythonImage(t, host)
	review, pr, status := pipeRunInImage(t, map[string]string{
		"calc.go":       "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"calc.py":       "def add(a, b):\n    return a + b\n",
		"test_calc.py":  "import unittest\n\nimport calc\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n",
		config.RepoFile: "image: " + ref + "\ntest: cat /etc/image-marker && python3 -m unittest -v\n",
	})
	checkInImage(t, ref, "inside the python image", review, pr.Draft, pr.Body, status)
	if !strings.Contains(review, "test_add (test_calc.TestAdd") {
		t.Errorf("the review message lacks unittest's result:\n%s", review)
	}
}

// TestMissingImageEndsBeforeTheModel: the image the repository names
// reaches the session, and when the session cannot use it (session's
// TestRunImageRefusedBeforeTheModel: before any sandbox or model call;
// rootfs's TestImageErrors has the registry's answers) the job ends for
// good with a final comment that names the image and where it was named,
// tells of no agent, and opens no pull request.
func TestMissingImageEndsBeforeTheModel(t *testing.T) {
	t.Parallel()
	const ref = "127.0.0.1:5000/env/missing:1"
	sw := newStepWorld(t, nil, stepYML("image: "+ref+"\ntest: go test ./...\n"))
	sw.sessions.answer = func(o session.Options) (session.Result, error) {
		return session.Result{}, &session.EnvironmentError{Choice: devcontainer.Choice{Source: devcontainer.SourceRepoConfig, Image: o.Settings.Image},
			Err: errors.New(ref + ": not found: the registry has no such image or tag (MANIFEST_UNKNOWN)")}
	}
	o, err := sw.fix().run(t.Context())
	if o != outcome.ImageFailed || !o.Final() || err != nil {
		t.Fatalf("fix = %s, %v; want a final image_failed", o, err)
	}
	if got := sw.sessions.only(t).Settings.Image; got != ref {
		t.Errorf("session image = %q, want %q", got, ref)
	}
	final := sw.gh.botComments(1, "agentfix:final")
	if len(final) != 1 {
		t.Fatalf("final comments = %d, want 1", len(final))
	}
	for _, want := range []string{"I did not open a pull request: the image `" + ref + "` (named in .github/agent-fix.yml) cannot be used, so the agent did not start: ", "Name an image the worker can pull"} {
		if !strings.Contains(final[0], want) {
			t.Errorf("final comment lacks %q:\n%s", want, final[0])
		}
	}
	if strings.Contains(final[0], "What the agent did") {
		t.Errorf("final comment tells of an agent that never ran:\n%s", final[0])
	}
	if status := sw.gh.botComments(1, "agentfix:status"); len(status) != 1 || !strings.Contains(status[0], "❌ **Failed**: the image `"+ref+"`") {
		t.Errorf("status comments %q, want one saying the image cannot be used", status)
	}
	if n := len(sw.gh.called("CreatePR")); n != 0 {
		t.Errorf("pull requests opened = %d, want none", n)
	}
}
