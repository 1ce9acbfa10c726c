package deploy_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binaryBudget is the most bytes the release build of the bot may take
// (issue 10; BENCHMARKS.md, "Binary size").
const binaryBudget = 60_000_000

// TestReleaseBinary builds cmd/bot as deploy/Dockerfile's release build
// does (no cgo, -trimpath, stripped) and checks it against its budget, and
// that nothing in it looks a method up by a name known only at run time
// (reflect's MethodByName, as the standard library's text/template does
// for a template's fields): the linker marks such a function
// <ReflectMethod> in its -dumpdep output, and one is enough to keep every
// exported method of every type in the binary, 16 MB of it. The project's
// templates run on DataDog's copy of the engine, which calls no methods.
func TestReleaseBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot")
	}
	out := filepath.Join(t.TempDir(), "bot")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags=-s -w -dumpdep", "-o", out, "./cmd/bot")
	cmd.Dir = repoRoot
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	setProcessGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// -dumpdep writes every edge of the link's call graph (36 MB): read
	// it as it comes, keeping the lines that matter and the last few.
	var reflective, other []string
	var tail bytes.Buffer
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "<ReflectMethod>"):
			if len(reflective) < 20 {
				reflective = append(reflective, line)
			}
		case !strings.Contains(line, " -> "):
			other = append(other, line) // not an edge: the build's own errors
		}
	}
	if err := cmd.Wait(); err != nil {
		tail.WriteString(strings.Join(other, "\n"))
		t.Fatalf("go build ./cmd/bot: %v\n%s", err, tail.String())
	}
	if len(reflective) > 0 {
		t.Errorf("the binary looks methods up by name, so the linker keeps them all; the callers (the first 20 edges):\n%s", strings.Join(reflective, "\n"))
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > binaryBudget {
		t.Errorf("the release build is %d bytes, over its budget of %d (BENCHMARKS.md, \"Binary size\", says what each part costs)", fi.Size(), binaryBudget)
	}
	t.Logf("release build: %d bytes", fi.Size())
}
