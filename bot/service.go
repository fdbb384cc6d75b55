// Package bot is approvalbot's service: it wires the intake API, the Redis
// store, Slack's inbound requests (package handlers) and the jobs that send
// to Slack (package slackout) together, drains the outbox with a job runner
// (package jobs), and serves HTTP; Run owns the lifecycle of all of it.
// cmd/approvalbot only reads configuration, opens what the service needs and
// calls Run.
package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/handlers"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/mcpserver"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/slack-go/slack"
)

// Deps are the service's collaborators, built by main.
type Deps struct {
	Config Config
	// Store should be built with store.Options.HomeJobs, so App Home tabs
	// follow requests as they are created, escalated and closed.
	Store *store.Store
	Slack interface {
		slackout.SlackAPI
		handlers.SlackAPI
		DirectoryAPI
		AuthTester
	}
	// Metrics must be the Metrics whose transport instruments Slack.
	Metrics  *Metrics
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// Sandbox is local mode's browser sandbox (internal/sandbox), served
	// under /sandbox/; nil in production mode.
	Sandbox Sandbox
	// RateLimitHold overrides how long a 429 without Retry-After holds a
	// channel (tests shorten it).
	RateLimitHold time.Duration
	// SlackAuthRetry overrides the first wait before auth.test is tried
	// again at start (default 1s, doubling to 1m; tests shorten it).
	SlackAuthRetry time.Duration
	// CommandBudget overrides how long a slash command may work before it
	// is acked with "working on it" (default 2s; tests on a loaded machine
	// lengthen it so a listing always answers in its ack).
	CommandBudget time.Duration
	// GrantLookupBudget overrides how long matching a new request against
	// the standing approvals may take before it is posted as usual
	// (approval.StandingApprovals.LookupBudget, default 500ms; tests on a
	// loaded machine lengthen it so every match finishes).
	GrantLookupBudget time.Duration
	// Now is the clock of intake, decisions and timers; it must be the
	// store's (store.Options.Now). Default time.Now.
	Now func() time.Time
	// SlackChat is where requests' own messages are posted: the same
	// chat.postMessage as Slack's, with a lighter read of its answer
	// (slackout.ChatEndpoint). Nil posts them through Slack.
	SlackChat *slackout.ChatEndpoint
	// SocketMode is a Slack client carrying the app-level token
	// (slack.OptionAppLevelToken), required when Config.SlackAppToken is
	// set: Slack's requests then also arrive over Socket Mode.
	SocketMode *slack.Client
	// RetentionInterval overrides how often each shard's retention sweep
	// runs when RETENTION is set (default 1h).
	RetentionInterval time.Duration
	// EventsHeartbeat overrides how often an idle event stream sends a
	// heartbeat comment (default 15s).
	EventsHeartbeat time.Duration
	// DrainTimer overrides how Run waits SHUTDOWN_DRAIN_DELAY (default
	// time.After; tests end the wait themselves).
	DrainTimer func(time.Duration) <-chan time.Time
}

// Sandbox is what the service needs of local mode's browser sandbox: it is
// served under /sandbox/, sends Slack's requests to the service's handler
// (Attach, called by NewService), and ends its live update streams before
// the HTTP server shuts down (Close, called by Run).
type Sandbox interface {
	http.Handler
	Attach(bot http.Handler)
	Close()
}

// Service is a running approvalbot.
type Service struct {
	deps    Deps
	runner  *jobs.Runner
	async   *handlers.Async
	handler http.Handler
	socket  *handlers.SocketMode // nil without Socket Mode
	// auth confirms the bot token before jobs run; nil in local mode,
	// whose emulator accepts its own token.
	auth *slackAuth
	// stopChanges ends the change feed of long polls (see Close).
	stopChanges context.CancelFunc
	// drain turns /readyz unready when Run begins shutting down.
	drain *drainState
	// mcp is the MCP endpoint (/mcp); Close ends its tools' waits.
	mcp *mcpserver.HTTPHandler
}

