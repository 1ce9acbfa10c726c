package config

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"_extends", "setup", "test", "model", "max_steps", "max_cost_usd", "max_duration", "labels", "redis_url", "github_api_url", "github_web_url"}
	tests := []struct{ key, want string }{
		{"max_step", "max_steps"},
		{"maxsteps", "max_steps"},
		{"Max-Steps", "max_steps"},
		{"MAX_STEPS", "max_steps"},
		{"modle", "model"},
		{"tset", "test"},
		{"tests", "test"},
		{"lables", "labels"},
		{"extends", "_extends"},
		{"redis", "redis_url"},
		{"max_durations", "max_duration"},
		{"github", ""}, // starts two names
		{"colour", ""},
		{"foo", ""},
		{"x", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.key, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"model", "model", 0},
		{"modle", "model", 1},
		{"model", "", 5},
		{"", "abc", 3},
		{"max_step", "max_steps", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3},
		{"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}
