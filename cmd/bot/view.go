package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"syscall"

	"github.com/agentfix/agentfix/admin"
)

// viewUsage heads the help of bot view.
const viewUsage = `usage: bot view [--listen ADDR] DIR

Serves the run page of the run directory DIR on this machine, the page
/admin/runs/RUN_ID shows, and prints the address to open. DIR is the
output directory of a run of bot fix (./agentfix-runs/RUN_ID) or a
worker's run directory (AGENTFIX_DATA_DIR/runs/RUN_ID). The page reads
DIR at every load and reloads itself while the run runs. The server has no
authentication, so it listens on a loopback address and answers only this
machine. Ctrl-C stops it. Exit code 0 after Ctrl-C, 1 when DIR cannot be
shown or the address is taken, 2 for usage errors.

flags:
`

// viewDefaultListen is where bot view listens without --listen: a free
// port of the loopback interface.
const viewDefaultListen = "127.0.0.1:0"

// runView serves the run page of a run directory: bot view.
func (m *Main) runView(ctx context.Context, args []string) error {
	dir, listen, err := m.parseViewFlags(args)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(m.WorkDir, dir)
	}
	log := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := admin.NewLocalView(dir, log)
	if err != nil {
		return fmt.Errorf("bot view: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("bot view: %s is in use: give another port with --listen, or leave --listen out for a free one", listen)
	}
	if err != nil {
		return fmt.Errorf("bot view: listen on %s (--listen): %w", listen, err)
	}
	fmt.Fprintf(m.Stdout, "bot view: the run in %s\n  open  http://%s/\n  stop  Ctrl-C\n", dir, ln.Addr())
	if m.Listening != nil {
		m.Listening(ln.Addr().String())
	}
	if err := admin.ServeLocal(ctx, ln, h, log); err != nil {
		return fmt.Errorf("bot view: %w", err)
	}
	return nil
}

// parseViewFlags returns DIR and the address to listen on. Flags may come
// before or after DIR.
func (m *Main) parseViewFlags(args []string) (dir, listen string, err error) {
	fs := m.flagSet("view", nil)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), viewUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&listen, "listen", viewDefaultListen, "the loopback address to serve on, host:port (127.0.0.1, [::1] or localhost; port 0 picks a free one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", "", err
		}
		return "", "", usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		dir = fs.Arg(0)
		if err := parse(fs, fs.Args()[1:]); err != nil {
			return "", "", err
		}
	}
	if dir == "" {
		return "", "", usageError{"bot view: DIR required: the output directory of a run of bot fix, such as ./agentfix-runs/RUN_ID (bot view -h for help)"}
	}
	host, _, err := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); err == nil && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		err = errors.New("not loopback")
	}
	if err != nil {
		return "", "", usageError{fmt.Sprintf("bot view: --listen %s: give host:port with a loopback host, such as 127.0.0.1:8080 (the page has no authentication, so bot view serves this machine only)", listen)}
	}
	return dir, listen, nil
}
