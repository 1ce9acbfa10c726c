package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/devcontainer"
	"github.com/agentfix/agentfix/rootfs"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// fakeImages serves roots of a directory by reference, or an error, and
// records what was asked.
type fakeImages struct {
	dir   string
	err   error
	asked []string
}

func (f *fakeImages) Get(_ context.Context, image string) (*rootfs.Root, error) {
	f.asked = append(f.asked, image)
	if f.err != nil {
		return nil, f.err
	}
	return &rootfs.Root{Dir: f.dir, Image: image, Repository: "registry.example/" + image, Digest: "sha256:0123",
		Env: []string{"PATH=/opt/tool/bin:/usr/bin:/bin", "TOOL_HOME=/opt/tool"}}, nil
}

// recordingSandbox records the options of the sandboxes a run builds and
// the scripts they run, and runs nothing.
type recordingSandbox struct {
	opts    []workspace.Options
	scripts []string
}

func (r *recordingSandbox) factory(o workspace.Options) (tools.Sandbox, error) {
	r.opts = append(r.opts, o)
	return r, nil
}

func (r *recordingSandbox) Run(_ context.Context, c workspace.Command) (workspace.Result, error) {
	r.scripts = append(r.scripts, c.Script)
	return workspace.Result{}, nil
}

func TestRunInTheChosenImage(t *testing.T) {
	t.Parallel()
	dc, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{
		"image": "dev:1",
		"onCreateCommand": "make tools",
		"containerEnv": {"TOOL_MODE": "ci"},
		"postStartCommand": "never"
	}`), workspace.WorkspaceDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		settings    Settings
		override    string
		wantImage   string
		wantSetup   []string
		wantEnv     string
		description string
	}{
		{name: "the devcontainer's image, setup and environment", settings: Settings{Devcontainer: dc, Setup: []string{"make deps"}},
			wantImage: "dev:1", wantSetup: []string{"make tools", "make deps"}, wantEnv: "TOOL_MODE=ci",
			description: "image `dev:1` (`registry.example/dev:1@sha256:0123`), named in `.devcontainer/devcontainer.json`"},
		{name: "agent-fix.yml's image over the devcontainer", settings: Settings{Image: "repo:2", Devcontainer: dc, Setup: []string{"make deps"}},
			wantImage: "repo:2", wantSetup: []string{"make deps"},
			description: "image `repo:2` (`registry.example/repo:2@sha256:0123`), named in `.github/agent-fix.yml`"},
		{name: "an override over all", settings: Settings{Image: "repo:2", Devcontainer: dc}, override: "mine:3",
			wantImage: "mine:3", description: "image `mine:3` (`registry.example/mine:3@sha256:0123`), named for this run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := workTree(t, newRepo(t, map[string]string{"a.txt": "a\n"}))
			images := &fakeImages{dir: t.TempDir()}
			sb := &recordingSandbox{}
			var seen []Environment
			tc.settings.Limits = agent.Config{MaxSteps: 2}
			res, err := Run(context.Background(), Options{
				WorkTree: wt, Sandbox: sb.factory, Model: llm.NewScripted("none", false, call("1", "submit", map[string]string{"summary": "s"}), call("2", "submit", map[string]string{})),
				Images: images, OperatorImage: "ops:9", ImageOverride: tc.override, Settings: tc.settings,
				Task:  agent.Task{Repo: "octo/calc", Title: "t"},
				Hooks: Hooks{OnEnvironment: func(_ context.Context, e Environment) { seen = append(seen, e) }},
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantImage}, images.asked); diff != "" {
				t.Errorf("images pulled (-want +got):\n%s", diff)
			}
			if len(sb.opts) == 0 || sb.opts[0].Image == nil {
				t.Fatalf("sandbox options = %+v, want the image's root", sb.opts)
			}
			img := sb.opts[0].Image
			if img.Root != images.dir || !strings.HasSuffix(img.Layer, "/layer") || img.Env[0] != "PATH=/opt/tool/bin:/usr/bin:/bin" {
				t.Errorf("image = %+v", img)
			}
			if tc.wantEnv != "" && !strings.Contains(strings.Join(img.Env, "\n"), tc.wantEnv) {
				t.Errorf("environment %q lacks %q", img.Env, tc.wantEnv)
			}
			if diff := cmp.Diff(tc.wantSetup, sb.scripts[:len(tc.wantSetup)]); diff != "" {
				t.Errorf("setup commands (-want +got):\n%s", diff)
			}
			if len(seen) != 1 || seen[0].Description != tc.description || res.Environment.Description != tc.description {
				t.Errorf("environment seen %+v, result %+v; want %q", seen, res.Environment, tc.description)
			}
		})
	}
}

func TestRunImageRefusedBeforeTheModel(t *testing.T) {
	t.Parallel()
	wt := workTree(t, newRepo(t, map[string]string{"a.txt": "a\n"}))
	refused := errors.New("registry.example/private:1: refused: the registry wants credentials (UNAUTHORIZED)")
	sb := &recordingSandbox{}
	model := llm.NewScripted("never", false)
	_, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: sb.factory, Model: model, Images: &fakeImages{err: refused},
		Settings: Settings{Image: "registry.example/private:1"}, Task: agent.Task{Repo: "octo/calc", Title: "t"},
	})
	var ee *EnvironmentError
	if !errors.As(err, &ee) || !errors.Is(err, refused) || ee.Where() != "named in .github/agent-fix.yml" {
		t.Fatalf("Run error = %v, want an EnvironmentError naming the image and the registry's answer", err)
	}
	if len(sb.opts) != 0 {
		t.Error("a sandbox was built for an image that cannot be used")
	}
	if n := len(model.Calls()); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}

func TestRunWithoutAnImage(t *testing.T) {
	t.Parallel()
	wt := workTree(t, newRepo(t, map[string]string{"a.txt": "a\n"}))
	for _, tc := range []struct {
		name     string
		images   Images
		operator string
		wantRef  string
	}{
		{"the worker's own root", &fakeImages{}, "", ""},
		{"a sandbox that pulls itself gets the reference", nil, "ops:9", "ops:9"},
	} {
		sb := &recordingSandbox{}
		res, err := Run(context.Background(), Options{
			WorkTree: wt, Sandbox: sb.factory, Model: llm.NewScripted("none", false, call("1", "submit", map[string]string{"summary": "s"}), call("2", "submit", map[string]string{})),
			Images: tc.images, OperatorImage: tc.operator, Settings: Settings{Limits: agent.Config{MaxSteps: 2}}, Task: agent.Task{Repo: "octo/calc", Title: "t"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if o := sb.opts[0]; o.Image != nil || o.DockerImage != tc.wantRef {
			t.Errorf("%s: sandbox options image %q, root %+v; want %q and no root", tc.name, o.DockerImage, o.Image, tc.wantRef)
		}
		if tc.wantRef == "" && res.Environment.Description != "the worker's own system (no image named)" {
			t.Errorf("%s: environment %+v", tc.name, res.Environment)
		}
	}
}

// TestRunNoImages: on a sandbox that runs no images (none), a run whose
// repository names one runs on the worker's own system, without the
// devcontainer's commands, and its environment says which image was not
// used and why.
func TestRunNoImages(t *testing.T) {
	t.Parallel()
	dc, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{"image": "dev:1", "onCreateCommand": "make tools"}`), workspace.WorkspaceDir)
	if err != nil {
		t.Fatal(err)
	}
	wt := workTree(t, newRepo(t, map[string]string{"a.txt": "a\n"}))
	sb := &recordingSandbox{}
	res, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: sb.factory, Model: llm.NewScripted("none", false, call("1", "submit", map[string]string{"summary": "s"}), call("2", "submit", map[string]string{})),
		Images:   NoImages{Why: "the none sandbox runs commands on this machine"},
		Settings: Settings{Devcontainer: dc, Setup: []string{"make deps"}, Limits: agent.Config{MaxSteps: 2}}, Task: agent.Task{Repo: "octo/calc", Title: "t"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := sb.opts[0]; o.Image != nil || o.DockerImage != "" {
		t.Errorf("sandbox options image %q, root %+v; want none", o.DockerImage, o.Image)
	}
	if len(sb.scripts) == 0 || sb.scripts[0] != "make deps" {
		t.Errorf("commands = %q, want the repository's setup first, not the devcontainer's", sb.scripts)
	}
	env := res.Environment
	want := "the image `dev:1` (named in .devcontainer/devcontainer.json) is not used: the none sandbox runs commands on this machine"
	if env.Source != devcontainer.SourceWorker || env.Description != "the worker's own system (the none sandbox runs commands on this machine)" || !slices.Contains(env.Notes, want) {
		t.Errorf("environment = %+v, want the worker's own system with the note %q", env, want)
	}
}

