package group

import (
	"context"
	"errors"
	"testing"
)

// TestRun: the first function to return, with or without an error, ends
// the others; their errors come back joined.
func TestRun(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	untilCancelled := func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	err := Run(context.Background(), untilCancelled, func(context.Context) error { return boom })
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want boom and the other's cancellation", err)
	}
	if err := Run(context.Background(), func(context.Context) error { return nil }, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	}); err != nil {
		t.Errorf("Run of functions ending without errors = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, untilCancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Run under a cancelled context = %v, want context.Canceled", err)
	}
}
