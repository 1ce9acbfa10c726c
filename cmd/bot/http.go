package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// shutdownTimeout bounds the graceful shutdown of the HTTP server.
const shutdownTimeout = 15 * time.Second

// serveHTTP serves h on addr until ctx is cancelled, then shuts down
// gracefully, letting requests in flight finish.
// announce, when not nil, is told the address once the server listens.
func (m *Main) serveHTTP(ctx context.Context, addr string, h http.Handler, log *slog.Logger, announce ...func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (AGENTFIX_LISTEN_ADDR): %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", ln.Addr().String())
	for _, a := range announce {
		a(ln.Addr())
	}
	if m.Listening != nil {
		m.Listening(ln.Addr().String())
	}
	err = serveUntil(ctx, srv, ln, func() { log.Info("shutting down") })
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// serveUntil serves srv on ln until ctx is cancelled, then tells
// stopping, if set, and shuts down gracefully, letting requests in flight
// finish within shutdownTimeout.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, stopping func()) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if stopping != nil {
		stopping()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// newRegistry returns the process's metrics registry with the Go runtime
// and process collectors; each part registers its own metrics on it.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// openURL is the address of path on a server listening on addr, as a
// browser on this machine opens it: the public URL when there is one, else
// localhost for an address on every interface.
func openURL(publicURL string, addr net.Addr, path string) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/") + path
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}
