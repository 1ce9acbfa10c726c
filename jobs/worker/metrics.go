package worker

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// metrics are the worker's Prometheus metrics (DESIGN.md §3). Label values
// come from small fixed sets — never a repository name.
type metrics struct {
	jobs     *prometheus.CounterVec
	duration prometheus.Histogram
	cost     prometheus.Histogram
	steps    prometheus.Counter
	tokens   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_jobs_total",
			Help: "Tasks handled by the worker, by kind (fix, revise, notice, cancel, followup) and outcome.",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentfix_job_duration_seconds",
			Help:    "Wall time of agent jobs (fix and revise), from start to the final report.",
			Buckets: []float64{10, 30, 60, 120, 300, 600, 900, 1800, 2700, 3600, 5400},
		}),
		cost: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentfix_job_cost_usd",
			Help:    "Model spend of agent jobs in USD.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10},
		}),
		steps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentfix_agent_steps_total",
			Help: "Agent steps (model queries) run by the worker.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_model_tokens_total",
			Help: "Model tokens by provider and type (input, output, cache_read, cache_write).",
		}, []string{"provider", "type"}),
	}
	for _, c := range []prometheus.Collector{m.jobs, m.duration, m.cost, m.steps, m.tokens} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register worker metrics: %w", err)
		}
	}
	return m, nil
}

// job counts one handled task.
func (m *metrics) job(kind string, o outcome.Outcome) { m.jobs.WithLabelValues(kind, string(o)).Inc() }

// agentJob records an agent job's duration and cost.
func (m *metrics) agentJob(d time.Duration, costUSD float64) {
	m.duration.Observe(d.Seconds())
	m.cost.Observe(costUSD)
}

// step counts one agent step and its tokens.
func (m *metrics) step(provider string, u agent.Usage) {
	m.steps.Inc()
	for typ, n := range map[string]int64{
		"input": u.InputTokens, "output": u.OutputTokens,
		"cache_read": u.CacheReadTokens, "cache_write": u.CacheWriteTokens,
	} {
		if n > 0 {
			m.tokens.WithLabelValues(provider, typ).Add(float64(n))
		}
	}
}
