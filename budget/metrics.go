package budget

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the budget; the only label is the kind of scope, never a
// repository or installation.
type metrics struct {
	spentUSD    *prometheus.CounterVec
	spentTokens *prometheus.CounterVec
	exceeded    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		spentUSD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_budget_spent_usd",
			Help: "Model spend charged to budgets, in US dollars, by kind of scope (each call counts once per kind).",
		}, []string{"scope"}),
		spentTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_budget_spent_tokens",
			Help: "Model tokens charged to budgets, by kind of scope (each call counts once per kind).",
		}, []string{"scope"}),
		exceeded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_budget_exceeded_total",
			Help: "Checks and reservations refused because a budget was exceeded, by kind of scope.",
		}, []string{"scope"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.spentUSD, &m.spentTokens, &m.exceeded} {
		if err := reg.Register(*c); err != nil {
			// A second Budget on the same registry shares the counters.
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register budget metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("register budget metrics: %w", err)
			}
			*c = existing
		}
	}
	return m, nil
}