// NewService builds the service from its dependencies.
func NewService(d Deps) (*Service, error) {
	if d.Store == nil || d.Slack == nil || d.Registry == nil || d.Logger == nil || d.Metrics == nil {
		return nil, errors.New("bot: service needs a store, a Slack client, metrics, a registry and a logger")
	}
	cfg := d.Config
	if d.Now == nil {
		d.Now = time.Now
	}
	// One directory: the poster's lookups warm the cache authorization reads.
	directory := NewDirectory(d.Slack, cfg.DirectoryCacheTTL, d.Registry)
	reminders := aah.ReminderPlan{Every: cfg.ReminderInterval, Max: cfg.ReminderMax}
	grants := cfg.StandingApprovals(d.Store)
	grants.LookupBudget = d.GrantLookupBudget
	decider := approval.New(d.Store, approval.Options{Now: d.Now, Policy: cfg.Policy(), Directory: directory,
		Reminders: reminders, Metrics: d.Metrics.Decisions, Grants: grants,
		// The timer kinds this service registers a job handler for, below.
		TimerKinds: map[string]bool{store.JobExpire: true, store.JobEscalate: true, store.JobRemind: true}})
	deliverer, err := webhook.NewDeliverer(webhook.DelivererOptions{
		Store: d.Store, Secret: cfg.CallbackSecret, AgentSecrets: cfg.AgentCallbackSecrets(), AllowPrivate: cfg.CallbackAllowPrivate,
		Registerer: d.Registry, Logger: d.Logger.With("component", "delivery"),
	})
	if err != nil {
		return nil, err
	}
	// The runner is built once the home job has the Slack handlers it uses;
	// the handlers wake it through this variable.
	var runner *jobs.Runner
	async := handlers.NewAsync(8, 1024).WithLogger(d.Logger.With("component", "slack-async"))
	slackHandlers, err := handlers.New(handlers.Options{
		SigningSecret: cfg.SlackSigningSecret, Decisions: decider, Requests: d.Store,
		Slack: d.Slack, Async: async, Logger: d.Logger.With("component", "slack"), Registry: d.Registry,
		Wake: func(id string) { runner.WakeFor(id) }, Command: cfg.SlackCommand, Now: d.Now, Lists: d.Store, Home: d.Store,
		Defaults: cfg.Policy().Defaults, CommandBudget: d.CommandBudget, StoreBudget: cfg.storeRequestTimeout(),
		Names: directory,
	})
	if err != nil {
		return nil, err
	}
	// Everything sent to Slack (slackout); the deadline and the agent's
	// callback are the other jobs.
	jobHandlers, err := slackout.Handlers(slackout.Options{
		Slack: d.Slack, Chat: d.SlackChat, Store: d.Store, Core: decider, Directory: directory, Homes: slackHandlers,
		PostInterval: cfg.SlackPostInterval, RateLimitHold: d.RateLimitHold, Lease: cfg.JobLease,
		Defaults: cfg.Policy().Defaults, Reminders: reminders,
		Now: d.Now, Metrics: d.Metrics.Outbound, Logger: d.Logger,
		// Set below, before any job runs.
		Wake: func(id string) { runner.WakeFor(id) },
	})
	if err != nil {
		return nil, err
	}
	// Intake tells a post queued behind others when its turn comes, as the
	// poster would (store.PacePosts).
	d.Store.PacePosts(slackout.PostPacing(cfg.SlackPostInterval))
	jobHandlers[store.JobDeliver] = deliverer
	if jobHandlers[store.JobEvents], err = webhook.NewEventDeliverer(deliverer, d.Store, d.Registry); err != nil {
		return nil, err
	}
	jobHandlers[store.JobExpire] = deadlineJob{decider: decider, log: d.Logger.With("component", "deadline")}
	// Registered with retention off too: a sweep scheduled while it was on
	// then ends instead of being dead-lettered.
	jobHandlers[store.JobRetain] = retentionJob{store: d.Store, retention: cfg.RetentionPeriod(),
		interval: cmp.Or(d.RetentionInterval, defaultRetentionInterval), now: d.Now,
		metrics: d.Metrics.retention, log: d.Logger.With("component", "retention")}
	runner, err = jobs.NewRunner(d.Store, jobs.Options{
		Handlers: jobHandlers, Concurrency: cfg.WorkerConcurrency, Lease: cfg.JobLease,
		MaxAttempts: cfg.JobMaxAttempts, PollInterval: cfg.JobPollInterval, Now: d.Now, Metrics: d.Metrics.Jobs, Logger: d.Logger.With("component", "runner"),
	})
	if err != nil {
		return nil, err
	}
	var socket *handlers.SocketMode
	if cfg.SlackAppToken != "" {
		if d.SocketMode == nil {
			return nil, errors.New("bot: Socket Mode (SLACK_APP_TOKEN) needs a Slack client with the app-level token")
		}
		socket, err = handlers.NewSocketMode(slackHandlers, d.SocketMode, handlers.SocketOptions{
			Logger: d.Logger.With("component", "socket-mode"), Registry: d.Registry})
		if err != nil {
			return nil, err
		}
	}
	// One change subscription per process wakes every long poll and the
	// reader of the event streams (it ends with Close).
	changesCtx, stopChanges := context.WithCancel(context.Background())
	changes := d.Store.SubscribeChanges(changesCtx, 2)
	// The sealer links the global audit entries this process and others
	// write (store/seal.go); it ends with Close, too.
	go d.Store.RunSealer(changesCtx, auditSealInterval, d.Logger.With("component", "audit"))
	events := webhook.NewEventHub(changesCtx, d.Store, changes.Consumers[0], webhook.EventHubOptions{
		MaxStreams: cfg.EventsMaxStreams, Heartbeat: d.EventsHeartbeat, Creations: changes,
		Logger: d.Logger.With("component", "events")})
	api, err := webhook.New(webhook.Options{
		Waiters: webhook.NewWaiters(changes.Consumers[1]), Events: events,
		Store: d.Store, Lifecycle: decider, Tokens: cfg.Tokens(), Limits: cfg.Limits(), AllowAnonymous: cfg.LocalMode(),
		Decisions: decider, Reviewers: cfg.Reviewers(), AgentApprovers: cfg.AgentApproverGrants(), Decided: slackHandlers.Decided,
		Names:          directory,
		DefaultChannel: cfg.SlackDefaultChannel, MaxBodyBytes: cfg.IntakeMaxBodyBytes, Now: d.Now,
		AllowInsecureCallbacks: cfg.CallbackAllowPrivate, Jobs: runner, StoreTimeout: cfg.storeRequestTimeout(),
		Metrics: webhook.NewMetrics(d.Registry), Logger: d.Logger.With("component", "intake"),
	})
	if err != nil {
		stopChanges()
		return nil, err
	}
	if cfg.LocalMode() && cfg.Tokens().Len() == 0 {
		d.Logger.Warn("INTAKE_TOKENS is not set: intake ACCEPTS UNAUTHENTICATED requests (local mode only); " +
			"they belong to agent \"" + webhook.AnonymousAgent + "\"")
	}
	if shared := cfg.SharedCallbackAgents(); len(shared) > 0 {
		// A count, not the names: an INTAKE_TOKENS entry written the wrong
		// way round (token:name) would have its token for a name.
		d.Logger.Warn("agents of INTAKE_TOKENS without their own CALLBACK_SECRETS entry verify their decision responses "+
			"and events with the one CALLBACK_SECRET, so each can sign, and forge, the others'; give each its own",
			"agents_sharing", len(shared))
	}
	d.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "approvalbot_event_streams",
		Help: "Progress event streams (SSE) open on this process; at EVENTS_MAX_STREAMS new ones get 503."},
		func() float64 { return float64(events.Len()) }))
	d.Registry.MustRegister(NewOutboxCollector(d.Store), NewOpenRequestsCollector(d.Store, d.Logger.With("component", "metrics")),
		NewLaterWritesCollector(d.Store),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.RetentionPeriod() > 0 {
		d.Registry.MustRegister(NewRetentionCollector(d.Store, d.Now))
	}

	var auth *slackAuth
	if !cfg.LocalMode() {
		auth = newSlackAuth(d.Slack, cfg.SlackBotToken, d.SlackAuthRetry, d.Logger.With("component", "slack-auth"))
	}

	mux := http.NewServeMux()
	api.Register(mux)
	slackHandlers.Register(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, http.StatusOK, "ok", "")
	})
	drain := newDrainState()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if drain.draining() {
			writeReadiness(w, drainingReport)
			return
		}
		// Within a second, Redis answering or not: a probe that hangs is
		// as good as a failed one to an orchestrator, and slower to act on.
		ctx, cancel := context.WithTimeout(r.Context(), cfg.readinessTimeout())
		defer cancel()
		writeReadiness(w, readiness(d.Store.Ping(ctx), auth, socket))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registry}))
	if d.Sandbox != nil {
		mux.Handle("/sandbox/", http.StripPrefix("/sandbox", d.Sandbox))
	}
	// The MCP endpoint: its tools call this service's own /v1 in memory
	// with the caller's token (mcpserver), so /v1's rules all apply.
	var self http.Handler
	mcp := mcpserver.Handler(mcpserver.HTTPOptions{
		Bot: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { self.ServeHTTP(w, r) }), Authenticate: api.Authenticated,
		LocalhostProtection: cfg.LocalMode() && cfg.Tokens().Len() == 0, Version: ReadBuildInfo().Version,
		Logger: d.Logger.With("component", "mcp")})
	mux.Handle("/mcp", mcp)
	observed := observeHTTP(newHTTPMetrics(d.Registry), d.Logger.With("component", "http"), recoverPanics(d.Logger, mux))
	self = observed
	handler := http.Handler(observed)
	if cfg.LocalMode() {
		handler = localGuard(observed) // web pages must not act as the sandbox's members
	}
	svc := &Service{deps: d, runner: runner, async: async, handler: handler, socket: socket,
		auth: auth, stopChanges: stopChanges, drain: drain, mcp: mcp}
	if d.Sandbox != nil {
		// In process, past localGuard: the page's own requests were
		// checked as they came in, and its signed Slack requests carry
		// their context (a loopback address) but not a loopback Host.
		d.Sandbox.Attach(observed)
	}
	return svc, nil
}

