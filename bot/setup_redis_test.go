package bot_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
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
			rdb, closeRedis, err := bot.OpenRedis(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
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
