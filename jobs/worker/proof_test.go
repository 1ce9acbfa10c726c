package worker

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenFile compares got with testdata/name.golden (-update rewrites
// it).
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// variable are the parts of the bot's texts that change from run to run.
var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{8}`), "RUN-ID"},
	{regexp.MustCompile(`\b[0-9a-f]{40}\b`), "COMMIT"},
	{regexp.MustCompile(`\bin \d+\.\d+s\b`), "in N.NNs"},
	{regexp.MustCompile(`\| Duration \| [^|]+ \|`), "| Duration | D |"},
	{regexp.MustCompile(`d-[0-9a-f]{16}`), "DELIVERY"},
	{regexp.MustCompile(`/tmp/[^\s:]+`), "/TMP"},
}

func normalised(s string) string {
	for _, v := range variable {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// pytestFiles is a Python repository whose add is wrong, with tests.
var pytestFiles = map[string]string{
	"calc.py":      "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
	"test_calc.py": "from calc import add, sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n",
}

// fixAdd is the agent's fix of pytestFiles' add.
func fixAdd() turn {
	return edit("calc.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
}

// proofRun labels the issue of a pipeline world whose repository holds
// files and .github/agent-fix.yml yml, plays the agent's turns then a
// submit and a confirming submit, and returns the review message and the
// pull request.
func proofRun(t *testing.T, files map[string]string, yml string, turns ...turn) (string, ghapp.PullRequest) {
	t.Helper()
	p := newPipeWorld(t, append(turns, submit("Fixed add."), submit(""))...)
	all := map[string]string{config.RepoFile: yml}
	for path, b := range files {
		all[path] = b
	}
	p.git.commit(t, "main", all, "the repository")
	w := p.worker()
	if err := w.handleFix(t.Context(), p.label(w, hRequester)); err != nil {
		t.Fatalf("the fix job: %v\nlogs:\n%s", err, tail(p.logs.String(), 6000))
	}
	msgs := p.model.lastMessages()
	prs := p.gh.botPRs()
	if len(prs) != 1 || len(msgs) < 2 {
		t.Fatalf("pull requests %d, model queries %d; final comments:\n%+v", len(prs), len(msgs), p.gh.commentsWith(p.issue, "agentfix:final"))
	}
	return msgs[len(msgs)-1], prs[0]
}

// proofRunIn is proofRun on the full harness h.
func proofRunIn(t *testing.T, h *harness, files map[string]string, yml string, turns ...turn) (string, ghfake.PR) {
	t.Helper()
	all := map[string]string{config.RepoFile: yml}
	for p, b := range files {
		all[p] = b
	}
	h.f.Commit(hRepo, "main", all, "the repository")
	h.model.add(append(turns, submit("Fixed add."), submit(""))...)
	h.startWorker(h.imageWorker) // the sandboxes' default command time limit
	h.label(hRequester)
	h.waitFor("the final comment", func() bool { return len(h.finals()) == 1 })
	msgs := h.model.lastMessages()
	prs := h.prs()
	if len(prs) != 1 || len(msgs) < 2 {
		t.Fatalf("pull requests %d, model queries %d; final comment:\n%s", len(prs), len(msgs), h.finals()[0].Body)
	}
	return msgs[len(msgs)-1], prs[0]
}

// TestProofInThePullRequest plays the proof's cases through the pipeline
// world on a pytest repository: the review message and the pull request body of each
// are kept as golden files.
func TestProofInThePullRequest(t *testing.T) {
	t.Parallel()
	addTest := edit("test_calc.py", "def test_add_zero():", "def test_add_two():\n    assert add(2, 2) == 4\n\n\ndef test_add_zero():")
	tests := []struct {
		name   string
		files  map[string]string
		yml    string
		turns  []turn
		draft  bool
		inBody []string
	}{
		{name: "regression test proven", yml: "test: python3 -m pytest -q\n", turns: []turn{fixAdd(), addTest},
			inBody: []string{"test_add_two in test_calc.py"}},
		{name: "no test, encouraged", yml: "test: python3 -m pytest -q\n", turns: []turn{fixAdd()},
			inBody: []string{"No regression test is proven to fail on the base commit and pass on the change: the change adds or edits no test."}},
		{name: "no test, required", yml: "test: python3 -m pytest -q\ntest_policy:\n  regression: required\n", turns: []turn{fixAdd()}, draft: true,
			inBody: []string{"> Opened as a draft: no regression test is proven to fail on the base commit and pass on the change (test_policy.regression: required)"}},
		{name: "pre-existing failure", yml: "test: python3 -m pytest -q\n", turns: []turn{fixAdd(), addTest},
			files:  map[string]string{"test_env.py": "import os\n\n\ndef test_locale():\n    assert os.environ.get('LC_ALL') == 'xx_XX'\n"},
			inBody: []string{"test_env.py::test_locale", "test_add_two in test_calc.py"}},
		{name: "deleted test and added skip", yml: "test: python3 -m pytest -q\n", draft: true,
			turns: []turn{fixAdd(),
				edit("test_calc.py", "def test_sub():\n    assert sub(3, 1) == 2\n\n\n", ""),
				edit("test_calc.py", "def test_add_zero():", "import pytest\n\n\n@pytest.mark.skip(reason='flaky')\ndef test_add_zero():")},
			inBody: []string{"deletes test test_sub", "adds a skip"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			for p, b := range pytestFiles {
				files[p] = b
			}
			for p, b := range tc.files {
				files[p] = b
			}
			review, pr := proofRun(t, files, tc.yml, tc.turns...)
			if pr.Draft != tc.draft {
				t.Errorf("draft = %v, want %v", pr.Draft, tc.draft)
			}
			for _, want := range tc.inBody {
				if !strings.Contains(pr.Body, want) {
					t.Errorf("the pull request body lacks %q", want)
				}
			}
			name := "proof_" + strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
			goldenFile(t, name, "===== review message =====\n"+normalised(review)+"\n===== pull request body =====\n"+normalised(pr.Body))
		})
	}
}

// TestProofOfAGoRegressionTest: a Go repository whose test command is
// go test; the agent's new test function fails on the base commit's code
// and passes on the change, and the pull request says so, ready.
func TestProofOfAGoRegressionTest(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"go.mod":       "module example.com/widget\n\ngo 1.22\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAddZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"Add(0, 0) != 0\")\n\t}\n}\n",
	}
	// Setup builds the tests once, so that the test runs find the build
	// cache warm; a cold build of the standard library takes minutes on
	// a loaded machine, longer than the harness's time limit of a run.
	h := newHarness(t)
	h.cfg.MaxDuration = 30 * time.Minute
	review, pr := proofRunIn(t, h, files, "setup: go test -count=1 -run '^$' ./...\ntest: go test ./...\n", fixCalc(),
		edit("calc_test.go", "func TestAddZero(", "func TestAddTwo(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestAddZero("))
	if pr.Draft {
		t.Errorf("the pull request is a draft:\n%s", pr.Body)
	}
	for _, want := range []string{"TestAddTwo in calc_test.go", "Add(2, 2) = 0, want 4"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, pr.Body)
		}
		if !strings.Contains(review, want) {
			t.Errorf("the review message lacks %q:\n%s", want, review)
		}
	}
}