// auditSealInterval is how often every shard's pending global audit entries
// are sealed, besides at once after each write of this process: it bounds
// how long another process's entries stay pending after it crashed.
const auditSealInterval = time.Second

// Close releases long polls (they answer with the current state) and ends
// the event streams (clients resume with Last-Event-ID, here or on another
// replica), and ends the MCP tools' waits (they return the request as it
// stands), so the HTTP server can shut down without waiting for them; Run
// calls it before the HTTP shutdown. Callers that serve Handler themselves
// call it likewise.
func (s *Service) Close() {
	s.mcp.Close()
	s.stopChanges()
}

// Handler is the service's HTTP handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Runner is the service's job runner (tests wake and inspect it).
func (s *Service) Runner() *jobs.Runner { return s.runner }

// RunJobs drains the outbox until ctx ends, then waits for running jobs and
// for the Slack calls queued after acknowledged interactions. In production
// mode it first confirms the bot token with auth.test, retrying with backoff
// (see slackAuth): no job runs until Slack accepts the token.
func (s *Service) RunJobs(ctx context.Context) error {
	if s.auth != nil {
		if err := s.auth.run(ctx); err != nil {
			s.async.Close()
			return err
		}
	}
	if s.deps.Config.RetentionPeriod() > 0 {
		go s.scheduleRetention(ctx)
	}
	err := s.runner.Run(ctx)
	s.async.Close()
	return err
}

