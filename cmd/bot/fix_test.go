package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/localfix"
)

// testGitEnv makes the test repositories' commits deterministic and keeps
// the machine's git configuration out.
var testGitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testGitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The test repository: a Go package (no modules needed: the sandbox has no
// network) whose test fails until Add adds.
const (
	calcBuggy = "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	calcFixed = "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
)

var calcRepo = map[string]string{
	"go.mod":       "module example.com/calc\n\ngo 1.22\n",
	"calc.go":      calcBuggy,
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(1, 2); got != 3 {\n\t\tt.Fatalf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n}\n",
	"README.md":    "# calc\n",
}

// agentFixYML warms the build cache in setup (with network, before the
// agent) and leaves a mark the agent checks; its test command goes into the
// review.
const agentFixYML = `setup:
  - touch "$HOME/setup-ran"
  - go test -count=1 -run '^$' ./...
test: go test ./...
instructions: Keep Add's signature.
`

// newCalcRepo makes the user's checkout: a git repository with one commit
// and files added to calcRepo, cloned from GitHub's octo/calc (its origin
// remote).
func newCalcRepo(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "calc")
	gitIn(t, t.TempDir(), "init", "--quiet", "--initial-branch=main", dir)
	writeTree(t, dir, calcRepo)
	writeTree(t, dir, extra)
	gitIn(t, dir, "add", "--all")
	gitIn(t, dir, "commit", "--quiet", "-m", "calc")
	gitIn(t, dir, "remote", "add", "origin", "git@github.com:octo/calc.git")
	return dir
}

// told reports whether the model was told s in any message of a request.
func told(reqs []fakeRequest, s string) bool {
	for _, r := range reqs {
		b, _ := json.Marshal(r.Messages)
		var texts []struct{ Content any }
		_ = json.Unmarshal(b, &texts)
		for _, m := range texts {
			if c, ok := m.Content.(string); ok && strings.Contains(c, s) {
				return true
			}
		}
	}
	return false
}

// issueFile writes the issue of the test runs.
func issueFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "issue.md")
	if err := os.WriteFile(p, []byte("# Add subtracts\n\nAdd(1, 2) returns -1; it should return 3.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantPatch is the diff of the fix, as git makes it in a clone of repo.
func wantPatch(t *testing.T, repo string) string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	gitIn(t, t.TempDir(), "clone", "--quiet", repo, clone)
	writeTree(t, clone, map[string]string{"calc.go": calcFixed})
	return gitIn(t, clone, "diff")
}

// fixScript views, edits, tests, submits (getting the review), and submits
// again with a summary.
func fixScript() []fakeCall {
	return []fakeCall{
		{tool: "str_replace_editor", args: map[string]string{"command": "view", "path": "/workspace/calc.go"}},
		{tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "\treturn a - b", "new_str": "\treturn a + b"}},
		{tool: "bash", args: map[string]string{"command": `ls "$HOME/setup-ran" && go test ./...`}},
		{tool: "submit", args: map[string]string{}},
		{tool: "submit", args: map[string]string{"summary": "Add adds now; go test ./... passes."}},
	}
}

// fixOutcome is what one bot fix run left.
type fixOutcome struct {
	code           int
	err            error
	stdout, stderr string
}

