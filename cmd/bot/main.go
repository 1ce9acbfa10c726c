// Command bot is agentfix: a GitHub App that fixes issues with an LLM coding
// agent. Run `bot help` for its subcommands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	m, err := NewMain()
	if err == nil {
		err = m.Run(ctx)
		stop()
		if cerr := m.Close(); err == nil {
			err = cerr
		}
	}
	code := exitCode(err)
	if err != nil && code != 0 {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
