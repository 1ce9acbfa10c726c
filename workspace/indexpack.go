package workspace

import (
	"context"
	"io"

	"github.com/go-git/go-git/v5/storage/filesystem"
)

// packStorage is a cached repository's go-git storage as a fetch sees it,
// with one change: the pack the server sends is indexed by `git
// index-pack` instead of go-git's pack parser. go-git still does the whole
// network side in process (negotiation, the token, the transfer) and
// updates the references; only the received bytes go through a pipe to a
// local git process, which never sees the token. git indexes a pack about
// three times faster than go-git: zlib in C instead of Go's
// compress/flate, and deltas resolved on every CPU instead of one
// goroutine (BENCHMARKS.md, "Repository cache").
type packStorage struct {
	*filesystem.Storage
	// indexPack starts the writer the received pack goes to.
	indexPack func() (io.WriteCloser, error)
}

// PackfileWriter implements go-git's storer.PackfileWriter, through which
// a fetch hands over the pack it receives.
func (s *packStorage) PackfileWriter() (io.WriteCloser, error) {
	return s.indexPack()
}

// packIndexer is the writer of a received pack: it streams the pack into
// `git index-pack --stdin --fix-thin` in the repository, which checks it,
// completes a thin pack with the bases the repository has, and writes the
// pack and its index under objects/pack. Close waits for git and reports
// its outcome; then done runs (go-git's storage reloads its list of packs).
type packIndexer struct {
	stdin io.WriteCloser
	// wait closes stdin and waits for git to end.
	wait  func() error
	done  func()
	ended bool
	err   error
}

// indexPackArgs is the command packIndexer runs.
var indexPackArgs = []string{"index-pack", "--stdin", "--fix-thin"}

// startIndexPack starts git index-pack in g's git dir; done runs after it
// succeeded.
func (g gitRunner) startIndexPack(ctx context.Context, done func()) (*packIndexer, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	cmd, stdout, stderr := g.command(ctx, 1<<10, nil, indexPackArgs...)
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cancel()
		return nil, g.result(ctx, err, stdout, stderr, indexPackArgs)
	}
	wait := func() error {
		defer cancel()
		// An error closing the pipe (git already gone) shows in Wait's.
		stdin.Close()
		return g.result(ctx, cmd.Wait(), stdout, stderr, indexPackArgs)
	}
	return &packIndexer{stdin: stdin, wait: wait, done: done}, nil
}

// Write passes pack bytes to git. When git has stopped reading (it found
// the pack broken), the error is git's own.
func (p *packIndexer) Write(b []byte) (int, error) {
	if p.ended {
		return 0, p.err
	}
	n, err := p.stdin.Write(b)
	if err != nil {
		p.end()
		if p.err == nil {
			p.err = err
		}
		return n, p.err
	}
	return n, nil
}

// Close ends the pack and waits for git to index it.
func (p *packIndexer) Close() error {
	if !p.ended {
		p.end()
	}
	return p.err
}

// end waits for git and runs done when it succeeded.
func (p *packIndexer) end() {
	p.ended = true
	if p.err = p.wait(); p.err == nil {
		p.done()
	}
}