// runFixCmd runs `bot fix args...` with environ (plus PATH and a HOME of
// its own) in workDir.
func runFixCmd(t *testing.T, workDir string, environ []string, args ...string) fixOutcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, testGitEnv...)
	m := &Main{Args: append([]string{"fix"}, args...), Environ: append(env, environ...), WorkDir: workDir, Stdout: &stdout, Stderr: &stderr}
	err := m.Run(context.Background())
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	out := fixOutcome{code: exitCode(err), err: err, stdout: stdout.String(), stderr: stderr.String()}
	t.Logf("bot fix %s → exit %d, %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.code, err, out.stdout, out.stderr)
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readTrajectory(t *testing.T, path string) agent.Trajectory {
	t.Helper()
	traj, err := localfix.ReadTrajectoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if traj.Result == nil {
		t.Fatalf("%s has no result record", path)
	}
	return traj
}

// TestFixSubmitsReplaysAndApplies runs bot fix three times on one checkout
// with the real OpenAI provider against a fake endpoint and the real bwrap
// sandbox: a run that submits, a replay of its trajectory without any API
// key, and a run with --apply. Setup and test come from the repository's
// .github/agent-fix.yml; one sandbox cache directory keeps go test warm
// across the runs.
func TestFixSubmitsReplaysAndApplies(t *testing.T) {
	t.Parallel()
	repo := newCalcRepo(t, map[string]string{".github/agent-fix.yml": agentFixYML})
	issue := issueFile(t)
	cache := filepath.Join(t.TempDir(), "cache")
	want := wantPatch(t, repo)
	work := t.TempDir()

	fake := newFakeOpenAI(t, fixScript()...)
	first := filepath.Join(work, "first")
	got := runFixCmd(t, work, fake.environ(), "--repo", repo, "--issue-file", issue, "--out", first, "--cache", cache)
	if got.code != 0 {
		t.Fatalf("exit code %d (%v), want 0", got.code, got.err)
	}
	if diff := cmp.Diff(want, readFile(t, filepath.Join(first, "patch.diff"))); diff != "" {
		t.Errorf("patch.diff (-want +got):\n%s", diff)
	}
	traj := readTrajectory(t, filepath.Join(first, "trajectory.jsonl"))
	if traj.Result.Status != agent.Submitted || traj.Result.Summary != "Add adds now; go test ./... passes." || len(traj.Steps) != 5 {
		t.Errorf("trajectory result %s %q after %d steps, want submitted with the summary after 5", traj.Result.Status, traj.Result.Summary, len(traj.Steps))
	}
	if traj.Header.Task.Title != "Add subtracts" || traj.Header.Task.Notes != "Keep Add's signature." {
		t.Errorf("task title %q notes %q, want the issue's title and the instructions of agent-fix.yml", traj.Header.Task.Title, traj.Header.Task.Notes)
	}
	reqs := fake.requests()
	if len(reqs) != 5 {
		t.Fatalf("the model got %d requests, want 5", len(reqs))
	}
	if got := reqs[3].lastContent(); !strings.Contains(got, "/cache/setup-ran") || !strings.Contains(got, "ok  \texample.com/calc") {
		t.Errorf("go test in the sandbox, after setup, did not pass:\n%s", got)
	}
	if got := reqs[4].lastContent(); !strings.Contains(got, "The repository's test command `go test ./...` passed") {
		t.Errorf("the review lacks the result of agent-fix.yml's test command:\n%s", got)
	}
	for _, line := range []string{"repository  octo/calc at ", "setup       go test -count=1 -run '^$' ./...", "test        go test ./...", "step  5/75  $0.0100  submit → submitted", "ended: submitted"} {
		if !strings.Contains(got.stdout, line) {
			t.Errorf("stdout lacks %q", line)
		}
	}
	if !told(reqs[:1], "Fix this issue in the repository octo/calc.") {
		t.Errorf("the model was not told the repository's name of the origin remote, octo/calc")
	}
	if want := "\nTo apply the patch to your checkout:\n  git -C " + repo + " apply " + filepath.Join(first, "patch.diff") + "\n"; !strings.HasSuffix(got.stdout, want) {
		t.Errorf("stdout does not end with the command that applies the patch, %q", want)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the checkout changed without --apply:\n%s", st)
	}

	replayed := filepath.Join(work, "replayed")
	got = runFixCmd(t, work, nil, "--repo", repo, "--replay", filepath.Join(first, "trajectory.jsonl"), "--out", replayed, "--cache", cache)
	if got.code != 0 {
		t.Fatalf("replay: exit code %d (%v), want 0", got.code, got.err)
	}
	if diff := cmp.Diff(want, readFile(t, filepath.Join(replayed, "patch.diff"))); diff != "" {
		t.Errorf("replay: patch.diff (-want +got):\n%s", diff)
	}
	if r := readTrajectory(t, filepath.Join(replayed, "trajectory.jsonl")); r.Header.Model != "replay/openai/gpt-5" || r.Result.Status != agent.Submitted {
		t.Errorf("replay: model %q status %s, want replay/openai/gpt-5 submitted", r.Header.Model, r.Result.Status)
	}
	for _, line := range []string{
		"model       replay/openai/gpt-5: a replay of " + filepath.Join(first, "trajectory.jsonl") + "; no model is called, nothing is spent\n",
		"cost        $0.00: a replay calls no model (the recorded run: $0.0100, 4000 tokens in, 500 out, 0 cached)\n",
		"repository  octo/calc at ",
	} {
		if !strings.Contains(got.stdout, line) {
			t.Errorf("replay: stdout lacks %q", line)
		}
	}
	for _, line := range strings.Split(got.stdout, "\n") {
		if strings.HasPrefix(line, "step ") && strings.Contains(line, "  $0.") {
			t.Errorf("replay: a step shows a cost: %q", line)
		}
	}

	fake = newFakeOpenAI(t, fixScript()...)
	got = runFixCmd(t, work, fake.environ(), "--repo", repo, "--issue-file", issue, "--out", filepath.Join(work, "applied"), "--cache", cache, "--apply")
	if got.code != 0 {
		t.Fatalf("--apply: exit code %d (%v), want 0", got.code, got.err)
	}
	if diff := cmp.Diff(want, gitIn(t, repo, "diff")); diff != "" {
		t.Errorf("--apply: the checkout's diff (-want +got):\n%s", diff)
	}
	if head := gitIn(t, repo, "rev-list", "--count", "HEAD"); head != "1\n" {
		t.Errorf("--apply committed: %s commits, want 1", head)
	}
	if strings.Contains(got.stdout, "To apply the patch") {
		t.Errorf("--apply: the summary says how to apply the patch it applied")
	}
}

// TestFixApplyKeepsUncommittedWork: --apply takes a checkout with an
// untracked file; when the user edits a file the patch touches during the
// run, it refuses to apply, leaves the edit alone and ends with the
// command that applies the patch.
func TestFixApplyKeepsUncommittedWork(t *testing.T) {
	t.Parallel()
	repo := newCalcRepo(t, nil)
	work := t.TempDir()
	mine := calcBuggy + "\n// my uncommitted note\n"
	edit := func() {
		if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte(mine), 0o644); err != nil {
			t.Error(err)
		}
	}
	fake := newFakeOpenAI(t,
		fakeCall{before: edit, tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "a - b", "new_str": "a + b"}},
		fakeCall{tool: "submit", args: map[string]string{"summary": "fixed"}},
		fakeCall{tool: "submit", args: map[string]string{}},
	)
	writeTree(t, repo, map[string]string{"notes.txt": "mine\n"})
	out := filepath.Join(work, "out dir")
	got := runFixCmd(t, work, fake.environ(), "--repo", repo, "--issue-file", issueFile(t), "--out", out, "--apply")
	if got.code != 1 || !strings.Contains(got.err.Error(), "uncommitted changes in calc.go, which the patch touches") {
		t.Errorf("exit code %d, error %v; want 1 and a refusal naming calc.go", got.code, got.err)
	}
	if !strings.Contains(got.stdout, "note        1 uncommitted change in the checkout is not part of the run") {
		t.Errorf("stdout does not say the uncommitted change is not part of the run")
	}
	if body := readFile(t, filepath.Join(repo, "calc.go")); body != mine {
		t.Errorf("calc.go changed:\n%s\nwant the user's own version", body)
	}
	if p := readFile(t, filepath.Join(out, "patch.diff")); !strings.Contains(p, "+\treturn a + b") {
		t.Errorf("patch.diff lacks the fix:\n%s", p)
	}
	if want := "\nTo apply the patch to your checkout:\n  git -C " + repo + " apply '" + filepath.Join(out, "patch.diff") + "'\n"; !strings.HasSuffix(got.stdout, want) {
		t.Errorf("stdout does not end with the command that applies the patch, %q", want)
	}
}

