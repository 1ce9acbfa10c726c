package workspace

import (
	"context"
	"os"
	"testing"
)

// BenchmarkBwrapNetwork measures one `true` in bwrap: as a setup command
// in its own network namespace with slirp4netns (now), against the same
// with the host's network (--share-net, as before), and the agent's
// commands (no network) with and without the seccomp filter and
// --disable-userns.
func BenchmarkBwrapNetwork(b *testing.B) {
	o := Options{Workspace: b.TempDir(), Cache: b.TempDir()}
	bw, err := NewBwrap(o)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// before runs c with bwrap's arguments of before this change: extra
	// after the mounts, no seccomp filter, no nested user namespace.
	before := func(b *testing.B, extra []string) {
		status, err := os.CreateTemp("", "agentfix-bench-status-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.Remove(status.Name())
		defer status.Close()
		argv := append(prlimitArgs(bw.prlimit, bw.opts.Limits, nil), bw.args(Command{Script: "true"}, extra)...)
		res, err := runProcess(ctx, process{argv: argv, env: sandboxEnv(CacheDir, bw.pathDir, true, nil), dir: o.Workspace,
			extraFiles: []*os.File{status}}, DefaultTimeout, DefaultOutputLimit)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	now := func(b *testing.B, network bool) {
		res, err := bw.Run(ctx, Command{Script: "true", Network: network})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	b.Run("setup/share-net-before", func(b *testing.B) {
		for b.Loop() {
			before(b, []string{"--share-net"})
		}
	})
	b.Run("setup/netns-slirp4netns", func(b *testing.B) {
		for b.Loop() {
			now(b, true)
		}
	})
	b.Run("agent/before", func(b *testing.B) {
		for b.Loop() {
			before(b, nil)
		}
	})
	b.Run("agent/seccomp-disable-userns", func(b *testing.B) {
		for b.Loop() {
			now(b, false)
		}
	})
}
