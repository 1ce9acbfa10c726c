package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		lo, hi time.Duration
	}{
		{"none", http.Header{}, 0, 0},
		{"seconds", http.Header{"Retry-After": {"20"}}, 20 * time.Second, 20 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, 500 * time.Millisecond},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"http date ahead", http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, 58 * time.Minute, time.Hour},
		{"http date past", http.Header{"Retry-After": {"Mon, 02 Jan 2006 15:04:05 GMT"}}, 0, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header); got < tt.lo || got > tt.hi {
				t.Errorf("retryAfter = %s, want between %s and %s", got, tt.lo, tt.hi)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for attempt := range 8 {
		got = append(got, backoff(attempt, time.Second, 30*time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Errorf("backoff(%d) = %s, want %s", i, got[i], want[i]*time.Second)
		}
	}
}