// TestVerdictCannotBeForged is the red team's second finding: the agent
// leaves what would make the test command pass — a file in its HOME (as
// `go env -w GOFLAGS=-run=^NONE$` or ~/.npmrc would), an ignored file in
// the working copy (as node_modules would) — and makes a change that
// fixes nothing; the verdict runs over a clean checkout of the change with
// a fresh HOME, so it still fails.
func TestVerdictCannotBeForged(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{
		"calc.sh":    "echo $((2 - 2))\n",
		".gitignore": "deps/\n",
		"test.sh":    "[ -f \"$HOME/.forged\" ] && exit 0\n[ -f deps/forged ] && exit 0\ntest \"$(sh calc.sh)\" = 4\n",
	})
	wt := workTree(t, repo)
	model := llm.NewScripted("forge", false,
		call("1", "bash", map[string]string{"command": "touch $HOME/.forged && mkdir -p deps && touch deps/forged && sh test.sh && echo passes-here"}),
		call("2", "str_replace_editor", map[string]string{"command": "str_replace", "path": "calc.sh", "old_str": "echo $((2 - 2))", "new_str": "# fixed\necho $((2 - 2))"}),
		call("3", "submit", map[string]string{"summary": "Fixed."}),
		call("4", "submit", map[string]string{}),
	)
	var first string
	res, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: bwrap, Model: model,
		Settings: Settings{Test: "sh test.sh", Limits: agent.Config{MaxSteps: 10}},
		Task:     agent.Task{Repo: "octo/calc", Title: "2+2 is 0"},
		Hooks: Hooks{Agent: []agent.Hooks{{OnStepDone: func(_ context.Context, s agent.Step) error {
			if s.Step == 1 && len(s.Observations) > 0 {
				first = s.Observations[0].Output
			}
			return nil
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, "passes-here") {
		t.Fatalf("the forgery did not even work in the agent's sandbox: %q", first)
	}
	if res.Review.Test == nil || !res.Review.TestFailed() {
		t.Errorf("review = %+v: the forged files made the verdict pass", res.Review)
	}
}

// countingCache is a SetupCache that counts the saves it passes on.
type countingCache struct {
	SetupCache
	saves int
}

func (c *countingCache) Save(ctx context.Context, repo, key, src string) error {
	c.saves++
	return c.SetupCache.Save(ctx, repo, key, src)
}

// TestRunWarmSetupCaches: the first run of a repository saves what setup
// left in HOME; the second starts from a copy of it, says so, and saves
// nothing again (the entry it restored is the same key's).
func TestRunWarmSetupCaches(t *testing.T) {
	t.Parallel()
	store, err := setupcache.New(setupcache.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cache := &countingCache{SetupCache: store}
	repo := newRepo(t, map[string]string{"go.sum": "example.com/m v1.0.0 h1:x=\n"})
	var reviews []string // what the first step's cat showed, per run
	for i, want := range []string{"cold", "warm"} {
		res, err := Run(context.Background(), Options{
			WorkTree: workTree(t, repo), Sandbox: bwrap, SetupCache: cache,
			Model: llm.NewScripted("none", false, call("1", "bash", map[string]string{"command": "cat $HOME/seen"}),
				call("2", "submit", map[string]string{"summary": "s"}), call("3", "submit", map[string]string{})),
			Settings: Settings{Setup: []string{`if [ -f "$HOME/warm" ]; then echo warm > "$HOME/seen"; else echo cold > "$HOME/seen"; fi; touch "$HOME/warm"`},
				SaveSetupCache: true, Limits: agent.Config{MaxSteps: 5}},
			Task: agent.Task{Repo: "octo/calc", Title: "t"},
			Hooks: Hooks{Agent: []agent.Hooks{{OnStepDone: func(_ context.Context, s agent.Step) error {
				if s.Step == 1 && len(s.Observations) == 1 {
					reviews = append(reviews, s.Observations[0].Output)
				}
				return nil
			}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Environment.WarmCaches != (want == "warm") || !strings.Contains(reviews[i], want) {
			t.Errorf("run %d: warm %v, HOME said %q; want %s", i+1, res.Environment.WarmCaches, reviews[i], want)
		}
		if cache.saves != 1 {
			t.Errorf("after run %d: %d saves, want the first run's one", i+1, cache.saves)
		}
	}
}

func TestLazyImages(t *testing.T) {
	t.Parallel()
	inner := &fakeImages{err: errors.New("not in this test")}
	opened := 0
	lazy := LazyImages(func() (Images, error) { opened++; return inner, nil })
	if opened != 0 {
		t.Fatal("LazyImages opened the cache before any image was named")
	}
	for _, ref := range []string{"a:1", "b:2"} {
		lazy.Get(t.Context(), ref)
	}
	if opened != 1 || !slices.Equal(inner.asked, []string{"a:1", "b:2"}) {
		t.Errorf("opened %d times, asked %q; want once, both images", opened, inner.asked)
	}

	refused := LazyImages(func() (Images, error) { opened++; return nil, errors.New("data dir read-only") })
	for range 2 {
		if _, err := refused.Get(t.Context(), "a:1"); err == nil || err.Error() != "data dir read-only" {
			t.Errorf("Get = %v, want the open error", err)
		}
	}
	if opened != 2 {
		t.Errorf("a failed open was tried %d times, want once", opened-1)
	}
}
