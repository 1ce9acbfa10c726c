package jobs

import (
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynq/x/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RegisterQueueMetrics registers asynq's queue collector (asynq_queue_size,
// asynq_queue_latency_seconds, asynq_tasks_processed_total, …, labelled by
// queue) on reg. It reads Redis at every scrape, and not before; every
// process that registers it reports the same values, so aggregate with
// max, not sum.
func RegisterQueueMetrics(reg prometheus.Registerer, rdb redis.UniversalClient) error {
	c := metrics.NewQueueMetricsCollector(asynq.NewInspectorFromRedisClient(rdb))
	if err := reg.Register(undescribed{c}); err != nil {
		return fmt.Errorf("register queue metrics: %w", err)
	}
	return nil
}

// undescribed registers a collector unchecked: asynq's collector describes
// itself by collecting, which would read Redis while the process starts
// (and wait out Redis's timeouts when it is unreachable).
type undescribed struct{ prometheus.Collector }

// Describe sends no descriptors (an unchecked collector).
func (undescribed) Describe(chan<- *prometheus.Desc) {}
