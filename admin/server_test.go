package admin

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/jobs"
)

func TestNewRefusesIncompleteOptions(t *testing.T) {
	f := newFixture(t)
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no runs", Options{Logger: log}, "Runs and Logger are required"},
		{"no logger", Options{Runs: f.store}, "Runs and Logger are required"},
		{"a token without Redis", Options{Runs: f.store, Logger: log, Token: testToken, Queues: []string{jobs.QueueAgent}}, "Redis is required for the tasks and queues pages"},
		{"a token without queues", Options{Runs: f.store, Logger: log, Token: testToken, Redis: f.rdb}, "Queues are required for the tasks page"},
		{"a bad GitHub URL", Options{Runs: f.store, Logger: log, GitHubWebURL: "github.com"}, "GitHubWebURL is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := New(Options{Runs: f.store, Logger: log}); err != nil {
		t.Errorf("New without a token (signed pages only) = %v, want no error", err)
	}
}
