package bot_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// clearDeployEnv is clearEnv and the settings of deploy/ (compose, the Helm
// chart) besides.
func clearDeployEnv(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"REQUIRE_REDIS", "SHUTDOWN_DRAIN_DELAY"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
}

// REQUIRE_REDIS=true, as deploy/compose.yaml and the Helm chart set it,
// refuses the embedded store in every mode: REDIS_URL unset or memory://,
// with or without a bot token, so a lost variable fails the start instead
// of keeping production state in memory. A real REDIS_URL passes, with a
// bot token: without one (a lost secret) local mode is refused too.
func TestConfigRequireRedisRefusesTheEmbeddedStore(t *testing.T) {
	production := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-3", "SLACK_SIGNING_SECRET": "secret",
		"INTAKE_TOKENS": "planner:0123456789abcdef0123", "CALLBACK_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	for _, mode := range []string{"local", "production"} {
		for _, redisURL := range []string{"", "memory://"} {
			clearDeployEnv(t)
			if mode == "production" {
				for k, v := range production {
					t.Setenv(k, v)
				}
			}
			t.Setenv("REDIS_URL", redisURL)
			if _, err := bot.LoadConfig(); err != nil && (mode == "local" || redisURL != "") {
				t.Fatalf("%s mode, REDIS_URL=%q without REQUIRE_REDIS: %v", mode, redisURL, err)
			}
			t.Setenv("REQUIRE_REDIS", "true")
			_, err := bot.LoadConfig()
			if err == nil || !strings.Contains(err.Error(), "REQUIRE_REDIS=true") {
				t.Errorf("%s mode, REDIS_URL=%q, REQUIRE_REDIS=true: %v; want the embedded store refused", mode, redisURL, err)
			}
			t.Setenv("REDIS_URL", "redis://redis:6379/0")
			cfg, err := bot.LoadConfig()
			if mode == "local" {
				// A deployment that lost its bot token: refused to serve,
				// not run in local mode on the production Redis; the audit
				// commands (which load the same configuration) still run.
				if err != nil {
					t.Errorf("local mode, a real REDIS_URL with REQUIRE_REDIS=true: %v; the audit commands need it", err)
				} else if err := cfg.CheckServe(); err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN is required with REQUIRE_REDIS=true") {
					t.Errorf("local mode, a real REDIS_URL with REQUIRE_REDIS=true, serving: %v; want local mode refused", err)
				}
			} else if err != nil || !cfg.RequireRedis || cfg.EmbeddedRedis() || cfg.CheckServe() != nil {
				t.Errorf("%s mode, a real REDIS_URL with REQUIRE_REDIS=true: %v", mode, err)
			}
		}
	}
}

// SHUTDOWN_DRAIN_DELAY defaults to a few seconds and is bounded.
func TestConfigShutdownDrainDelay(t *testing.T) {
	clearDeployEnv(t)
	cfg, err := bot.LoadConfig()
	if err != nil || cfg.ShutdownDrainDelay != 5*time.Second {
		t.Fatalf("default SHUTDOWN_DRAIN_DELAY = %s, %v; want 5s", cfg.ShutdownDrainDelay, err)
	}
	for value, ok := range map[string]bool{"0": true, "0s": true, "15s": true, "1m": true, "-1s": false, "2m": false} {
		t.Setenv("SHUTDOWN_DRAIN_DELAY", value)
		_, err := bot.LoadConfig()
		if ok != (err == nil) || (!ok && !strings.Contains(err.Error(), "SHUTDOWN_DRAIN_DELAY")) {
			t.Errorf("SHUTDOWN_DRAIN_DELAY=%s: %v", value, err)
		}
	}
}

// The public local-mode signing secret is refused with a bot token, as the
// public callback secret is: anyone could sign /slack/* requests with it
// (in Socket Mode too, where any signing secret serves /slack/*).
func TestConfigProductionRefusesThePublicLocalSigningSecret(t *testing.T) {
	clearDeployEnv(t)
	for k, v := range map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-3", "SLACK_APP_TOKEN": "xapp-1-2-3",
		"SLACK_SIGNING_SECRET": bot.LocalSigningSecret, "INTAKE_TOKENS": "planner:0123456789abcdef0123",
		"REDIS_URL": "redis://127.0.0.1:6379/0", "CALLBACK_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="} {
		t.Setenv(k, v)
	}
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), "SLACK_SIGNING_SECRET is the public local-mode secret") {
		t.Fatalf("production with the public local signing secret: %v; want it refused", err)
	}
}
