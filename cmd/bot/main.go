// Command bot is agentfix: a GitHub App that fixes issues with an LLM coding
// agent. Run `bot help` for its subcommands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	m, err := NewMain()
	if err == nil {
		// go-redis has one logger per process: its lines go through the
		// Main's logger (and its filter of an unreachable Redis's lines).
		redis.SetLogger(&m.redisLog)
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
