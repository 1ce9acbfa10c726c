package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildProbe builds testdata/probe into dir (the working copy of a
// sandbox, so the sandbox runs it as /workspace/probe).
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, msg)
	}
	return out
}
