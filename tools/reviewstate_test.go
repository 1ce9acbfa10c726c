package tools

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReviewState(t *testing.T) {
	tests := []struct {
		name     string
		test     string
		stages   []string
		fix      bool // make the change that passes run_tests.sh
		wantTest *TestResult
	}{
		{name: "no test command", fix: true},
		{
			name: "failing test", test: "sh run_tests.sh",
			wantTest: &TestResult{Command: "sh run_tests.sh", ExitCode: 1, Output: "ok   calc   0.01s\nFAIL: Add(1, 2) = -1, want 3\n"},
		},
		{
			name: "passing test, two stages", test: "sh run_tests.sh", stages: []string{"first {{.Stage}}", "second {{.Stage}}"}, fix: true,
			wantTest: &TestResult{Command: "sh run_tests.sh", Output: "ok   calc   0.01s\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(o *Options) { o.TestCommand, o.ReviewStages = tt.test, tt.stages })
			stages := max(len(tt.stages), 1)
			if diff := cmp.Diff(ReviewState{Stages: stages}, e.ReviewState()); diff != "" {
				t.Errorf("state before any submit (-want +got):\n%s", diff)
			}
			if tt.fix {
				fixAdd(t, e)
			} else {
				e.bash(t, "echo 'see issue' >> README.md")
			}
			for i := range stages {
				if obs := e.exec(t, submitCall("Summary.")); obs.Submitted {
					t.Fatalf("submit %d ended the run", i+1)
				}
			}
			patch, err := e.Diff(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// The test ran on the change as it was last reviewed: the
			// final patch, unless the agent changes it again.
			want := ReviewState{StagesShown: stages, Stages: stages, LastTest: tt.wantTest, Summary: "Summary."}
			if tt.wantTest != nil {
				want.TestedDiff = patch
			}
			if diff := cmp.Diff(want, e.ReviewState()); diff != "" {
				t.Errorf("state after the review (-want +got):\n%s", diff)
			}
			e.bash(t, "echo more >> README.md")
			if obs := e.exec(t, submitCall("")); !obs.Submitted {
				t.Fatalf("the final submit did not end the run: %+v", obs)
			}
			got := e.ReviewState()
			if final, _ := e.Diff(context.Background()); tt.wantTest != nil && got.TestedDiff == final {
				t.Errorf("TestedDiff equals the final patch although the agent changed it after the test")
			}
			if got.StagesShown != stages || got.Summary != "Summary." {
				t.Errorf("state after submitting = %+v, want %d stages shown and the summary kept", got, stages)
			}
		})
	}
}
