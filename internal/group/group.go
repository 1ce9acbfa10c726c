// Package group runs the long-lived parts of one process together.
package group

import (
	"context"
	"errors"
	"sync"
)

// Run runs each function until ctx is done or one of them returns, with
// or without an error; then it cancels the others, waits for all, and
// returns their errors joined.
func Run(ctx context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(ctx)
			cancel()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
