package bot

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/webhook"
	"github.com/kelseyhightower/envconfig"
)

// Config is every setting of approvalbot, read from the environment. The
// configuration table in docs/configuration.md documents each one (a test
// checks that every setting has a row).
type Config struct {
	ListenAddr string `envconfig:"LISTEN_ADDR" default:":8080"`
	// AdminAddr, when set, is a second listener serving only the
	// operators' endpoints (/debug/pprof/, /metrics): bind it to loopback
	// or a private interface, never where agents or Slack reach (admin.go).
	AdminAddr       string        `envconfig:"ADMIN_ADDR"`
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"20s"`
	// ShutdownDrainDelay is how long /readyz answers 503 at SIGTERM while
	// the listener still serves, so load balancers stop sending traffic
	// before it closes (lifecycle.go).
	ShutdownDrainDelay time.Duration `envconfig:"SHUTDOWN_DRAIN_DELAY" default:"5s"`
	LogLevel           string        `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat          string        `envconfig:"LOG_FORMAT" default:"text"`

	RedisURL    string `envconfig:"REDIS_URL"`
	RedisPrefix string `envconfig:"REDIS_PREFIX" default:"ab"`
	// RequireRedis refuses the embedded store (REDIS_URL unset or
	// memory://) in any mode and build: deployments set it so a lost
	// variable fails the start instead of keeping state in memory.
	RequireRedis bool `envconfig:"REQUIRE_REDIS" default:"false"`
	// RedisDialTimeout bounds opening one connection to Redis, and
	// RedisTimeout one command's write and read and the wait for a pooled
	// connection, on every client built (redis.go). They bound work that has no deadline of
	// its own, such as jobs.
	RedisDialTimeout time.Duration `envconfig:"REDIS_DIAL_TIMEOUT" default:"1s"`
	RedisTimeout     time.Duration `envconfig:"REDIS_TIMEOUT" default:"1s"`
	// StoreRequestTimeout is the deadline of the Redis work of one agent
	// API request or one Slack interaction or command, from its arrival:
	// past it the API answers 503 with Retry-After and Slack's reviewer is
	// told to try again, inside Slack's 3-second ack deadline.
	StoreRequestTimeout time.Duration `envconfig:"STORE_REQUEST_TIMEOUT" default:"2s"`

	SlackBotToken       string        `envconfig:"SLACK_BOT_TOKEN"`
	SlackSigningSecret  string        `envconfig:"SLACK_SIGNING_SECRET"`
	SlackAPIURL         string        `envconfig:"SLACK_API_URL" default:"https://slack.com/api/"`
	SlackDefaultChannel string        `envconfig:"SLACK_DEFAULT_CHANNEL"`
	SlackPostInterval   time.Duration `envconfig:"SLACK_POST_INTERVAL" default:"1s"`
	// SlackCommand is the slash command served at /slack/commands.
	SlackCommand string `envconfig:"SLACK_COMMAND" default:"/approvals"`
	// SlackAppToken (xapp-…) turns on Socket Mode: Slack's requests come
	// over a WebSocket the bot opens, so it needs no public URL.
	SlackAppToken string `envconfig:"SLACK_APP_TOKEN"`
	// SandboxWorkspace is a JSON file describing local mode's emulated
	// workspace (members, channels, user groups); see
	// internal/slackemu.ParseWorkspace.
	SandboxWorkspace string `envconfig:"SANDBOX_WORKSPACE"`

	IntakeTokens       string `envconfig:"INTAKE_TOKENS"`
	IntakeMaxBodyBytes int64  `envconfig:"INTAKE_MAX_BODY_BYTES" default:"1048576"`
	// Per-agent intake limits (webhook.Limits): a token bucket of new
	// requests and a cap on open ones, each with per-agent overrides. The
	// defaults are far above what a working agent sends (a sustained 2 a
	// second; 1000 awaiting humans) and stop only a runaway one.
	IntakeRate             string `envconfig:"INTAKE_RATE" default:"120/m:60"`
	IntakeRateOverrides    string `envconfig:"INTAKE_RATE_OVERRIDES"`
	IntakeMaxOpen          int    `envconfig:"INTAKE_MAX_OPEN" default:"1000"`
	IntakeMaxOpenOverrides string `envconfig:"INTAKE_MAX_OPEN_OVERRIDES"`

	CallbackAllowPrivate bool   `envconfig:"CALLBACK_ALLOW_PRIVATE" default:"false"`
	CallbackSecret       string `envconfig:"CALLBACK_SECRET"`
	// CallbackSecrets give agents their own callback keys (config_callbacks.go).
	CallbackSecrets string `envconfig:"CALLBACK_SECRETS"`
	AuditKey        string `envconfig:"AUDIT_KEY"`
	// Retention is how long closed requests, and audit entries already
	// exported, are kept (bot/retention.go); 0 keeps everything.
	Retention Retention `envconfig:"RETENTION" default:"0"`
	// EventsRetention is how long progress events are kept, so a client
	// can resume a stream (store/progress.go); EventsMaxStreams caps the
	// event streams one process serves (webhook.EventHub).
	EventsRetention  time.Duration `envconfig:"EVENTS_RETENTION" default:"24h"`
	EventsMaxStreams int           `envconfig:"EVENTS_MAX_STREAMS" default:"1000"`

	// Who may decide, workspace-wide (see bot/config_policy.go and the README).
	AdminUsers            []string      `envconfig:"ADMIN_USERS"`
	DefaultReviewers      []string      `envconfig:"DEFAULT_REVIEWERS"`
	DefaultReviewerGroups []string      `envconfig:"DEFAULT_REVIEWER_GROUPS"`
	ApprovalQuorum        int           `envconfig:"APPROVAL_QUORUM" default:"1"`
	AllowSelfApproval     bool          `envconfig:"ALLOW_SELF_APPROVAL" default:"false"`
	RequireReason         bool          `envconfig:"REQUIRE_REASON" default:"false"`
	DirectoryCacheTTL     time.Duration `envconfig:"DIRECTORY_CACHE_TTL" default:"5m"`

	// ReviewerTokens are the bearer tokens of people who decide through the
	// API, each mapped to their Slack user (<user id>:<token>,...);
	// AgentApprovers grant INTAKE_TOKENS agents the right to decide through
	// it with a Slack user's authority (<agent>:<user id>,...).
	ReviewerTokens string   `envconfig:"REVIEWER_TOKENS"`
	AgentApprovers []string `envconfig:"AGENT_APPROVERS"`

	// StandingApprovalMax is the longest standing approval ("Approve
	// similar for…") a reviewer may grant, 0 for none; only
	// StandingApprovalGranters (user ids, user group ids) may grant when
	// set, else anyone who may approve the decision (config_grants.go).
	StandingApprovalMax      time.Duration `envconfig:"STANDING_APPROVAL_MAX" default:"1h"`
	StandingApprovalGranters []string      `envconfig:"STANDING_APPROVAL_GRANTERS"`

	// PolicyOverrideAgents are the agents (INTAKE_TOKENS names) whose
	// requests may loosen APPROVAL_QUORUM, ALLOW_SELF_APPROVAL and
	// REQUIRE_REASON; for every other agent they are a floor.
	PolicyOverrideAgents []string `envconfig:"POLICY_OVERRIDE_AGENTS"`

	ReminderInterval time.Duration `envconfig:"REMINDER_INTERVAL" default:"4h"`
	ReminderMax      int           `envconfig:"REMINDER_MAX" default:"3"`
	// NotifyRequester DMs a request's requester how it ended (resolved,
	// expired, withdrawn): store.Options.NotifyJobs.
	NotifyRequester bool `envconfig:"NOTIFY_REQUESTER" default:"true"`

	// WorkerConcurrency is how many jobs one process runs at once. Jobs
	// mostly wait on Slack (I/O), and Slack's limits are kept by per-channel
	// pacing and per-method holds, not by this: 4 capped a process at about
	// 38 posts/s when Slack answers in 50 ms, 32 reached about 290
	// (BenchmarkPostsWithSlowSlack).
	WorkerConcurrency int           `envconfig:"WORKER_CONCURRENCY" default:"32"`
	JobLease          time.Duration `envconfig:"JOB_LEASE" default:"60s"`
	JobMaxAttempts    int           `envconfig:"JOB_MAX_ATTEMPTS" default:"12"`
	JobPollInterval   time.Duration `envconfig:"JOB_POLL_INTERVAL" default:"250ms"`

	// Derived by Load, not read from the environment.
	tokens    webhook.Tokens
	limits    webhook.Limits
	reviewers webhook.Reviewers
	approvers map[string]string
	// callbackSecrets: CALLBACK_SECRETS by agent.
	callbackSecrets map[string]string
}

