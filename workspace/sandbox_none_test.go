package workspace

import (
	"strings"
	"testing"
)

func TestNoneNeedsExplicitPermission(t *testing.T) {
	_, err := NewNone(testOptions(t))
	if err == nil || !strings.Contains(err.Error(), "AGENTFIX_ALLOW_UNSANDBOXED=true") {
		t.Errorf("NewNone without AllowUnsandboxed: err = %v, want one naming AGENTFIX_ALLOW_UNSANDBOXED=true", err)
	}
}

func TestNoneRuns(t *testing.T) {
	t.Setenv("AGENTFIX_TEST_GITHUB_TOKEN", "ghs_noneFakeToken")
	o := testOptions(t)
	o.AllowUnsandboxed = true
	n, err := NewNone(o)
	if err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, n, Command{Script: `pwd; echo "$HOME"; env | grep -c noneFake; exit 4`})
	want := o.Workspace + "\n" + o.Cache + "\n0\n"
	if res.Output != want || res.ExitCode != 4 {
		t.Errorf("got %q exit %d, want %q exit 4", res.Output, res.ExitCode, want)
	}
}
