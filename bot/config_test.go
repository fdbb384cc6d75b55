package bot_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// Config tests set environment variables, so they do not run in parallel.

func TestConfigWithNothingSetRunsLocally(t *testing.T) {
	clearEnv(t)
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatalf("no configuration must start: %v", err)
	}
	if !cfg.LocalMode() || !cfg.EmbeddedRedis() {
		t.Errorf("local=%v embedded=%v, want both", cfg.LocalMode(), cfg.EmbeddedRedis())
	}
	if cfg.ListenAddr != bot.LocalListenAddr || cfg.SlackDefaultChannel != "#approvals" || !cfg.CallbackAllowPrivate ||
		cfg.SlackPostInterval != time.Second || cfg.IntakeMaxBodyBytes != 1<<20 {
		t.Errorf("unexpected defaults: %+v", cfg)
	}
}

// Local mode listens on loopback unless LISTEN_ADDR says otherwise: anyone
// who reaches it can act as any member of its sandbox. With a bot token the
// default is every interface.
func TestConfigListenAddrDefaults(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		name, token, listen string
		set                 bool
		want                string
	}{
		{"local mode", "", "", false, "127.0.0.1:8080"},
		{"local mode, set to nothing", "", "", true, "127.0.0.1:8080"},
		{"production, set to nothing", "xoxb-1", "", true, ":8080"},
		{"local mode, asked for every interface", "", ":8080", true, ":8080"},
		{"production", "xoxb-1", "", false, ":8080"},
		{"production, asked for one", "xoxb-1", "10.0.0.5:9000", true, "10.0.0.5:9000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			if tc.token != "" {
				t.Setenv("SLACK_BOT_TOKEN", tc.token)
				t.Setenv("SLACK_SIGNING_SECRET", "a-real-signing-secret")
				t.Setenv("INTAKE_TOKENS", "pm:"+strings.Repeat("t", 32))
				t.Setenv("CALLBACK_SECRET", "whsec_"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
				t.Setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
			}
			if tc.set {
				t.Setenv("LISTEN_ADDR", tc.listen)
			}
			cfg, err := bot.LoadConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ListenAddr != tc.want {
				t.Errorf("LISTEN_ADDR = %q, want %q", cfg.ListenAddr, tc.want)
			}
		})
	}
}

func TestConfigProductionNeedsSecrets(t *testing.T) {
	clearEnv(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxp-user-token")
	_, err := bot.LoadConfig()
	if err == nil {
		t.Fatal("a user token without a signing secret or intake tokens was accepted")
	}
	for _, want := range []string{"SLACK_BOT_TOKEN must be a bot token", "SLACK_SIGNING_SECRET is required",
		"INTAKE_TOKENS is required", "CALLBACK_SECRET is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "xoxp-user-token") {
		t.Errorf("the error message leaks the token: %v", err)
	}
}

func TestConfigReportsEveryProblem(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOG_LEVEL", "loud")
	t.Setenv("LOG_FORMAT", "xml")
	t.Setenv("SLACK_API_URL", "https://slack.com/api")
	t.Setenv("INTAKE_TOKENS", "planner:zq9x7")
	t.Setenv("WORKER_CONCURRENCY", "0")
	t.Setenv("JOB_LEASE", "1s")
	t.Setenv("SLACK_COMMAND", "approvals")
	_, err := bot.LoadConfig()
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, want := range []string{"LOG_LEVEL", "LOG_FORMAT", "SLACK_API_URL", "INTAKE_TOKENS", "WORKER_CONCURRENCY", "JOB_LEASE", "SLACK_COMMAND"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "zq9x7") {
		t.Errorf("the error message leaks a token: %v", err)
	}
}

func TestConfigProduction(t *testing.T) {
	clearEnv(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-1-2-3")
	t.Setenv("SLACK_SIGNING_SECRET", "secret")
	t.Setenv("INTAKE_TOKENS", "planner:0123456789abcdef0123, release-bot:fedcba9876543210fedc")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
	t.Setenv("CALLBACK_SECRET", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LocalMode() || cfg.EmbeddedRedis() || cfg.CallbackAllowPrivate || cfg.SlackDefaultChannel != "" || cfg.Tokens().Len() != 2 {
		t.Errorf("unexpected production config: %+v", cfg)
	}
	// A Cluster and a Sentinel-managed master are REDIS_URLs too; a bad one
	// is refused naming the variable, never echoing its password.
	for _, u := range []string{"redis+cluster://u:pw@10.0.0.1:6379,10.0.0.2:6379/", "rediss+sentinel://s1:26379,s2:26379/mymaster/0"} {
		t.Setenv("REDIS_URL", u)
		if _, err := bot.LoadConfig(); err != nil {
			t.Errorf("REDIS_URL=%s: %v", u, err)
		}
	}
	t.Setenv("REDIS_URL", "redis+cluster://u:hunter2@10.0.0.1:6379/1")
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), "REDIS_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a Cluster URL with a database: %v; want a refusal naming REDIS_URL without the password", err)
	}
}