// LocalDefaultChannel is where local mode posts when no channel is configured.
const LocalDefaultChannel = "#approvals"

// LocalListenAddr is LISTEN_ADDR's default in local mode: loopback only.
// (With SLACK_BOT_TOKEN the default is ":8080", every interface.)
const LocalListenAddr = "127.0.0.1:8080"

// LocalSigningSecret verifies Slack requests in local mode when
// SLACK_SIGNING_SECRET is unset; the local sandbox signs with it. Public.
const LocalSigningSecret = "approvalbot-local-signing-secret"

// LocalCallbackSecret signs callbacks in local mode when CALLBACK_SECRET is
// unset. It is public (it is in the README): never use it in production.
const LocalCallbackSecret = "whsec_YXBwcm92YWxib3QtbG9jYWwtZGV2ZWxvcG1lbnQ="

// LoadConfig reads the environment, applies local-mode defaults, and
// validates everything, reporting every problem at once.
func LoadConfig() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		var pe *envconfig.ParseError
		if errors.As(err, &pe) {
			if want := typeDescription(pe.TypeName); want != "" {
				// Only numbers, durations and booleans fail to parse (no
				// secret is one), so the value can be shown.
				return Config{}, fmt.Errorf("read configuration: %s must be %s, got %q", pe.KeyName, want, pe.Value)
			}
			return Config{}, fmt.Errorf("read configuration: %w", pe.Err) // a setting's own type says what is wrong
		}
		return Config{}, fmt.Errorf("read configuration: %w", err)
	}
	if listen, _ := os.LookupEnv("LISTEN_ADDR"); listen == "" { // unset, or set to nothing
		c.ListenAddr = ":8080"
		if c.LocalMode() {
			// Anyone who reaches a local bot can act as any member of its
			// sandbox: other machines are kept out unless asked for.
			c.ListenAddr = LocalListenAddr
		}
	}
	if c.LocalMode() {
		if c.SlackDefaultChannel == "" {
			c.SlackDefaultChannel = LocalDefaultChannel
		}
		if c.CallbackSecret == "" {
			c.CallbackSecret = LocalCallbackSecret
		}
		if c.SlackSigningSecret == "" {
			c.SlackSigningSecret = LocalSigningSecret
		}
		c.CallbackAllowPrivate = true
		c.applyLocalReviewers()
	}
	return c, c.validate()
}