// TestFixRefusals: what bot fix refuses before any model call — --apply
// on a checkout with uncommitted changes to tracked files, a repository
// without a name (owner/name) — exits 2 with the messages of
// testdata/fix_refusals.golden, and leaves nothing behind.
func TestFixRefusals(t *testing.T) {
	t.Parallel()
	dirty := newCalcRepo(t, nil)
	writeTree(t, dirty, map[string]string{"calc.go": calcFixed, "README.md": "# calc, staged\n", "untracked.txt": "x\n"})
	gitIn(t, dirty, "add", "README.md")
	noOrigin := newCalcRepo(t, nil)
	gitIn(t, noOrigin, "remote", "remove", "origin")
	gitLab := newCalcRepo(t, nil)
	gitIn(t, gitLab, "remote", "set-url", "origin", "https://oauth2:glpat-secret@gitlab.example.com/group/sub/calc.git")
	local := newCalcRepo(t, nil)
	gitIn(t, local, "remote", "set-url", "origin", "/srv/git/calc.git")
	issue := issueFile(t)
	tests := []struct {
		name string
		args []string
	}{
		{"--apply with uncommitted changes", []string{"--repo", dirty, "--issue-file", issue, "--apply"}},
		{"no origin remote", []string{"--repo", noOrigin, "--issue-file", issue}},
		{"origin deeper than owner/name", []string{"--repo", gitLab, "--issue-file", issue}},
		{"origin a local path", []string{"--repo", local, "--issue-file", issue}},
		{"--repo-name not owner/name", []string{"--repo", noOrigin, "--issue-file", issue, "--repo-name", "calc"}},
		{"--repo-name with a recorded task", []string{"--repo", noOrigin, "--replay", "trajectory.jsonl", "--repo-name", "octo/calc"}},
		{"--image not an image reference", []string{"--repo", noOrigin, "--issue-file", issue, "--image", "Golang 1.26"}},
	}
	var b strings.Builder
	for _, tt := range tests {
		fake := newFakeOpenAI(t)
		work := t.TempDir()
		got := runFixCmd(t, work, fake.environ(), tt.args...)
		if got.code != 2 {
			t.Errorf("%s: exit code %d, want 2", tt.name, got.code)
		}
		if n := fake.calls(); n > 0 {
			t.Errorf("%s: the model provider got %d requests, want none", tt.name, n)
		}
		if entries, _ := os.ReadDir(work); len(entries) > 0 {
			t.Errorf("%s: the run left %d files in its working directory", tt.name, len(entries))
		}
		msg := "<nil>"
		if got.err != nil {
			msg = got.err.Error()
		}
		for path, name := range map[string]string{dirty: "$DIRTY", noOrigin: "$NO_ORIGIN", gitLab: "$GITLAB", local: "$LOCAL"} {
			msg = strings.ReplaceAll(msg, path, name)
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", tt.name, msg)
	}
	checkGolden(t, "fix_refusals.golden", b.String())
	if st := gitIn(t, dirty, "status", "--porcelain"); st != "M  README.md\n M calc.go\n?? untracked.txt\n" {
		t.Errorf("the dirty checkout changed:\n%s", st)
	}
}

// checkGolden compares got with testdata/name, which -update rewrites.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
	}
}