// scheduleRetention makes sure each shard's retention sweep is scheduled
// (once, however many replicas start), trying again while Redis fails.
func (s *Service) scheduleRetention(ctx context.Context) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		err := s.deps.Store.ScheduleRetention(ctx, s.deps.Now())
		if err == nil {
			s.runner.Wake()
			return
		}
		s.deps.Logger.WarnContext(ctx, "could not schedule the retention sweeps; trying again", "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// SlackReady is closed once Slack has accepted the bot token (at once in
// local mode); RunJobs checks it.
func (s *Service) SlackReady() <-chan struct{} {
	if s.auth == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return s.auth.Ready()
}

// RunSocketMode receives Slack's requests over Socket Mode until ctx ends;
// without SLACK_APP_TOKEN it returns at once. Stop it before RunJobs ends:
// the Slack calls its envelopes cause run on the pool RunJobs closes.
func (s *Service) RunSocketMode(ctx context.Context) error {
	if s.socket == nil {
		return nil
	}
	return s.socket.Run(ctx)
}

// socketState is /readyz's "slack_socket": connected or disconnected, or
// "" (left out) without Socket Mode.
func socketState(m *handlers.SocketMode) string {
	switch {
	case m == nil:
		return ""
	case m.Connected():
		return "connected"
	default:
		return "disconnected"
	}
}

func writeStatus(w http.ResponseWriter, code int, status, reason string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	body := map[string]string{"status": status}
	if reason != "" {
		body["reason"] = reason
	}
	_ = json.NewEncoder(w).Encode(body)
}

// recoverPanics turns a handler panic into a logged 500 instead of a dropped
// connection.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.ErrorContext(r.Context(), "handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
				webhook.WriteInternalError(w, r)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