// LocalMode is true without SLACK_BOT_TOKEN: the bot then talks to its
// built-in Slack emulator instead of Slack.
func (c Config) LocalMode() bool { return c.SlackBotToken == "" }

// MemoryRedisURL is the REDIS_URL that asks for the embedded in-memory store
// explicitly, in any mode (production mode refuses an unset REDIS_URL).
const MemoryRedisURL = "memory://"

// EmbeddedRedis is true without REDIS_URL or with REDIS_URL=memory://:
// state lives in process memory.
func (c Config) EmbeddedRedis() bool { return c.RedisURL == "" || c.RedisURL == MemoryRedisURL }

// Tokens are the parsed INTAKE_TOKENS.
func (c Config) Tokens() webhook.Tokens { return c.tokens }

// Reviewers are the parsed REVIEWER_TOKENS.
func (c Config) Reviewers() webhook.Reviewers { return c.reviewers }

// AgentApproverGrants are the parsed AGENT_APPROVERS: agent -> the Slack
// user whose authority it decides with.
func (c Config) AgentApproverGrants() map[string]string { return c.approvers }

// WithDeciders returns c with REVIEWER_TOKENS and AGENT_APPROVERS set and
// checked as LoadConfig does, for programs and tests that build a Config in
// code (set the tokens first: approvers must be INTAKE_TOKENS agents).
func (c Config) WithDeciders(reviewerTokens string, agentApprovers []string) (Config, error) {
	c.ReviewerTokens, c.AgentApprovers = reviewerTokens, agentApprovers
	var probs []string
	c.validateDeciders(func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) })
	if len(probs) > 0 {
		return c, errors.New(strings.Join(probs, "; "))
	}
	return c, nil
}

// Limits are the parsed per-agent intake limits (INTAKE_RATE, INTAKE_MAX_OPEN
// and their overrides).
func (c Config) Limits() webhook.Limits { return c.limits }

// SlogLevel is LOG_LEVEL as a slog level.
func (c Config) SlogLevel() slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel))
	return l
}