// TestFixStepLimit: a run that submits once and then hits the step limit
// ends autosubmitted, exit code 1, with the fix in patch.diff. The step
// limit comes from agent-fix.yml, lowering the operator's; the setup and
// test commands come from the flags, over agent-fix.yml; setup has the
// network, the agent does not. Started inside
// the checkout with the default --out, the run leaves nothing untracked.
// listInterfaces prints the network interfaces a command sees, one a line.
const listInterfaces = `awk 'NR > 2 {print $1}' /proc/net/dev`

func TestFixStepLimit(t *testing.T) {
	t.Parallel()
	repo := newCalcRepo(t, map[string]string{".github/agent-fix.yml": "test: exit 3\nsetup: [exit 3]\nmax_steps: 3\n"})
	fake := newFakeOpenAI(t,
		fakeCall{tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "a - b", "new_str": "a + b"}},
		fakeCall{tool: "submit", args: map[string]string{"summary": "fixed"}},
		fakeCall{tool: "bash", args: map[string]string{"command": "cat $HOME/setup-net; echo agent; " + listInterfaces}},
	)
	got := runFixCmd(t, repo, append(fake.environ(), "AGENTFIX_MAX_STEPS=10"),
		"--repo", ".", "--issue-file", issueFile(t), "--setup", listInterfaces+" > $HOME/setup-net", "--test", "grep -q 'a + b' calc.go",
		"--repo-name", "me/calc-fork")
	if got.code != 1 {
		t.Fatalf("exit code %d (%v), want 1", got.code, got.err)
	}
	outs, _ := filepath.Glob(filepath.Join(repo, "agentfix-runs", "*", "trajectory.jsonl"))
	if len(outs) != 1 {
		t.Fatalf("agentfix-runs/*/trajectory.jsonl in the working directory: %q, want one", outs)
	}
	out := filepath.Dir(outs[0])
	if st := gitIn(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the run left files in the checkout it started in:\n%s", st)
	}
	if want := "bot fix: the run ended autosubmitted: limits_exceeded: step limit reached: 3 of 3 steps"; got.err.Error() != want {
		t.Errorf("error %q, want %q", got.err, want)
	}
	traj := readTrajectory(t, filepath.Join(out, "trajectory.jsonl"))
	if traj.Result.Status != agent.Autosubmitted || traj.Result.Cause != agent.LimitsExceeded {
		t.Errorf("result %s (cause %s), want autosubmitted after limits_exceeded", traj.Result.Status, traj.Result.Cause)
	}
	if p := readFile(t, filepath.Join(out, "patch.diff")); !strings.Contains(p, "+\treturn a + b") {
		t.Errorf("patch.diff lacks the fix:\n%s", p)
	}
	reqs := fake.requests()
	if !told(reqs[:1], "Fix this issue in the repository me/calc-fork.") {
		t.Errorf("the model was not told the repository's name of --repo-name, me/calc-fork")
	}
	if got := reqs[2].lastContent(); !strings.Contains(got, "`grep -q 'a + b' calc.go` passed") {
		t.Errorf("the review lacks the --test command's result:\n%s", got)
	}
	// The setup command had a network namespace of its own (loopback and
	// slirp4netns's tap, never this machine's interfaces); the agent's
	// commands see only loopback.
	if want := "lo:\ntap0:\nagent\nlo:\n"; len(traj.Steps) == 3 && !strings.Contains(traj.Steps[2].Observations[0].Output, want) {
		t.Errorf("network interfaces of the --setup command, then of the agent:\n%s\nwant:\n%s", traj.Steps[2].Observations[0].Output, want)
	}
}

