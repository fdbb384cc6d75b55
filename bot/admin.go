package bot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The admin listener (ADMIN_ADDR): the operators' endpoints, on a listener
// of their own so they are never reachable where agents and Slack are.
// Off by default. It serves
//
//	/debug/pprof/…   net/http/pprof: CPU, heap, goroutine, block, mutex profiles, traces
//	/metrics         the same Prometheus metrics as the public listener
//
// The public listener never serves /debug/pprof (its mux is the service's
// own, not http.DefaultServeMux).

// validateAdminAddr checks ADMIN_ADDR: empty (off), or host:port with a
// numeric port, not the public listener's address.
func (c Config) validateAdminAddr(add func(format string, args ...any)) {
	if c.AdminAddr == "" {
		return
	}
	host, port, err := net.SplitHostPort(c.AdminAddr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		add("ADMIN_ADDR must be host:port, e.g. 127.0.0.1:6060 (empty turns the admin listener off), got %q", c.AdminAddr)
		return
	}
	if sameListener(host, port, c.ListenAddr) {
		add("ADMIN_ADDR (%s) must not be LISTEN_ADDR's address (%s): profiles must never be served on the public listener", c.AdminAddr, c.ListenAddr)
	}
}

// sameListener reports whether host:port and addr would listen on the same
// port of a common address (an empty or unspecified host is every address).
// Port 0 (a port the system picks) clashes with nothing.
func sameListener(host, port, addr string) bool {
	h2, p2, err := net.SplitHostPort(addr)
	if err != nil || port == "0" || port != p2 {
		return false
	}
	if wildcard(host) || wildcard(h2) || host == h2 {
		return true
	}
	ip1, ip2 := net.ParseIP(host), net.ParseIP(h2)
	return ip1 != nil && ip1.Equal(ip2)
}

func wildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// AdminHandler is the admin listener's handler: net/http/pprof and
// /metrics.
func (s *Service) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{Registry: s.deps.Registry}))
	return recoverPanics(s.deps.Logger, mux)
}

// adminServer is the admin listener's server. Its write timeout leaves
// room for a 60-second CPU profile or trace (pprof's ?seconds= must stay
// below it).
func (s *Service) adminServer(base context.Context) *http.Server {
	return &http.Server{
		Handler:           s.AdminHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// stopServer shuts srv down within timeout, then closes what is left (a
// profile still being taken).
func stopServer(srv *http.Server, timeout time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		shutdownCtx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = srv.Close()
			return fmt.Errorf("%w (closed)", err)
		}
		return nil
	}
}
