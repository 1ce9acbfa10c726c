// Package httpserve serves the bot's HTTP listeners (the edge, the
// worker's health and metrics, bot view) until their context ends, then
// shuts them down gracefully.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// ShutdownTimeout bounds the graceful shutdown of a server.
const ShutdownTimeout = 15 * time.Second

// Serve serves h on addr until ctx is cancelled, then shuts down
// gracefully, letting requests in flight finish. onListen, when not nil,
// is told the address once the server listens. addrVar names the setting
// that chose addr, for the error of an address that cannot be listened on.
func Serve(ctx context.Context, addr, addrVar string, h http.Handler, log *slog.Logger, onListen func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (%s): %w", addr, addrVar, err)
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
	if onListen != nil {
		onListen(ln.Addr())
	}
	if err := Until(ctx, srv, ln, func() { log.Info("shutting down") }); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// Until serves srv on ln until ctx is cancelled, then tells stopping, if
// set, and shuts down gracefully, letting requests in flight finish within
// ShutdownTimeout.
func Until(ctx context.Context, srv *http.Server, ln net.Listener, stopping func()) error {
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
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// OpenURL is the address of path on a server listening on addr, as a
// browser on this machine opens it: the public URL when there is one, else
// localhost for an address on every interface.
func OpenURL(publicURL string, addr net.Addr, path string) string {
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