func TestFixUsageErrors(t *testing.T) {
	t.Parallel()
	repo := newCalcRepo(t, nil)
	badConfig := newCalcRepo(t, map[string]string{".github/agent-fix.yml": "tset: go test ./...\n"})
	issue := issueFile(t)
	notRepo := t.TempDir()
	used := t.TempDir()
	writeTree(t, used, map[string]string{"trajectory.jsonl": "{}\n"})
	fake := []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=http://127.0.0.1:1/v1"}
	withModel := append([]string{"AGENTFIX_MODEL=openai/gpt-5"}, fake...)
	tests := []struct {
		name    string
		environ []string
		args    []string
		want    string
	}{
		{"no flags", withModel, nil, "bot fix: --repo DIR and --issue-file FILE required"},
		{"unknown flag", withModel, []string{"--repo", repo, "--issue-file", issue, "--yes"}, "flag provided but not defined: -yes"},
		{"missing issue file", withModel, []string{"--repo", repo, "--issue-file", "missing.md"}, "--issue-file: stat "},
		{"not a repository", withModel, []string{"--repo", notRepo, "--issue-file", issue}, "is not a git repository"},
		{"unknown sandbox", withModel, []string{"--repo", repo, "--issue-file", issue, "--sandbox", "chroot"}, `sandbox "chroot": unknown; valid sandboxes: bwrap, docker, none`},
		{"none without opt-in", withModel, []string{"--repo", repo, "--issue-file", issue, "--sandbox", "none"}, "set AGENTFIX_ALLOW_UNSANDBOXED=true to allow it"},
		{"docker without image", withModel, []string{"--repo", repo, "--issue-file", issue, "--sandbox", "docker"}, "the docker sandbox needs --image IMAGE"},
		{"no model", fake, []string{"--repo", repo, "--issue-file", issue}, "AGENTFIX_MODEL: required"},
		{"unknown provider", fake, []string{"--repo", repo, "--issue-file", issue, "--model", "mistral/large"}, `model "mistral/large": want provider/model with provider one of anthropic/MODEL, openai/MODEL`},
		{"unpriced model", fake, []string{"--repo", repo, "--issue-file", issue, "--model", "openai/my-finetune"}, "set allow_unpriced_model: true"},
		{"no API key", nil, []string{"--repo", repo, "--issue-file", issue, "--model", "openai/gpt-5"}, "no API key: set OPENAI_API_KEY"},
		{"no Anthropic key", nil, []string{"--repo", repo, "--issue-file", issue, "--model", "anthropic/claude-sonnet-4-5"}, "no API key: set ANTHROPIC_API_KEY"},
		{"model and replay", withModel, []string{"--repo", repo, "--replay", "t.jsonl", "--model", "openai/gpt-5"}, "--model and --replay exclude each other"},
		{"missing replay", nil, []string{"--repo", repo, "--replay", "missing.jsonl"}, "--replay: open "},
		{"used output directory", withModel, []string{"--repo", repo, "--issue-file", issue, "--out", used}, "already holds trajectory.jsonl of another run"},
		{"bad agent-fix.yml", withModel, []string{"--repo", badConfig, "--issue-file", issue}, "invalid configuration at HEAD "},
		{"bad agent-fix.yml names the key", withModel, []string{"--repo", badConfig, "--issue-file", issue}, ".github/agent-fix.yml:1: tset: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runFixCmd(t, t.TempDir(), tt.environ, tt.args...)
			if got.code != 2 {
				t.Errorf("exit code %d, want 2", got.code)
			}
			if got.err == nil || !strings.Contains(got.err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", got.err, tt.want)
			}
		})
	}
}