func (c *Config) validate() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	var err error
	if c.tokens, err = webhook.ParseTokens(c.IntakeTokens); err != nil {
		add("%v", err)
	}
	if c.LocalMode() && c.SlackAppToken != "" {
		add("SLACK_APP_TOKEN needs SLACK_BOT_TOKEN: local mode talks to the built-in emulator, not to Slack")
	}
	if !c.LocalMode() {
		if !strings.HasPrefix(c.SlackBotToken, "xoxb-") {
			add("SLACK_BOT_TOKEN must be a bot token (xoxb-…)")
		}
		if c.SlackSigningSecret == "" && c.SlackAppToken == "" {
			add("SLACK_SIGNING_SECRET is required with SLACK_BOT_TOKEN unless SLACK_APP_TOKEN is set (Socket Mode): Slack's requests cannot be verified without it")
		}
		if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
			add("SLACK_APP_TOKEN must be an app-level token (xapp-…) with the connections:write scope")
		}
		if c.IntakeTokens == "" {
			add("INTAKE_TOKENS is required with SLACK_BOT_TOKEN: agents must authenticate (name:token,...)")
		}
		if c.CallbackSecret == "" {
			add("CALLBACK_SECRET is required with SLACK_BOT_TOKEN: decision responses are signed with it (whsec_<base64>)")
		}
		if c.RedisURL == "" {
			add("REDIS_URL is required with SLACK_BOT_TOKEN: without it every request, answer and queued post would live " +
				"in this process's memory and be lost when it stops. Point it at your Redis (redis://host:port/0), or set " +
				"REDIS_URL=" + MemoryRedisURL + " to run on the embedded in-memory store anyway")
		}
		if c.CallbackSecret == LocalCallbackSecret {
			add("CALLBACK_SECRET is the public local-mode secret; generate your own for production")
		}
		if c.SlackSigningSecret == LocalSigningSecret {
			// Published with the code: anyone could sign /slack/* requests
			// as any Slack user.
			add("SLACK_SIGNING_SECRET is the public local-mode secret; use your Slack app's signing secret")
		}
	}
	if c.RequireRedis && c.EmbeddedRedis() {
		add("REDIS_URL must name a real Redis with REQUIRE_REDIS=true (got %q): the embedded in-memory store is refused", c.RedisURL)
	}

	c.validateAdminAddr(add)
	if c.ShutdownDrainDelay < 0 || c.ShutdownDrainDelay > time.Minute {
		add("SHUTDOWN_DRAIN_DELAY must be from 0 to 1m")
	}
	if u, err := url.Parse(c.SlackAPIURL); err != nil || !u.IsAbs() || !strings.HasSuffix(u.Path, "/") {
		add("SLACK_API_URL must be an absolute URL ending in /, e.g. https://slack.com/api/")
	}
	if !c.EmbeddedRedis() {
		if _, err := parseRedisURL(c.RedisURL); err != nil {
			add("REDIS_URL must look like redis://[user:password@]host:port/db (one node), "+
				"redis+cluster://[user:password@]host1:port1,host2:port2/ (a Redis Cluster), "+
				"redis+sentinel://[user:password@]sentinel1:port1,sentinel2:port2/<master name>/db (Sentinel), "+
				"rediss… for TLS, or "+MemoryRedisURL+" (%v)", err)
		}
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		add("LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		add("LOG_FORMAT must be text or json, got %q", c.LogFormat)
	}
	if c.CallbackSecret != "" && !validWebhookSecret(c.CallbackSecret) {
		add("CALLBACK_SECRET must be whsec_ followed by base64 of at least 24 random bytes")
	}
	if c.IntakeMaxBodyBytes < 1024 {
		add("INTAKE_MAX_BODY_BYTES must be at least 1024")
	}
	if c.SlackPostInterval < 0 || c.ShutdownTimeout <= 0 {
		add("SLACK_POST_INTERVAL must not be negative and SHUTDOWN_TIMEOUT must be positive")
	}
	if c.WorkerConcurrency < 1 || c.WorkerConcurrency > 256 {
		add("WORKER_CONCURRENCY must be from 1 to 256")
	}
	if c.JobLease < 5*time.Second {
		add("JOB_LEASE must be at least 5s (Slack calls run within 3/4 of it)")
	}
	if c.JobPollInterval < 10*time.Millisecond || c.JobPollInterval > time.Minute {
		add("JOB_POLL_INTERVAL must be from 10ms to 1m")
	}
	if !strings.HasPrefix(c.SlackCommand, "/") || strings.ContainsAny(c.SlackCommand, " \t") {
		add("SLACK_COMMAND must be a slash command like /approvals, got %q", c.SlackCommand)
	}
	if c.ReminderInterval < time.Minute {
		add("REMINDER_INTERVAL must be at least 1m")
	}
	if c.ReminderMax < 0 || c.ReminderMax > 10 {
		add("REMINDER_MAX must be from 0 (no reminders) to 10")
	}
	if c.RedisDialTimeout < 10*time.Millisecond || c.RedisDialTimeout > 30*time.Second ||
		c.RedisTimeout < 10*time.Millisecond || c.RedisTimeout > 30*time.Second {
		add("REDIS_DIAL_TIMEOUT and REDIS_TIMEOUT must be from 10ms to 30s")
	}
	if c.StoreRequestTimeout < 10*time.Millisecond || c.StoreRequestTimeout > MaxStoreRequestTimeout {
		add("STORE_REQUEST_TIMEOUT must be from 10ms to %s (Slack wants its ack within 3s)", MaxStoreRequestTimeout)
	}
	if c.JobMaxAttempts < 1 {
		add("JOB_MAX_ATTEMPTS must be at least 1")
	}
	c.validateAuthorization(add)
	c.validateLimits(add)
	c.validateRetention(add)
	c.validateGrants(add)
	c.validateCallbackSecrets(add)
	if c.EventsRetention < time.Minute {
		add("EVENTS_RETENTION must be at least 1m, got %s: a client resumes an event stream within it", c.EventsRetention)
	}
	if c.EventsMaxStreams < 1 {
		add("EVENTS_MAX_STREAMS must be at least 1, got %d", c.EventsMaxStreams)
	}
	c.validatePlaceholders(add)
	if c.RedisPrefix == "" || strings.ContainsAny(c.RedisPrefix, "{} ") {
		add("REDIS_PREFIX must be non-empty without braces or spaces")
	}
	if len(probs) > 0 {
		return errors.New("invalid configuration:\n  - " + strings.Join(probs, "\n  - "))
	}
	return nil
}

