package webhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Delivery outcomes, the values of the outcome label.
const (
	outcomeQueued       = "queued"
	outcomeDuplicate    = "duplicate"
	outcomeIgnored      = "ignored"
	outcomeUnauthorized = "unauthorized"
	outcomeBadRequest   = "bad_request"
	outcomeTooLarge     = "too_large"
	outcomeUnavailable  = "unavailable"
	outcomeOverloaded   = "overloaded"
	outcomeBodyTimeout  = "body_timeout"
)

// eventOther is the event label of deliveries of events without a handler
// (and of unverified requests with such a header), so label values stay a
// small fixed set.
const eventOther = "other"

type metrics struct {
	deliveries *prometheus.CounterVec
	enqueue    prometheus.Histogram
	inflight   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_webhook_deliveries_total",
			Help: "Webhook deliveries by event and outcome.",
		}, []string{"event", "outcome"}),
		enqueue: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentfix_webhook_enqueue_duration_seconds",
			Help:    "Time to claim a delivery and enqueue its tasks.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentfix_webhook_body_bytes_in_flight",
			Help: "Memory booked by the delivery bodies being read and handled (their buffers).",
		}),
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.enqueue, m.inflight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}
