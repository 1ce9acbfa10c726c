package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
)

// stamped prefixes each line with a GitHub Actions time stamp, a
// millisecond apart from at.
func stamped(at time.Time, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%s %s\n", at.Add(time.Duration(i)*time.Millisecond).Format("2006-01-02T15:04:05.0000000Z"), l)
	}
	return b.String()
}

func TestLogExcerpt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	checkout := stamped(t0, "##[group]Run actions/checkout@v4", "with:", "##[endgroup]", "Syncing repository: octo/widget", "##[debug]fetch depth 1")
	testStep := stamped(t0.Add(20*time.Second),
		"##[group]Run go test ./...", "\x1b[36;1mgo test ./...\x1b[0m", "##[endgroup]",
		"=== RUN   TestAdd", "--- FAIL: TestAdd (0.00s)", "    calc_test.go:9: Add(2, 2) = 0, want 4", "FAIL",
		"FAIL\texample.com/calc\t0.002s", "##[error]Process completed with exit code 1.")
	cleanup := stamped(t0.Add(40*time.Second), "Post job cleanup.", "Cleaning up orphan processes")
	failedStep := []timeSpan{{t0.Add(20 * time.Second), t0.Add(30 * time.Second)}}
	var long []string
	for i := range 100 {
		long = append(long, fmt.Sprintf("compiling package %d", i))
	}
	tests := []struct {
		name   string
		raw    string
		failed []timeSpan
		max    int
		want   string
	}{
		{
			name: "the failed step alone, stamps and escapes gone, log commands plain",
			raw:  checkout + testStep + cleanup, failed: failedStep, max: 4000,
			want: "Run go test ./...\ngo test ./...\n=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n" +
				"    calc_test.go:9: Add(2, 2) = 0, want 4\nFAIL\nFAIL\texample.com/calc\t0.002s\nError: Process completed with exit code 1.\n",
		},
		{
			name: "no step times: the whole log, around its errors",
			raw:  checkout + testStep + cleanup, max: 4000,
			want: "Run actions/checkout@v4\nwith:\nSyncing repository: octo/widget\nRun go test ./...\ngo test ./...\n=== RUN   TestAdd\n" +
				"--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: Add(2, 2) = 0, want 4\nFAIL\nFAIL\texample.com/calc\t0.002s\n" +
				"Error: Process completed with exit code 1.\nPost job cleanup.\nCleaning up orphan processes\n",
		},
		{
			name: "step times that match no line: the whole log",
			raw:  checkout, failed: []timeSpan{{t0.Add(time.Hour), t0.Add(2 * time.Hour)}}, max: 4000,
			want: "Run actions/checkout@v4\nwith:\nSyncing repository: octo/widget\n",
		},
		{
			name: "lines around the error, the rest counted",
			raw:  stamped(t0, append(append(append([]string{}, long[:40]...), "./calc.go:5:9: undefined: sum"), long[40:]...)...), max: 8000,
			want: "… (30 lines left out)\n" + strings.Join(long[30:40], "\n") + "\n./calc.go:5:9: undefined: sum\n" +
				strings.Join(long[40:60], "\n") + "\n… (40 lines left out)\n",
		},
		{
			name: "no error line: the end",
			raw:  stamped(t0, long...), max: 8000,
			want: "… (20 lines left out)\n" + strings.Join(long[20:], "\n") + "\n",
		},
		{
			name: "too long: the middle left out at line breaks",
			raw:  stamped(t0, long[:10]...), max: 100,
			want: "compiling package 0\n… (100 bytes left out)\ncompiling package 6\ncompiling package 7\ncompiling package 8\ncompiling package 9\n",
		},
		{
			name: "carriage returns, CRLF, OSC links, a byte order mark",
			raw: "\ufeff2026-03-01T10:00:00.1234567Z progress 10%\rprogress 100%\r\n" +
				"2026-03-01T10:00:01Z \x1b]8;;https://x.example\x07link\x1b]8;;\x07 text\x1b[K\r\n",
			max:  4000,
			want: "progress 100%\nlink text\n",
		},
		{
			name:   "lines without a stamp go with the stamped line before them",
			raw:    stamped(t0, "before") + stamped(t0.Add(20*time.Second), "panic: boom") + "goroutine 1 [running]:\n" + stamped(t0.Add(40*time.Second), "after"),
			failed: failedStep, max: 4000,
			want: "panic: boom\ngoroutine 1 [running]:\n",
		},
		{name: "empty", raw: "", max: 100, want: "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := logExcerpt(tt.raw, tt.failed, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("logExcerpt (-want +got):\n%s", diff)
			}
			if len(got) > tt.max+60 {
				t.Errorf("logExcerpt is %d bytes, want about %d at most", len(got), tt.max)
			}
		})
	}
}

func TestErrorLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want bool
	}{
		{"--- FAIL: TestAdd (0.00s)", true},
		{"    calc_test.go:9: Add(2, 2) = 0, want 4", true},
		{"./calc.go:5:9: undefined: sum", true},
		{"src/app.ts(3,1): error TS2304: Cannot find name 'x'.", true},
		{"Error: Process completed with exit code 1.", true},
		{"panic: runtime error: index out of range", true},
		{"Traceback (most recent call last):", true},
		{"not ok 3 - adds numbers", true},
		{"  ✗ adds numbers", true},
		{"ok  \texample.com/calc\t0.002s", false},
		{"Downloading go1.22.linux-amd64.tar.gz", false},
		{"Running golangci-lint with errorlint enabled", false},
		{"Found 2 errors in 1 file.", true},
	}
	for _, tt := range tests {
		if got := errorLine.MatchString(tt.line); got != tt.want {
			t.Errorf("errorLine(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestFailedSteps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	job := ghapp.WorkflowJob{Steps: []ghapp.JobStep{
		{Name: "checkout", Conclusion: "success", StartedAt: t0, CompletedAt: t0.Add(time.Second)},
		{Name: "test", Conclusion: "failure", StartedAt: t0.Add(2 * time.Second), CompletedAt: t0.Add(5 * time.Second)},
		{Name: "lint", Conclusion: "timed_out"},
		{Name: "upload", Conclusion: "skipped"},
	}}
	names, spans := failedSteps(job)
	if diff := cmp.Diff([]string{"test", "lint"}, names); diff != "" {
		t.Errorf("failed steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]timeSpan{{t0.Add(2 * time.Second), t0.Add(5 * time.Second)}}, spans, cmp.AllowUnexported(timeSpan{})); diff != "" {
		t.Errorf("failed steps' times (-want +got):\n%s", diff)
	}
}

func TestAnnotationLines(t *testing.T) {
	t.Parallel()
	got := annotationLines([]ghapp.Annotation{
		{Path: "calc.go", StartLine: 5, Message: "undefined: sum"},
		{Path: "calc_test.go", StartLine: 9, Title: "TestAdd", Message: "Add(2, 2) = 0,\n  want 4"},
		{Path: ".github", Title: "Process completed", Message: "Process completed with exit code 1."},
	})
	want := []string{"calc.go:5: undefined: sum", "calc_test.go:9: TestAdd: Add(2, 2) = 0, want 4", ".github: Process completed with exit code 1."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotationLines (-want +got):\n%s", diff)
	}
}
