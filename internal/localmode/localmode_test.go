package localmode_test

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/localmode"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/prometheus/client_golang/prometheus"
)

// The embedded Redis OpenRedis starts (no REDIS_URL, or REDIS_URL=memory://)
// expires keys as Redis does; miniredis left to itself never did, which
// held every channel's pacing slot forever. Both ways of asking for it warn
// that nothing survives a restart. Only "eventually gone" is checked: the
// bound turns a hang into a failure, it is not a speed target.
func TestOpenRedisEmbeddedExpiresKeys(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]bot.Config{
		"no REDIS_URL":              {},
		"REDIS_URL=memory:// + bot": {RedisURL: bot.MemoryRedisURL, SlackBotToken: "xoxb-1-2-3"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			rdb, closeRedis, err := localmode.OpenRedis(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer closeRedis()
			if !strings.Contains(logs.String(), "LOST when this process stops") {
				t.Errorf("no loud warning that state is lost:\n%s", logs.String())
			}
			if cfg.SlackBotToken != "" && !strings.Contains(logs.String(), "WITH A REAL SLACK TOKEN") {
				t.Errorf("memory:// with a bot token is not called out:\n%s", logs.String())
			}
			if err := rdb.Set(t.Context(), "k", 1, 20*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				n, err := rdb.Exists(t.Context(), "k").Result()
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a key set with PX 20 still exists 30s later")
				}
			}
		})
	}
}

// Production mode (a real bot token) builds no emulator and no sandbox:
// NewSlack hands out bot.NewSlack's client alone. (That the service then
// serves nothing under /sandbox/ is bot's TestProductionModeServesNoSandbox.)
func TestProductionModeBuildsNoSandbox(t *testing.T) {
	t.Parallel()
	cfg := bot.Config{SlackBotToken: "xoxb-real", SlackAPIURL: "https://slack.example/api/"}
	setup, err := localmode.NewSlack(cfg, bot.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Client == nil {
		t.Fatal("production mode built no Slack client")
	}
	if setup.Emulator != nil || setup.Sandbox != nil {
		t.Fatalf("production mode built a sandbox: emulator %v, sandbox %v", setup.Emulator != nil, setup.Sandbox != nil)
	}
}

// bot.LocalDefaultReviewers spells out the built-in workspace's reviewers
// rather than importing the emulator; they must stay its Alice and Bob.
func TestLocalDefaultReviewersAreTheSandboxReviewers(t *testing.T) {
	t.Parallel()
	if want := []string{slackemu.UserAlice, slackemu.UserBob}; !slices.Equal(bot.LocalDefaultReviewers, want) {
		t.Errorf("bot.LocalDefaultReviewers = %v, want the emulator's reviewers %v", bot.LocalDefaultReviewers, want)
	}
	for _, id := range bot.LocalDefaultReviewers {
		if !slices.ContainsFunc(slackemu.DefaultWorkspace().Users, func(u slackemu.User) bool { return u.ID == id }) {
			t.Errorf("%s is not a member of the built-in workspace", id)
		}
	}
}

// BaseURL is where a browser on this machine finds LISTEN_ADDR.
func TestBaseURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		":8080": "http://localhost:8080", "0.0.0.0:9000": "http://localhost:9000", "[::]:80": "http://localhost:80",
		"127.0.0.1:8081": "http://localhost:8081", "192.0.2.7:8080": "http://192.0.2.7:8080", "not an address": "http://localhost:8080",
	} {
		if got := localmode.BaseURL(addr); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
