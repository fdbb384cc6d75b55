package bot

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/slackout"
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

// NewSlack builds the Slack Web API client of production mode: it talks to
// SLACK_API_URL with SLACK_BOT_TOKEN, every call timed by m, and carries
// SLACK_APP_TOKEN for Socket Mode when it is set. Local mode's client, over
// the built-in emulator, is internal/localmode's.
func NewSlack(cfg Config, m *Metrics) *slack.Client {
	opts := []slack.Option{slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionHTTPClient(slackHTTPClient(m))}
	if cfg.SlackAppToken != "" {
		// Only apps.connections.open uses it: Socket Mode (Deps.SocketMode).
		opts = append(opts, slack.OptionAppLevelToken(cfg.SlackAppToken))
	}
	return slack.New(cfg.SlackBotToken, opts...)
}

// NewSlackChat is where production mode posts requests' messages
// (Deps.SlackChat): NewSlack's API URL and token over an HTTP client like
// its own.
func NewSlackChat(cfg Config, m *Metrics) *slackout.ChatEndpoint {
	return &slackout.ChatEndpoint{Client: slackHTTPClient(m), APIURL: cfg.SlackAPIURL, Token: cfg.SlackBotToken}
}

// slackHTTPClient is the HTTP client of Slack calls: each one timed by m.
func slackHTTPClient(m *Metrics) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: m.InstrumentTransport(nil)}
}