// TestBotProcess is not a test: TestFixInterrupt runs the test binary
// again with BOT_TEST_PROCESS=1 to run main with the arguments after "--",
// as the bot binary would.
func TestBotProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("BOT_TEST_PROCESS") != "1" {
		t.Skip("runs only as the bot process of TestFixInterrupt")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"bot"}, os.Args[i+1:]...)
			break
		}
	}
	main()
}

// TestFixInterrupt sends SIGINT to a bot fix process while the model
// thinks: the run ends cancelled, the process exits 1, and the trajectory
// and the diff the agent left are written.
func TestFixInterrupt(t *testing.T) {
	t.Parallel()
	repo := newCalcRepo(t, nil)
	work := t.TempDir()
	started := make(chan *os.Process, 1)
	interrupt := func() {
		p := <-started
		if err := p.Signal(os.Interrupt); err != nil {
			t.Errorf("send SIGINT: %v", err)
		}
	}
	fake := newFakeOpenAI(t,
		fakeCall{tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "a - b", "new_str": "a + b"}},
		fakeCall{before: interrupt, block: true},
	)
	out := filepath.Join(work, "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBotProcess$", "--", "fix", "--repo", repo, "--issue-file", issueFile(t), "--out", out)
	cmd.Dir = work
	cmd.Env = append(append([]string{"BOT_TEST_PROCESS=1", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, testGitEnv...), fake.environ()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started <- cmd.Process
	err := cmd.Wait()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("exit code %d (%v), want 1", cmd.ProcessState.ExitCode(), err)
	}
	if got := stderr.String(); !strings.Contains(got, "bot fix: the run ended cancelled") {
		t.Errorf("stderr lacks the end of the run:\n%s", got)
	}
	traj := readTrajectory(t, filepath.Join(out, "trajectory.jsonl"))
	if traj.Result.Status != agent.Cancelled {
		t.Errorf("result %s, want cancelled", traj.Result.Status)
	}
	if p := readFile(t, filepath.Join(out, "patch.diff")); !strings.Contains(p, "+\treturn a + b") {
		t.Errorf("patch.diff lacks the diff the agent left:\n%s", p)
	}
	if !strings.Contains(stdout.String(), "(1 file changed, not submitted)") {
		t.Errorf("the summary does not say the patch was not submitted")
	}
}
