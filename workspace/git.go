package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/proc"
)

// ErrOutputTooLarge is wrapped when a git command prints more than the
// caller allowed (a diff over WorkTreeOptions.MaxDiffBytes).
var ErrOutputTooLarge = errors.New("output too large")

// gitSafetyConfig is passed to every git command the worker runs, so
// nothing configured in a repository runs or reads the working copy behind
// the worker's back: no hooks, no fsmonitor daemon or hook, no untracked
// cache written by someone else, and protocol v2, which lets a fetch ask for
// a commit by id.
var gitSafetyConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "protocol.version=2",
}

// gitRunner runs the worker's own git commands: an explicit git dir (and
// work tree), no system or global configuration, an empty HOME, no prompt,
// a timeout, capped output, and the process group killed on cancel.
type gitRunner struct {
	// gitDir and workTree are passed as --git-dir and --work-tree when set.
	gitDir, workTree string
	// home is an empty directory used as HOME and XDG_CONFIG_HOME.
	home    string
	timeout time.Duration
}

// gitStderrLimit bounds the stderr kept for error messages.
const gitStderrLimit = 8 << 10

// run runs git with args, stdin as its input, and returns stdout. Output
// over maxOut bytes is an error wrapping ErrOutputTooLarge.
func (g gitRunner) run(ctx context.Context, stdin []byte, maxOut int64, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd, stdout, stderr := g.command(ctx, maxOut, env, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := g.result(ctx, cmd.Run(), stdout, stderr, args); err != nil {
		return nil, err
	}
	return stdout.Bytes(), nil
}

// command returns git with args, ready to start: its stdout into a buffer
// keeping up to maxOut bytes, its stderr into a head+tail buffer, in its own
// process group, which is killed when ctx ends.
func (g gitRunner) command(ctx context.Context, maxOut int64, env []string, args ...string) (*exec.Cmd, *limitedBuffer, *HeadTail) {
	var full []string
	if g.gitDir != "" {
		full = append(full, "--git-dir="+g.gitDir)
	}
	if g.workTree != "" {
		full = append(full, "--work-tree="+g.workTree)
	}
	full = append(append(full, gitSafetyConfig...), args...)
	cmd := proc.Command(ctx, nil, append([]string{"git"}, full...)...)
	cmd.Env = append(g.env(), env...)
	cmd.Dir = g.home
	if g.workTree != "" {
		cmd.Dir = g.workTree
	}
	stdout := &limitedBuffer{max: maxOut}
	stderr := NewHeadTail(gitStderrLimit)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	return cmd, stdout, stderr
}

// result turns the outcome of a git command ended with err into the
// caller's error: too much output, or the command and what it printed on
// stderr.
func (g gitRunner) result(ctx context.Context, err error, stdout *limitedBuffer, stderr *HeadTail, args []string) error {
	if stdout.over {
		return fmt.Errorf("git %s: %w (more than %d bytes)", args[0], ErrOutputTooLarge, stdout.max)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// text runs git and returns its output without the final newline.
func (g gitRunner) text(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, 1<<20, nil, args...)
	return strings.TrimSuffix(string(out), "\n"), err
}

// env is git's whole environment: nothing of the worker's but PATH.
func (g gitRunner) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}
}

// limitedBuffer keeps up to max bytes and notes when more arrived. It has
// no ReadFrom, so io.Copy goes through Write.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - int64(b.buf.Len()); int64(len(p)) > room {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes returns what was kept.
func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }
