package bot

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// NewLogger builds the process logger from LOG_LEVEL and LOG_FORMAT.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// OpenRedis connects to REDIS_URL. The embedded in-memory store that an
// unset REDIS_URL or REDIS_URL=memory:// asks for is local tooling, not
// here: internal/localmode starts it, in builds that carry local mode (see
// cmd/approvalbot). The returned func releases the connection.
func OpenRedis(ctx context.Context, cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.EmbeddedRedis() {
		return nil, nil, fmt.Errorf("REDIS_URL=%q asks for the embedded in-memory store, which only local mode "+
			"(internal/localmode) starts: set REDIS_URL=redis://host:port/0", cfg.RedisURL)
	}
	opts, err := cfg.RedisOptions()
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewUniversalClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("connect to redis at %s: %w", opts.Addrs[0], err)
	}
	log.InfoContext(ctx, "connected to redis", "addr", opts.Addrs[0], "db", opts.DB,
		"dial_timeout", opts.DialTimeout, "timeout", opts.ReadTimeout)
	return rdb, func() { _ = rdb.Close() }, nil
}

// NewSlack builds the Slack Web API client of production mode: it talks to
// SLACK_API_URL with SLACK_BOT_TOKEN, every call timed by m, and carries
// SLACK_APP_TOKEN for Socket Mode when it is set. Local mode's client, over
// the built-in emulator, is internal/localmode's.
func NewSlack(cfg Config, m *Metrics) *slack.Client {
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: m.InstrumentTransport(nil)}
	opts := []slack.Option{slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionHTTPClient(httpClient)}
	if cfg.SlackAppToken != "" {
		// Only apps.connections.open uses it: Socket Mode (Deps.SocketMode).
		opts = append(opts, slack.OptionAppLevelToken(cfg.SlackAppToken))
	}
	return slack.New(cfg.SlackBotToken, opts...)
}
