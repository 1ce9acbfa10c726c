package outcome

import "testing"

func TestFinal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o         Outcome
		final     bool
		published bool
	}{
		{PROpened, true, true},
		{DraftOpened, true, true},
		{PRUpdated, true, true},
		{NoChanges, true, false},
		{Failed, true, false},
		{Cancelled, true, false},
		{Unauthorized, true, false},
		{Error, false, false},
		{Interrupted, false, false},
	} {
		if got := tc.o.Final(); got != tc.final {
			t.Errorf("%s.Final() = %v, want %v", tc.o, got, tc.final)
		}
		if got := tc.o.Published(); got != tc.published {
			t.Errorf("%s.Published() = %v, want %v", tc.o, got, tc.published)
		}
	}
}
