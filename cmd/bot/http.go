package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentfix/agentfix/internal/httpserve"
)

// serveHTTP serves h on AGENTFIX_LISTEN_ADDR until ctx is cancelled, then
// shuts down gracefully (package httpserve). announce, when not nil, is
// told the address once the server listens, and so is m.Listening.
func (m *Main) serveHTTP(ctx context.Context, addr string, h http.Handler, log *slog.Logger, announce ...func(net.Addr)) error {
	return httpserve.Serve(ctx, addr, "AGENTFIX_LISTEN_ADDR", h, log, func(a net.Addr) {
		for _, f := range announce {
			f(a)
		}
		if m.Listening != nil {
			m.Listening(a.String())
		}
	})
}

// newRegistry returns the process's metrics registry with the Go runtime
// and process collectors; each part registers its own metrics on it.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
