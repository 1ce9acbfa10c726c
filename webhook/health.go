package webhook

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// HealthRoutes mounts what every process of the bot serves: /healthz,
// /readyz (Redis answers) and /metrics of reg.
func HealthRoutes(r chi.Router, rdb redis.UniversalClient, reg prometheus.Gatherer) {
	r.Get("/healthz", Healthz)
	r.Get("/readyz", Readyz(rdb))
	r.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}

// readyTimeout bounds the Redis ping of /readyz.
const readyTimeout = 2 * time.Second

// Healthz answers 200 while the process serves HTTP.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Readyz returns a handler that answers 200 when Redis answers a ping, and
// 503 when it does not (the queue is unavailable).
func Readyz(rdb redis.UniversalClient) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := rdb.Ping(ctx).Err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("redis unreachable\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}