// WithTokens returns c with INTAKE_TOKENS set to spec and parsed, for
// programs and tests that build a Config in code.
func (c Config) WithTokens(spec string) (Config, error) {
	tokens, err := webhook.ParseTokens(spec)
	if err != nil {
		return c, err
	}
	c.IntakeTokens, c.tokens = spec, tokens
	return c, nil
}

// WithLimits returns c with INTAKE_RATE, INTAKE_RATE_OVERRIDES,
// INTAKE_MAX_OPEN and INTAKE_MAX_OPEN_OVERRIDES set and parsed as
// LoadConfig does, for programs and tests that build a Config in code (set
// the tokens first: overrides must name their agents).
func (c Config) WithLimits(rate, rateOverrides string, maxOpen int, maxOpenOverrides string) (Config, error) {
	c.IntakeRate, c.IntakeRateOverrides, c.IntakeMaxOpen, c.IntakeMaxOpenOverrides = rate, rateOverrides, maxOpen, maxOpenOverrides
	var probs []string
	c.validateLimits(func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) })
	if len(probs) > 0 {
		return c, errors.New(strings.Join(probs, "; "))
	}
	return c, nil
}

// validWebhookSecret checks the Standard Webhooks secret format.
func validWebhookSecret(s string) bool {
	raw, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	return err == nil && len(b) >= 24
}

// typeDescription names what a setting of Go type name must look like, ""
// for a type of the bot's own (its parse error says).
func typeDescription(name string) string {
	switch {
	case strings.HasSuffix(name, "Duration"):
		return "a duration (like 90s, 5m or 1h30m)"
	case name == "bool":
		return "true or false"
	case strings.HasPrefix(name, "int") || strings.HasPrefix(name, "uint"):
		return "a whole number"
	case strings.HasPrefix(name, "float"):
		return "a number"
	}
	return ""
}

// CheckServe refuses to serve a configuration that is valid for the other
// commands (audit verify and export need only Redis): REQUIRE_REDIS=true
// without SLACK_BOT_TOKEN. Deployments set REQUIRE_REDIS; a lost bot token
// must fail the start, not serve the sandbox, accept the public signing
// secret and call back private addresses, on the production Redis.
func (c Config) CheckServe() error {
	if c.RequireRedis && c.LocalMode() {
		return errors.New("SLACK_BOT_TOKEN is required with REQUIRE_REDIS=true (a deployment): without it the bot " +
			"would start in local mode, with the built-in Slack emulator and sandbox")
	}
	return nil
}
