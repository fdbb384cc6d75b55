//go:build !nolocal

package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/localmode"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// This build carries local mode (internal/localmode): with no configuration
// the bot runs on an embedded Redis and the built-in Slack emulator, with
// the browser sandbox. The release build leaves it out (nolocal.go).

// buildHelp is what --help says this build does with no configuration.
const buildHelp = `With none set the bot runs in LOCAL MODE: an embedded in-memory Redis and a
built-in Slack emulator, with a browser sandbox at http://localhost:8080/sandbox/.`

// checkBuild accepts every configuration: this build can run all of them.
func checkBuild(bot.Config) error { return nil }

// openRedis connects to REDIS_URL, or starts local mode's embedded store
// without it (or with REDIS_URL=memory://).
func openRedis(ctx context.Context, cfg bot.Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	return localmode.OpenRedis(ctx, cfg, log)
}

// newSlack builds the Slack client: Slack's with SLACK_BOT_TOKEN, else the
// built-in emulator's, with the sandbox to serve (nil in production mode).
// Messages the emulator receives are printed on stderr.
func newSlack(cfg bot.Config, m *bot.Metrics, log *slog.Logger) (*slack.Client, *slackout.ChatEndpoint, bot.Sandbox, error) {
	s, err := localmode.NewSlack(cfg, m, log, os.Stderr)
	if err != nil || s.Sandbox == nil { // a nil *Sandbox in the interface would not be nil
		return s.Client, s.Chat, nil, err
	}
	return s.Client, s.Chat, s.Sandbox, nil
}
