// Package localmode is approvalbot's zero-configuration mode: without
// SLACK_BOT_TOKEN the bot talks, in process, to the built-in Slack emulator
// (internal/slackemu) and serves the browser sandbox over it
// (internal/sandbox); without REDIS_URL (or with REDIS_URL=memory://) it
// keeps its state in an embedded in-memory Redis (internal/memredis).
//
// None of it is production code, so none of it lives in the production
// packages: cmd/approvalbot wires this package in its default build
// (local.go), and the release build (-tags nolocal, deploy/Dockerfile)
// leaves it, the emulator, the sandbox and miniredis out of the binary.
package localmode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/memredis"
	"github.com/approvalbot/approvalbot/internal/sandbox"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// OpenRedis connects to REDIS_URL (bot.OpenRedis), or without it (or with
// REDIS_URL=memory://) starts the embedded in-process store and says loudly
// that nothing will survive a restart. The embedded store's keys expire on
// the wall clock, as Redis's do. The returned func releases the connection
// (and the embedded server).
func OpenRedis(ctx context.Context, cfg bot.Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if !cfg.EmbeddedRedis() {
		return bot.OpenRedis(ctx, cfg, log)
	}
	mem, err := memredis.Start(time.Now)
	if err != nil {
		return nil, nil, err
	}
	why := "REDIS_URL is not set"
	if !cfg.LocalMode() {
		why = "REDIS_URL=" + bot.MemoryRedisURL + " WITH A REAL SLACK TOKEN"
	}
	log.WarnContext(ctx, why+": using an EMBEDDED in-memory Redis. "+
		"Every request, answer and queued Slack post is LOST when this process stops. "+
		"Set REDIS_URL=redis://host:port/0 for anything but a try-out.", "addr", mem.Addr())
	rdb := mem.Client()
	return rdb, func() { _ = rdb.Close(); mem.Close() }, nil
}

// Slack is the Slack client and, in local mode, the emulator behind it and
// the browser sandbox over the emulator.
type Slack struct {
	Client *slack.Client
	// Chat is where requests' messages are posted (bot.Deps.SlackChat).
	Chat     *slackout.ChatEndpoint
	Emulator *slackemu.Server // nil in production mode
	// Sandbox is served under /sandbox/ (bot.Deps.Sandbox); nil in
	// production mode. The service attaches its handler to it.
	Sandbox *sandbox.Sandbox
}

// NewSlack builds the Slack Web API client. In production mode it is
// bot.NewSlack's. In local mode it talks, in process, to the built-in Slack
// emulator, and every message the bot posts or updates is printed to logOut
// in readable form. The emulator plays the workspace of SANDBOX_WORKSPACE, or
// slackemu.DefaultWorkspace, and enforces Slack's pacing and trigger rules,
// so the sandbox catches what Slack would refuse.
func NewSlack(cfg bot.Config, m *bot.Metrics, log *slog.Logger, logOut io.Writer) (Slack, error) {
	if !cfg.LocalMode() {
		return Slack{Client: bot.NewSlack(cfg, m), Chat: bot.NewSlackChat(cfg, m)}, nil
	}
	ws := slackemu.DefaultWorkspace()
	if cfg.SandboxWorkspace != "" {
		var err error
		if ws, err = slackemu.LoadWorkspace(cfg.SandboxWorkspace); err != nil {
			return Slack{}, fmt.Errorf("SANDBOX_WORKSPACE: %w", err)
		}
	}
	sandboxURL := BaseURL(cfg.ListenAddr) + "/sandbox"
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
		CallbackSecret: cfg.CallbackSecret, AgentCallbackSecrets: cfg.AgentCallbackSecrets(), BaseURL: sandboxURL, Command: cfg.SlackCommand,
		Logger: log.With("component", "sandbox")})
	if err != nil {
		return Slack{}, err
	}
	log.Warn("SLACK_BOT_TOKEN is not set: LOCAL MODE. Messages go to the built-in Slack emulator, "+
		"not to Slack; each one is printed below. Open the sandbox to see them as Slack would and answer them.",
		"sandbox", sandboxURL+"/", "default_channel", cfg.SlackDefaultChannel)
	if !bot.IsLoopbackHost(cfg.ListenAddr) { // ":8080" is every interface
		log.Warn("LISTEN_ADDR is not a loopback address: other machines can reach this local bot, and anyone who "+
			"does can act as any member of its sandbox; use it on a trusted network only", "listen_addr", cfg.ListenAddr)
	}
	fmt.Fprintf(logOut, "\n  ▶ Local sandbox: %s/\n    a browser Slack workspace to watch and answer approvalbot's messages; "+
		"its callback inbox is %s/inbox\n\n", sandboxURL, sandboxURL)
	httpClient := emu.Client()
	httpClient.Transport = m.InstrumentTransport(httpClient.Transport)
	return Slack{
		Client:   slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(httpClient)),
		Chat:     &slackout.ChatEndpoint{Client: httpClient, APIURL: emu.APIURL(), Token: emu.Token()},
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

// BaseURL is the URL a browser on this machine reaches LISTEN_ADDR at.
func BaseURL(listenAddr string) string {
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "http://localhost:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" || host == "127.0.0.1" {
		host = "localhost" // (local mode's default is 127.0.0.1:8080)
	}
	return "http://" + net.JoinHostPort(host, port)
}
