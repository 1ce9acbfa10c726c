package budget

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCallEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call Call
		want Amount
	}{
		{"priced", Call{InputTokens: 100_000, MaxOutputTokens: 16_384, InputPrice: 3.75, OutputPrice: 15}, Amount{USD: 0.62076, Tokens: 116_384}},
		{"rounded up to the micro-dollar", Call{InputTokens: 1, InputPrice: 0.1}, Amount{USD: 0.000001, Tokens: 1}},
		{"unpriced counts tokens only", Call{InputTokens: 8_000, MaxOutputTokens: 4_000}, Amount{Tokens: 12_000}},
		{"nothing", Call{}, Amount{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.call.Estimate(), approx); diff != "" {
				t.Errorf("Estimate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTextTokens(t *testing.T) {
	t.Parallel()
	if got := TextTokens("héllo"); got != 6 {
		t.Errorf("TextTokens(héllo) = %d, want 6 (bytes)", got)
	}
}
