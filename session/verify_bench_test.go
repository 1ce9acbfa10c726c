package session

import (
	"context"
	"testing"

	"github.com/agentfix/agentfix/workspace"
)

// BenchmarkTestCommand is the cost of the verdict's fresh sandbox: the
// repository's test command run in the agent's own sandbox (as before
// issue 11) against the verifier's run of it over a clean checkout of the
// change, with a copy of the caches setup left (10 MiB here), which is
// what the review and the pull request now rely on.
func BenchmarkTestCommand(b *testing.B) {
	files := map[string]string{"calc.sh": "echo $((2 + 2))\n", "test.sh": "test \"$(sh calc.sh)\" = 4\n"}
	for i := range 200 {
		files["src/f"+string(rune('a'+i%26))+string(rune('a'+i/26))+".txt"] = "a file of the repository\n"
	}
	repo := newRepo(b, files)
	wt, err := workspace.NewWorkTreeFromRepo(context.Background(), repo, workspace.WorkTreeOptions{Dir: b.TempDir() + "/job"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wt.Remove() })
	ctx := context.Background()
	o := Options{WorkTree: wt, Sandbox: bwrap, ScratchDir: b.TempDir(), Settings: Settings{Test: "sh test.sh"}}
	o.env = &environment{}
	sb, err := bwrap(o.sandboxOptions(wt.Dir(), wt.CacheDir(), false))
	if err != nil {
		b.Fatal(err)
	}
	if res, err := sb.Run(ctx, workspace.Command{Script: "head -c 10485760 /dev/urandom > $HOME/cache.bin"}); err != nil || res.ExitCode != 0 {
		b.Fatalf("fill the cache: %v %+v", err, res)
	}
	diff := "diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-echo $((2 + 2))\n+echo $((4 + 0))\n"
	b.Run("agent's sandbox", func(b *testing.B) {
		for b.Loop() {
			if res, err := sb.Run(ctx, workspace.Command{Script: "sh test.sh"}); err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("fresh checkout and sandbox", func(b *testing.B) {
		v, err := newVerifier(ctx, o, wt)
		if err != nil {
			b.Fatal(err)
		}
		defer v.close()
		for b.Loop() {
			res, _, err := v.run(ctx, diff, "sh test.sh")
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}
