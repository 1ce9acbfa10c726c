package devcontainer_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/devcontainer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// imageEnv is the environment rootfs would give for the image.
var imageEnv = []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=/home/dev", "GOFLAGS=-buildvcs=false"}

// render writes what Load made of a repository, for people to review.
func render(c *devcontainer.Config, err error) string {
	var b strings.Builder
	var u *devcontainer.UnsupportedError
	switch {
	case errors.As(err, &u):
		fmt.Fprintf(&b, "unsupported: %s\n", err)
		return b.String()
	case err != nil:
		fmt.Fprintf(&b, "error: %s\n", err)
		return b.String()
	case c == nil:
		return "no dev container\n"
	}
	fmt.Fprintf(&b, "file: %s\nimage: %s\n", c.Path, c.Image)
	b.WriteString("setup:\n")
	for _, cmd := range c.Setup {
		name := cmd.Phase
		if cmd.Name != "" {
			name += "[" + cmd.Name + "]"
		}
		fmt.Fprintf(&b, "  %s: %s\n", name, cmd.Shell)
	}
	b.WriteString("environment:\n")
	for _, e := range c.Environ(imageEnv) {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	b.WriteString("notes:\n")
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	return b.String()
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestVariants loads each repository under testdata/variants and compares
// what came of it with testdata/variants/NAME.golden.
func TestVariants(t *testing.T) {
	// The worker's own environment must never show: a secret the test
	// puts there is looked for in every output.
	t.Setenv("GITHUB_TOKEN", "ghs_worker_secret")
	t.Setenv("MISSING", "worker-value")
	dirs, err := os.ReadDir("testdata/variants")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		t.Run(d.Name(), func(t *testing.T) {
			c, err := devcontainer.Load(filepath.Join("testdata/variants", d.Name()), "/workspace")
			got := render(c, err)
			for _, secret := range []string{"ghs_worker_secret", "worker-value", os.Getenv("HOME")} {
				if secret != "" && strings.Contains(got, "="+secret) {
					t.Errorf("the worker's environment leaked (%q):\n%s", secret, got)
				}
			}
			checkGolden(t, filepath.Join("testdata/variants", d.Name()+".golden"), got)
		})
	}
	if n < 10 {
		t.Fatalf("found %d variants", n)
	}
}

func TestLoadDoesNotFollowLinksOutOfTheRepository(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"image": "stolen:1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".devcontainer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, ".devcontainer", "devcontainer.json")); err != nil {
		t.Fatal(err)
	}
	c, err := devcontainer.Load(repo, "/workspace")
	if err == nil {
		t.Fatalf("Load followed a link out of the repository: image %q", c.Image)
	}
}

func TestLoadRefusesHugeFiles(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	big := `{"image": "x", "name": "` + strings.Repeat("a", 1<<20) + `"}`
	if err := os.WriteFile(filepath.Join(repo, ".devcontainer.json"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := devcontainer.Load(repo, "/workspace"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load of a 1 MiB file: %v; want an error saying it is too large", err)
	}
}

func TestShellQuotingRunsTheSameArgv(t *testing.T) {
	t.Parallel()
	argv := []string{"printf", "%s|", "plain", "two words", "it's", `"double"`, "$HOME", "*", "", "a\nb", "back\\slash"}
	raw := `{"image": "x", "postCreateCommand": [`
	for i, a := range argv {
		if i > 0 {
			raw += ","
		}
		raw += fmt.Sprintf("%q", a)
	}
	raw += "]}"
	c, err := devcontainer.Parse(".devcontainer.json", []byte(raw), "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runShell(t, c.Setup[0].Shell)
	if err != nil {
		t.Fatalf("sh -c %q: %v", c.Setup[0].Shell, err)
	}
	want := strings.Join(argv[2:], "|") + "|"
	if out != want {
		t.Errorf("sh -c %q printed %q, want %q", c.Setup[0].Shell, out, want)
	}
}

func runShell(t *testing.T, line string) (string, error) {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", line).Output()
	return string(out), err
}
