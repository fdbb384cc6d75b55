// Command approvalbot puts humans in the loop of AI agents through Slack.
// See the README for configuration; with none it runs locally against an
// embedded Redis and a built-in Slack emulator (local.go), unless it was
// built with -tags nolocal (nolocal.go), as the release image is.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

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

// run wires config → logger → Redis → Slack client → store → service, and
// runs the service until ctx ends (bot.Service.Run stops its components in
// order). What wiring opens is pushed on a cleanup stack and released, last
// opened first, however run ends: after Run returns, or at once when a later
// step fails.
func run(ctx context.Context) (err error) {
	cfg, err := bot.LoadConfig()
	if err != nil {
		return err
	}
	if err := errors.Join(cfg.CheckServe(), checkBuild(cfg)); err != nil {
		return err
	}
	log := bot.NewLogger(cfg, os.Stderr)
	var opened bot.Cleanup
	defer func() { err = errors.Join(err, opened.Unwind(context.WithoutCancel(ctx))) }()

	rdb, closeRedis, err := openRedis(ctx, cfg, log)
	if err != nil {
		return err
	}
	// Released last: every component Run stops may still use Redis.
	opened.PushFunc("redis", closeRedis)

	registry := prometheus.NewRegistry()
	metrics := bot.NewMetrics(registry)
	client, chat, sandbox, err := newSlack(cfg, metrics, log)
	if err != nil {
		return err
	}

	st, err := store.New(rdb, store.Options{Prefix: cfg.RedisPrefix, AuditKey: []byte(cfg.AuditKey), HomeJobs: true,
		NotifyJobs: cfg.NotifyRequester, OpenCounts: cfg.Limits().CapsOpen(), EventsRetention: cfg.EventsRetention})
	if err != nil {
		return err
	}
	deps := bot.Deps{Config: cfg, Store: st, Slack: client, SlackChat: chat, Metrics: metrics, Registry: registry,
		Logger: log, Sandbox: sandbox}
	if cfg.SlackAppToken != "" {
		deps.SocketMode = client
	}
	svc, err := bot.NewService(deps)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
