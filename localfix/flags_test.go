package localfix

import (
	"errors"
	"testing"
)

// TestCheckFlags: what bot fix's command line lacks or combines wrongly is
// a usage error saying which flags; a complete one passes.
func TestCheckFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" for none
	}{
		{"complete", Options{Repo: "r", IssueFile: "i.md"}, ""},
		{"replay without an issue", Options{Repo: "r", Replay: "t.jsonl"}, ""},
		{"nothing", Options{}, "bot fix: --repo DIR and --issue-file FILE required (bot fix -h for help)"},
		{"no issue", Options{Repo: "r"}, "bot fix: --issue-file FILE required (bot fix -h for help)"},
		{"model and replay", Options{Repo: "r", Replay: "t.jsonl", Model: "openai/x"}, "bot fix: --model and --replay exclude each other: a replay plays the recorded model's replies"},
		{"repo name of a replay", Options{Repo: "r", Replay: "t.jsonl", RepoName: "o/n"}, "bot fix: --repo-name names the repository of --issue-file's task; a replay without --issue-file keeps the recorded task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.o.CheckFlags()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckFlags = %v, want nil", err)
				}
				return
			}
			var ue UsageError
			if !errors.As(err, &ue) || err.Error() != tc.want {
				t.Errorf("CheckFlags = %v (%T), want the usage error %q", err, err, tc.want)
			}
		})
	}
}
