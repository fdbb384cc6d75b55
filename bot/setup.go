package bot

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/internal/sandbox"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
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

// OpenRedis connects to REDIS_URL, or without it (or with
// REDIS_URL=memory://) starts the embedded in-process store and says loudly
// that nothing will survive a restart. The embedded store's keys expire on
// the wall clock, as Redis's do. The returned func releases the connection
// (and the embedded server).
func OpenRedis(ctx context.Context, cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.EmbeddedRedis() {
		mem, err := store.StartEmbedded(time.Now)
		if err != nil {
			return nil, nil, err
		}
		why := "REDIS_URL is not set"
		if !cfg.LocalMode() {
			why = "REDIS_URL=" + MemoryRedisURL + " WITH A REAL SLACK TOKEN"
		}
		log.WarnContext(ctx, why+": using an EMBEDDED in-memory Redis. "+
			"Every request, answer and queued Slack post is LOST when this process stops. "+
			"Set REDIS_URL=redis://host:port/0 for anything but a try-out.", "addr", mem.Addr())
		rdb := mem.Client()
		return rdb, func() { _ = rdb.Close(); mem.Close() }, nil
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{opts.Addr}, DB: opts.DB, Username: opts.Username, Password: opts.Password,
		TLSConfig: opts.TLSConfig,
	})
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("connect to redis at %s: %w", opts.Addr, err)
	}
	log.InfoContext(ctx, "connected to redis", "addr", opts.Addr, "db", opts.DB)
	return rdb, func() { _ = rdb.Close() }, nil
}

// SlackSetup is the Slack client and, in local mode, the emulator behind it
// and the browser sandbox over the emulator.
type SlackSetup struct {
	Client   *slack.Client
	Emulator *slackemu.Server // nil in production mode
	// Sandbox is served under /sandbox/ (Deps.Sandbox); nil in production
	// mode. Attach the service's handler to it once the service is built.
	Sandbox *sandbox.Sandbox
}

// NewSlack builds the Slack Web API client. In production mode it talks to
// SLACK_API_URL with SLACK_BOT_TOKEN. In local mode it talks, in process, to
// the built-in Slack emulator, and every message the bot posts or updates is
// printed to logOut in readable form. The emulator plays the workspace of
// SANDBOX_WORKSPACE, or slackemu.DefaultWorkspace, and enforces Slack's
// pacing and trigger rules, so the sandbox catches what Slack would refuse.
func NewSlack(cfg Config, m *Metrics, log *slog.Logger, logOut io.Writer) (SlackSetup, error) {
	if !cfg.LocalMode() {
		httpClient := &http.Client{Timeout: 30 * time.Second, Transport: m.InstrumentTransport(nil)}
		opts := []slack.Option{slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionHTTPClient(httpClient)}
		if cfg.SlackAppToken != "" {
			// Only apps.connections.open uses it: Socket Mode (Deps.SocketMode).
			opts = append(opts, slack.OptionAppLevelToken(cfg.SlackAppToken))
		}
		return SlackSetup{Client: slack.New(cfg.SlackBotToken, opts...)}, nil
	}
	ws := slackemu.DefaultWorkspace()
	if cfg.SandboxWorkspace != "" {
		var err error
		if ws, err = slackemu.LoadWorkspace(cfg.SandboxWorkspace); err != nil {
			return SlackSetup{}, fmt.Errorf("SANDBOX_WORKSPACE: %w", err)
		}
	}
	sandboxURL := LocalBaseURL(cfg.ListenAddr) + "/sandbox"
	var mu sync.Mutex
	var emu *slackemu.Server
	emu = slackemu.New(slackemu.Options{
		Workspace:      &ws,
		EnforcePacing:  true,
		StrictTriggers: true,
		MaxCalls:       5000, // the sandbox's API log shows the latest
		PermalinkBase:  sandboxURL,
		OnMessage: func(msg slackemu.Message) {
			verb := "posted"
			if msg.Edited > 0 {
				verb = "updated"
			}
			log.Info("local slack: message "+verb, "channel", msg.Channel, "ts", msg.TS)
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(logOut, "┌─ local Slack · %s · %s · ts %s\n%s└─\n", verb, msg.Channel, msg.TS, indent(emu.RenderMessage(msg)))
		},
	})
	sb, err := sandbox.New(sandbox.Options{Emulator: emu, SigningSecret: cfg.SlackSigningSecret,
		CallbackSecret: cfg.CallbackSecret, BaseURL: sandboxURL, Command: cfg.SlackCommand,
		Logger: log.With("component", "sandbox")})
	if err != nil {
		return SlackSetup{}, err
	}
	log.Warn("SLACK_BOT_TOKEN is not set: LOCAL MODE. Messages go to the built-in Slack emulator, "+
		"not to Slack; each one is printed below. Open the sandbox to see them as Slack would and answer them.",
		"sandbox", sandboxURL+"/", "default_channel", cfg.SlackDefaultChannel)
	fmt.Fprintf(logOut, "\n  ▶ Local sandbox: %s/\n    a browser Slack workspace to watch and answer approvalbot's messages; "+
		"its callback inbox is %s/inbox\n\n", sandboxURL, sandboxURL)
	httpClient := emu.Client()
	httpClient.Transport = m.InstrumentTransport(httpClient.Transport)
	return SlackSetup{
		Client:   slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(httpClient)),
		Emulator: emu,
		Sandbox:  sb,
	}, nil
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("│ " + line + "\n")
	}
	return b.String()
}

// LocalBaseURL is the URL a browser on this machine reaches LISTEN_ADDR at.
func LocalBaseURL(listenAddr string) string {
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "http://localhost:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
