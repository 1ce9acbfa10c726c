package redistest

import "testing"

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after Start: %v", err)
	}
	s.Stop()
	if err := ping(s.Addr); err == nil {
		t.Fatalf("ping after Stop succeeded, want an error")
	}
	s.Restart(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after Restart: %v", err)
	}
}