// A real Slack token with no REDIS_URL is refused, saying why and how to opt
// in to the embedded store (REDIS_URL=memory://), so a production deploy
// never keeps its state in process memory by accident.
func TestConfigProductionRefusesAccidentalMemoryStore(t *testing.T) {
	clearEnv(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-1-2-3")
	t.Setenv("SLACK_SIGNING_SECRET", "secret")
	t.Setenv("INTAKE_TOKENS", "planner:0123456789abcdef0123")
	t.Setenv("CALLBACK_SECRET", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	_, err := bot.LoadConfig()
	if err == nil {
		t.Fatal("SLACK_BOT_TOKEN without REDIS_URL started on the in-memory store")
	}
	for _, want := range []string{"REDIS_URL is required with SLACK_BOT_TOKEN", "lost when it stops", "REDIS_URL=memory://"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// Opting in explicitly is allowed, in production mode and in local mode.
	t.Setenv("REDIS_URL", "memory://")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatalf("REDIS_URL=memory:// with a bot token: %v", err)
	}
	if cfg.LocalMode() || !cfg.EmbeddedRedis() {
		t.Errorf("local=%v embedded=%v; want production mode on the embedded store", cfg.LocalMode(), cfg.EmbeddedRedis())
	}
	clearEnv(t)
	t.Setenv("REDIS_URL", "memory://")
	if cfg, err := bot.LoadConfig(); err != nil || !cfg.LocalMode() || !cfg.EmbeddedRedis() {
		t.Errorf("REDIS_URL=memory:// in local mode: local=%v embedded=%v, %v", cfg.LocalMode(), cfg.EmbeddedRedis(), err)
	}
	// Anything else that is not a redis URL is still refused.
	t.Setenv("REDIS_URL", "memory://elsewhere")
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), "REDIS_URL must look like") {
		t.Errorf("REDIS_URL=memory://elsewhere: %v", err)
	}
}

// With SLACK_APP_TOKEN (Socket Mode) the signing secret may be left out;
// the token must be an app-level one, and local mode refuses it.
func TestConfigSocketMode(t *testing.T) {
	clearEnv(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-1-2-3")
	t.Setenv("SLACK_APP_TOKEN", "xapp-1-A0-1-secretpart")
	t.Setenv("INTAKE_TOKENS", "planner:0123456789abcdef0123")
	t.Setenv("CALLBACK_SECRET", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatalf("socket mode without a signing secret: %v", err)
	}
	if cfg.SlackAppToken != "xapp-1-A0-1-secretpart" || cfg.SlackSigningSecret != "" {
		t.Errorf("app token %q, signing secret %q", cfg.SlackAppToken, cfg.SlackSigningSecret)
	}
	t.Setenv("SLACK_APP_TOKEN", "xoxb-not-an-app-token")
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN must be an app-level token") ||
		strings.Contains(err.Error(), "not-an-app-token") {
		t.Errorf("a bot token as SLACK_APP_TOKEN: %v", err)
	}
	clearEnv(t)
	t.Setenv("SLACK_APP_TOKEN", "xapp-1-A0-1-secretpart")
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), "SLACK_APP_TOKEN needs SLACK_BOT_TOKEN") {
		t.Errorf("an app token in local mode: %v", err)
	}
}

