//go:build nolocal

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// This is the release build (go build -tags nolocal, as deploy/Dockerfile
// does): it has no local mode. The Slack emulator, the browser sandbox and
// the embedded Redis (miniredis) are not compiled in, so a production
// binary cannot fall into them by a missing variable, and it is smaller.

// buildHelp is what --help says this build does with no configuration.
const buildHelp = `This build has no local mode (it was built with -tags nolocal): it needs
SLACK_BOT_TOKEN and a REDIS_URL of a real Redis. Build without the tag
(go run ./cmd/approvalbot) to try approvalbot locally.`

// errNoLocalMode is what this build says to a configuration only local
// mode could run.
var errNoLocalMode = errors.New("this build of approvalbot has no local mode (built with -tags nolocal): " +
	"set SLACK_BOT_TOKEN and REDIS_URL=redis://host:port/0 (not " + bot.MemoryRedisURL + "); " +
	"for the zero-configuration local mode with its Slack emulator and sandbox, build without the tag: " +
	"go run ./cmd/approvalbot")

// checkBuild refuses what only local mode provides: no SLACK_BOT_TOKEN (the
// Slack emulator) and no REDIS_URL or REDIS_URL=memory:// (the embedded
// Redis).
func checkBuild(cfg bot.Config) error {
	if cfg.LocalMode() || cfg.EmbeddedRedis() {
		return errNoLocalMode
	}
	return nil
}

// openRedis connects to REDIS_URL.
func openRedis(ctx context.Context, cfg bot.Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	return bot.OpenRedis(ctx, cfg, log)
}

// newSlack builds the Slack client of production mode; there is no sandbox.
func newSlack(cfg bot.Config, m *bot.Metrics, _ *slog.Logger) (*slack.Client, *slackout.ChatEndpoint, bot.Sandbox, error) {
	return bot.NewSlack(cfg, m), bot.NewSlackChat(cfg, m), nil, nil
}
