// Command approvalbot puts humans in the loop of AI agents through Slack.
// See the README for configuration; with none it runs locally against an
// embedded Redis and a built-in Slack emulator (local.go), unless it was
// built with -tags nolocal (nolocal.go), as the release image is.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := runCLI(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run wires config → Redis → Slack client → store → service → HTTP server,
// and shuts down gracefully when ctx ends: the listener closes, in-flight
// requests and running jobs finish, then Redis is released.
func run(ctx context.Context) error {
	cfg, err := bot.LoadConfig()
	if err != nil {
		return err
	}
	if err := checkBuild(cfg); err != nil {
		return err
	}
	log := bot.NewLogger(cfg, os.Stderr)

	rdb, closeRedis, err := openRedis(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeRedis()

	registry := prometheus.NewRegistry()
	metrics := bot.NewMetrics(registry)
	client, sandbox, err := newSlack(cfg, metrics, log)
	if err != nil {
		return err
	}

	st, err := store.New(rdb, store.Options{Prefix: cfg.RedisPrefix, AuditKey: []byte(cfg.AuditKey), HomeJobs: true})
	if err != nil {
		return err
	}
	deps := bot.Deps{Config: cfg, Store: st, Slack: client, Metrics: metrics, Registry: registry, Logger: log,
		Sandbox: sandbox}
	if cfg.SlackAppToken != "" {
		deps.SocketMode = client
	}
	svc, err := bot.NewService(deps)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	srv := &http.Server{
		Handler:           svc.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	build := bot.ReadBuildInfo()
	log.InfoContext(ctx, "approvalbot listening", "addr", ln.Addr().String(), "version", build.Version, "commit", build.Commit,
		"local_mode", cfg.LocalMode(), "embedded_redis", cfg.EmbeddedRedis(), "socket_mode", cfg.SlackAppToken != "",
		"slack_http_endpoints", cfg.SlackSigningSecret != "")

	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.RunJobs(jobsCtx) })
	// Socket Mode stops first on shutdown: the Slack calls its envelopes
	// cause run on the pool RunJobs closes.
	socketCtx, stopSocket := context.WithCancel(context.WithoutCancel(ctx))
	var socketWG sync.WaitGroup
	socketWG.Go(func() { _ = svc.RunSocketMode(socketCtx) })

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
		log.InfoContext(ctx, "shutting down: finishing in-flight requests and jobs", "timeout", cfg.ShutdownTimeout)
		err = nil
	}
	stopSocket()
	socketWG.Wait()
	svc.Close() // long polls answer now instead of holding the shutdown
	if sandbox != nil {
		sandbox.Close()
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		log.ErrorContext(ctx, "http shutdown incomplete", "err", serr)
	}
	stopJobs()
	wg.Wait()
	log.InfoContext(ctx, "approvalbot stopped")
	return err
}