// Every Redis client the bot builds bounds every wait from configuration,
// so a frozen Redis cannot hold a command for go-redis's defaults (5s dial
// tried 5 times, 3s reads, 3 retries), and honours its caller's deadline.
func TestConfigRedisOptionsBoundEveryWait(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDIS_URL", "redis://user:pw@10.0.0.7:6380/3")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := bot.NodeClientOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if opts.DialTimeout != time.Second || opts.ReadTimeout != time.Second || opts.WriteTimeout != time.Second ||
		opts.PoolTimeout != time.Second || opts.DialerRetries != 1 || opts.MaxRetries != 1 || !opts.ContextTimeoutEnabled {
		t.Errorf("default options: %+v", opts)
	}
	if opts.Addr != "10.0.0.7:6380" || opts.DB != 3 || opts.Username != "user" || opts.Password != "pw" {
		t.Errorf("REDIS_URL not carried over: %+v", opts)
	}
	if cfg.StoreRequestTimeout != 2*time.Second {
		t.Errorf("STORE_REQUEST_TIMEOUT default %s, want 2s", cfg.StoreRequestTimeout)
	}

	t.Setenv("REDIS_DIAL_TIMEOUT", "300ms")
	t.Setenv("REDIS_TIMEOUT", "250ms")
	if cfg, err = bot.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	if opts, _ = bot.NodeClientOptions(cfg); opts.DialTimeout != 300*time.Millisecond || opts.ReadTimeout != 250*time.Millisecond ||
		opts.WriteTimeout != 250*time.Millisecond || opts.PoolTimeout != 250*time.Millisecond {
		t.Errorf("configured options: %+v", opts)
	}

	// A request's store budget must leave its Slack ack time to arrive.
	t.Setenv("STORE_REQUEST_TIMEOUT", "3s")
	t.Setenv("REDIS_TIMEOUT", "0s")
	_, err = bot.LoadConfig()
	for _, want := range []string{"STORE_REQUEST_TIMEOUT must be from 10ms to 2.5s", "REDIS_DIAL_TIMEOUT and REDIS_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"LISTEN_ADDR", "REDIS_URL", "REDIS_PREFIX", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
		"SLACK_API_URL", "SLACK_DEFAULT_CHANNEL", "SLACK_POST_INTERVAL", "INTAKE_TOKENS", "INTAKE_MAX_BODY_BYTES",
		"CALLBACK_ALLOW_PRIVATE", "CALLBACK_SECRETS", "WORKER_CONCURRENCY", "JOB_LEASE", "JOB_MAX_ATTEMPTS", "JOB_POLL_INTERVAL",
		"SHUTDOWN_TIMEOUT", "LOG_LEVEL", "LOG_FORMAT", "CALLBACK_SECRET", "AUDIT_KEY", "SLACK_COMMAND", "REMINDER_INTERVAL", "REMINDER_MAX",
		"SLACK_APP_TOKEN", "SANDBOX_WORKSPACE", "ADMIN_USERS", "DEFAULT_REVIEWERS", "DEFAULT_REVIEWER_GROUPS",
		"APPROVAL_QUORUM", "ALLOW_SELF_APPROVAL", "REQUIRE_REASON", "POLICY_OVERRIDE_AGENTS",
		"REDIS_DIAL_TIMEOUT", "REDIS_TIMEOUT", "STORE_REQUEST_TIMEOUT", "NOTIFY_REQUESTER", "ADMIN_ADDR"} {
		t.Setenv(k, "") // restores the original value after the test
		_ = os.Unsetenv(k)
	}
}

// A value that does not parse as its type is reported with the setting's
// name and what it must look like (envconfig's own message named the Go
// field and type).
func TestConfigUnparsableValueNamesTheSetting(t *testing.T) {
	for name, tc := range map[string]struct{ value, want string }{
		"REMINDER_MAX":     {"abc", `REMINDER_MAX must be a whole number, got "abc"`},
		"NOTIFY_REQUESTER": {"no", `NOTIFY_REQUESTER must be true or false, got "no"`},
		"JOB_LEASE":        {"xyz", `JOB_LEASE must be a duration (like 90s, 5m or 1h30m), got "xyz"`},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(name, tc.value)
			if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
