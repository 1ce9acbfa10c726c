package agent

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noopModel answers every query with one bash call and a paragraph of
// reasoning, at once.
type noopModel struct{ reply Reply }

func (m *noopModel) Query(context.Context, []Message, []ToolSpec) (Reply, error) { return m.reply, nil }
func (m *noopModel) Name() string                                                { return "noop/model" }

// noopEnv runs nothing and returns a couple of kilobytes of output, which
// ends in the call's number so that the loop never sees a model stuck
// repeating itself.
type noopEnv struct {
	output string
	calls  int
}

func (e *noopEnv) Tools() []ToolSpec                     { return []ToolSpec{{Name: "bash"}} }
func (e *noopEnv) Actions(m Message) ([]ToolCall, error) { return m.ToolCalls, nil }
func (e *noopEnv) Diff(context.Context) (string, error)  { return "", nil }
func (e *noopEnv) Execute(context.Context, ToolCall) (Observation, error) {
	e.calls++
	return Observation{Output: e.output + strconv.Itoa(e.calls)}, nil
}

// BenchmarkStepOverhead measures the loop's own cost per step (limits,
// hooks, history, observation rendering, trajectory record) at the start and
// at the end of a 200-step run; the model and the command cost nothing
// here. Each iteration is one whole run; the metrics are per step.
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 200
	const window = 10
	model := &noopModel{reply: Reply{
		Message: Message{Role: RoleAssistant, Content: strings.Repeat("Let me look at the parser. ", 20),
			ToolCalls: []ToolCall{{ID: "call_1", Name: "bash", Arguments: json.RawMessage(`{"command":"grep -rn Parse ."}`)}}},
		FinishReason: FinishToolCalls,
		Usage:        Usage{InputTokens: 1000, OutputTokens: 100},
	}}
	env := &noopEnv{output: strings.Repeat("parse.go:12: func Parse(s string) (W, error) {\n", 40)}
	cfg := DefaultConfig()
	cfg.MaxSteps = steps
	hooks := Hooks{
		OnStepStart: func(context.Context, StepStart) error { return nil },
		OnStepDone:  func(context.Context, Step) error { return nil },
	}
	task := Task{Repo: "octo/widgets", Issue: 1, Title: "Parse fails", Body: "It fails."}
	ctx := context.Background()
	// Per run: the time of step 1, of step 200, and the mean of the first
	// and of the last ten steps; medians over the runs resist the noise
	// of a shared machine. Allocations of steps 1 and 200 are counted
	// outside the timed region.
	var first, last, early, late []float64
	var alloc [2]struct{ bytes, count uint64 }
	var ms runtime.MemStats
	for b.Loop() {
		a, err := New(model, env, WithConfig(cfg), WithHooks(hooks), WithTrajectory(io.Discard))
		if err != nil {
			b.Fatal(err)
		}
		if err := a.start(task); err != nil {
			b.Fatal(err)
		}
		var sumEarly, sumLate time.Duration
		for k := range steps {
			measured := k == 0 || k == steps-1
			if measured {
				runtime.ReadMemStats(&ms)
			}
			bytes0, count0 := ms.TotalAlloc, ms.Mallocs
			t := time.Now()
			if err := a.step(ctx, ctx); err != nil {
				b.Fatalf("step %d: %v", k+1, err)
			}
			d := time.Since(t)
			if measured {
				runtime.ReadMemStats(&ms)
				i := min(k, 1)
				alloc[i].bytes += ms.TotalAlloc - bytes0
				alloc[i].count += ms.Mallocs - count0
			}
			switch {
			case k == 0:
				first = append(first, float64(d))
			case k == steps-1:
				last = append(last, float64(d))
			}
			if k < window {
				sumEarly += d
			}
			if k >= steps-window {
				sumLate += d
			}
		}
		early = append(early, float64(sumEarly)/window)
		late = append(late, float64(sumLate)/window)
	}
	runs := float64(len(first))
	b.ReportMetric(median(first), "step1-ns")
	b.ReportMetric(median(last), "step200-ns")
	b.ReportMetric(median(early), "steps1-10-ns")
	b.ReportMetric(median(late), "steps191-200-ns")
	b.ReportMetric(median(late)/median(early), "late/early")
	b.ReportMetric(float64(alloc[0].bytes)/runs, "step1-B")
	b.ReportMetric(float64(alloc[1].bytes)/runs, "step200-B")
	b.ReportMetric(float64(alloc[0].count)/runs, "step1-allocs")
	b.ReportMetric(float64(alloc[1].count)/runs, "step200-allocs")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
