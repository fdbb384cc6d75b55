// Package webhook is approvalbot's HTTP API for agents: the intake webhook
// that accepts decision/request artifacts, the endpoints to read (or
// long-poll), list, withdraw and audit them and to redeliver their decision,
// and the Deliverer that POSTs each decision to its agent's response_url.
package webhook

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// Store is the state the API needs; *store.Store implements it.
type Store interface {
	Get(ctx context.Context, id string) (store.Record, error)
	List(ctx context.Context, q store.ListQuery) (store.Page, error)
	Deliveries(ctx context.Context, id string) ([]store.DeliveryAttempt, error)
	Redeliver(ctx context.Context, id, actor string) (store.Record, error)
	// VerifiedAudit reads a request's audit chain and verifies it as
	// "approvalbot audit verify" does (store.Store.VerifiedAudit).
	VerifiedAudit(ctx context.Context, id string) ([]store.AuditEntry, []error, error)
	AuditIntakeRefusal(ctx context.Context, r store.IntakeRefusal) error
	// Admit backs the per-agent rate and reserves a slot under the cap on
	// open requests; ConfirmOpenLater and SettleOpen settle the slot
	// (store/opencap.go).
	Admit(ctx context.Context, agent, id string, rate store.Rate, max int, lease time.Duration) (store.RateDecision, store.OpenSlot, error)
	ConfirmOpenLater(slot store.OpenSlot)
	SettleOpen(ctx context.Context, slot store.OpenSlot) error
}

// Lifecycle applies the agent's transitions to a request; *approval.Core
// implements it.
type Lifecycle interface {
	// Create makes a submission a pending request (created false: the
	// identical one was stored before), or refuses it by the workspace's
	// policy (*approval.PolicyRefusal, nothing stored).
	Create(ctx context.Context, s approval.Submission) (rec store.Record, created bool, err error)
	// SignOffFloor is the sign-off rules a request from agent is held to;
	// intake checks a request's quorum can be met under them.
	SignOffFloor(agent string) aah.Defaults
	// Withdraw closes an open request for its agent; store.ErrNotOpen (with
	// the record) when it is closed already.
	Withdraw(ctx context.Context, id string) (store.Record, error)
}

// DefaultMaxBodyBytes bounds an intake body unless Options say otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Options configure the API.
type Options struct {
	Store Store
	// Lifecycle creates and withdraws requests; required.
	Lifecycle Lifecycle
	Tokens    Tokens
	// Limits bound each agent's intake (rate, open requests); the zero
	// value bounds nothing.
	Limits Limits
	// AllowAnonymous accepts requests without a token when no tokens are
	// configured (local mode only); they belong to AnonymousAgent.
	AllowAnonymous bool
	// DefaultChannel receives requests that name no channel.
	DefaultChannel string
	// MaxBodyBytes bounds intake bodies; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// AllowInsecureCallbacks accepts http:// and private response URLs.
	AllowInsecureCallbacks bool
	// Jobs is told when new work is queued, so a local worker starts at once.
	Jobs interface {
		Wake()
		WakeFor(requestID string) // Wake for that request's own jobs only (jobs.Runner.WakeFor)
	}
	// Decisions are the reviewer operations of the decision endpoints
	// (POST /v1/requests/{id}/answers, comments, submit, reject); without
	// it they are not served.
	Decisions Decisions
	// Reviewers are the people who decide through the API (REVIEWER_TOKENS).
	Reviewers Reviewers
	// AgentApprovers grants agents (INTAKE_TOKENS names) the right to
	// decide, each with the authority of a Slack user (AGENT_APPROVERS).
	AgentApprovers map[string]string
	// Names looks up the name a reviewer's answers are recorded with, as a
	// click's payload gives it; without it, or when it fails, they have
	// none (the response then shows the user id).
	Names interface {
		UserName(ctx context.Context, userID string) (string, error)
	}
	// Decided is told of each decision the API recorded (not of refusals or
	// repeats), after the commit: the bot refreshes the Home tabs, as after
	// a click.
	Decided func(action string, by aah.Person, rec store.Record)
	// Waiters wakes long polls (GET /v1/requests/{id}?wait=30s) when their
	// request changes. Without it, wait is ignored and GET answers at once.
	Waiters *Waiters
	// Events serves the progress event streams (GET /v1/events, GET
	// /v1/requests/{id}/events); without it they answer 404.
	Events  *EventHub
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
	// StoreTimeout is the deadline of one request's Redis work (a long
	// poll's each read); default DefaultStoreTimeout. When it passes, or
	// Redis cannot be reached, the API answers 503 with Retry-After.
	StoreTimeout time.Duration

	// Grants serve the standing-approval endpoints (grants.go); default
	// Decisions, when it implements Grants. Without either, none.
	Grants Grants
}

// DefaultStoreTimeout bounds a request's Redis work unless Options say
// otherwise.
const DefaultStoreTimeout = 2 * time.Second

// RetryAfter is what a 503 asks the agent to wait before retrying, in
// seconds: a Redis failover or a slow fork takes about that long.
const RetryAfter = 2

// API serves the agent-facing endpoints.
type API struct {
	opts Options
	log  *slog.Logger
}

// New validates its dependencies and returns the API.
func New(opts Options) (*API, error) {
	if opts.Store == nil || opts.Lifecycle == nil {
		return nil, errors.New("webhook: Store and Lifecycle are required")
	}
	if opts.Tokens.Len() == 0 && !opts.AllowAnonymous {
		return nil, errors.New("webhook: no intake tokens configured and anonymous intake not allowed")
	}
	opts.MaxBodyBytes = cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes)
	opts.StoreTimeout = cmp.Or(opts.StoreTimeout, DefaultStoreTimeout)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &API{opts: opts, log: log}, nil
}

// Register mounts the API's routes on mux. Each request's Redis work has
// a deadline of StoreTimeout (bounded); GET bounds each of its reads
// instead, since a long poll waits longer than one.
func (a *API) Register(mux *http.ServeMux) { a.register(mux) }

// register mounts the routes on mux (Register; Routes in tests). The
// OpenAPI document describes every one of them but the catch-all of
// unknown /v1 paths and methods (unknownRoute).
func (a *API) register(to router) {
	mux := &routeTable{router: to}
	defer to.HandleFunc(CatchAllPattern, mux.unknown)
	mux.HandleFunc("GET /openapi.json", openAPIDoc.serve)
	mux.HandleFunc("GET /schemas/{name}", serveSchema)
	mux.HandleFunc("POST /v1/requests", a.authenticated(a.bounded(a.create)))
	mux.HandleFunc("GET /v1/requests", a.authenticated(a.bounded(a.list)))
	mux.HandleFunc("GET /v1/requests/{id}", a.authenticated(a.get))
	mux.HandleFunc("DELETE /v1/requests/{id}", a.authenticated(a.bounded(a.withdraw)))
	mux.HandleFunc("POST /v1/requests/{id}/redeliver", a.authenticated(a.bounded(a.redeliver)))
	mux.HandleFunc("GET /v1/requests/{id}/audit", a.authenticated(a.bounded(a.audit)))
	a.registerDecisions(mux)
	a.registerGrants(mux)
	mux.HandleFunc("GET /v1/requests/{id}/events", a.authenticated(a.requestEvents))
	mux.HandleFunc("GET /v1/events", a.authenticated(a.agentEvents))
}

// bounded runs h under a deadline of StoreTimeout from now: Redis work that
// does not finish by then fails, and is answered with 503 (failed).
func (a *API) bounded(h agentHandler) agentHandler {
	return func(w http.ResponseWriter, r *http.Request, agent string) {
		ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
		defer cancel()
		h(w, r.WithContext(ctx), agent)
	}
}

type agentHandler func(w http.ResponseWriter, r *http.Request, agent string)

// Authenticated wraps h in the API's agent authentication, for endpoints
// beside /v1 that take the same intake tokens (the MCP endpoint, /mcp): a
// request without a valid token is answered 401 as /v1 answers it.
func (a *API) Authenticated(h func(w http.ResponseWriter, r *http.Request, agent string)) http.Handler {
	return a.authenticated(h)
}

func (a *API) authenticated(h agentHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agent, err := a.opts.Tokens.agentFor(r, a.opts.AllowAnonymous)
		if err != nil {
			if r.Method == http.MethodPost {
				a.opts.Metrics.intake("unauthorized")
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="approvalbot"`)
			writeError(w, r, http.StatusUnauthorized, "unauthorized: "+err.Error())
			return
		}
		h(w, r, agent)
	}
}

// notFound is the 404 message of an unknown request: the id was never
// stored, or the request was deleted by retention (RETENTION) after it
// closed.
func notFound(id string) string {
	return "no request with id " + quote(id) + ": it was never stored, or it closed longer ago than the retention period (RETENTION) and was deleted"
}

// owned loads a request the agent owns, answering 404 or 403 otherwise.
func (a *API) owned(w http.ResponseWriter, r *http.Request, agent string) (store.Record, bool) {
	rec, err := a.opts.Store.Get(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, r, http.StatusNotFound, notFound(r.PathValue("id")))
		return store.Record{}, false
	case err != nil:
		a.failed(w, r, "get request", err)
		return store.Record{}, false
	case rec.Agent != agent:
		writeError(w, r, http.StatusForbidden, "request "+quote(rec.ID)+" belongs to another agent")
		return store.Record{}, false
	}
	return rec, true
}

// get is GET /v1/requests/{id}[?wait=30s[&until=change[&since=…]]]. With
// wait (and Waiters), an open request is answered as soon as it leaves the
// open states (resolved, expired, withdrawn), or with until=change as soon
// as it changes (longPoll), or when the wait is over, with its state then.
func (a *API) get(w http.ResponseWriter, r *http.Request, agent string) {
	wait, ok := parseWait(w, r)
	if !ok {
		return
	}
	poll, ok := parseLongPoll(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	rec, ok := a.owned(w, r.WithContext(ctx), agent)
	cancel()
	if !ok {
		return
	}
	if done := poll.done(rec); wait > 0 && a.opts.Waiters != nil && !done(rec) {
		var err error
		if rec, err = a.awaitUntil(w, r, rec.ID, wait, done); err != nil {
			if r.Context().Err() == nil {
				a.failed(w, r, "get request", err)
			}
			return
		}
	}
	ctx, cancel = context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	defer cancel()
	a.writeDetail(w, r.WithContext(ctx), http.StatusOK, rec)
}

// writeDetail answers with the full view of one request: the list view plus
// its delivery attempts and, while it is open, the answers given so far.
func (a *API) writeDetail(w http.ResponseWriter, r *http.Request, status int, rec store.Record) {
	v := detailOf(rec)
	if v.Callback != nil {
		attempts, err := a.opts.Store.Deliveries(r.Context(), rec.ID)
		if err != nil {
			a.failed(w, r, "read delivery attempts", err)
			return
		}
		v.Callback.Attempts = attempts
	}
	writeJSON(w, status, v)
}

// redeliver is POST /v1/requests/{id}/redeliver: deliver the decision again
// now, whatever became of the previous delivery (the webhook-id stays, so an
// agent that already has it can tell). 409 when there is nothing to deliver.
func (a *API) redeliver(w http.ResponseWriter, r *http.Request, agent string) {
	rec, ok := a.owned(w, r, agent)
	if !ok {
		return
	}
	rec, err := a.opts.Store.Redeliver(r.Context(), rec.ID, "agent:"+agent)
	switch {
	case errors.Is(err, store.ErrNothingToDeliver):
		writeError(w, r, http.StatusConflict, "request "+quote(r.PathValue("id"))+" has no decision to deliver: "+
			"it is not resolved yet, or it has no handoff.response_url (poll GET instead)")
		return
	case errors.Is(err, store.ErrNotFound):
		writeError(w, r, http.StatusNotFound, notFound(r.PathValue("id")))
		return
	case err != nil:
		a.failed(w, r, "redeliver", err)
		return
	}
	a.log.InfoContext(r.Context(), "redelivery requested", "request_id", rec.ID, "agent", agent)
	a.wakeFor(rec.ID)
	a.writeDetail(w, r, http.StatusAccepted, rec)
}

// auditView is GET /v1/requests/{id}/audit.
type auditView struct {
	Entries  []store.AuditEntry `json:"entries"`
	Verified bool               `json:"verified"`
	// Problem says why the chain does not verify; BrokenAt is the 1-based
	// position of the first entry that does not.
	Problem  string `json:"problem,omitempty"`
	BrokenAt int64  `json:"broken_at,omitempty"`
}

// audit is GET /v1/requests/{id}/audit: the request's hash-chained audit
// trail, verified.
func (a *API) audit(w http.ResponseWriter, r *http.Request, agent string) {
	rec, ok := a.owned(w, r, agent)
	if !ok {
		return
	}
	entries, problems, err := a.opts.Store.VerifiedAudit(r.Context(), rec.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Deleted by the retention sweep since owned read it.
		writeError(w, r, http.StatusNotFound, notFound(rec.ID))
		return
	case err != nil:
		a.failed(w, r, "read audit", err)
		return
	}
	v := auditView{Entries: entries, Verified: len(problems) == 0}
	if v.Entries == nil {
		v.Entries = []store.AuditEntry{}
	}
	if len(problems) > 0 {
		v.Problem = errors.Join(problems...).Error()
		var ce *store.ChainError
		if errors.As(problems[0], &ce) {
			v.BrokenAt = ce.Seq
		}
		a.log.WarnContext(r.Context(), "audit chain does not verify", "request_id", rec.ID, "problem", v.Problem)
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *API) withdraw(w http.ResponseWriter, r *http.Request, agent string) {
	rec, ok := a.owned(w, r, agent)
	if !ok {
		return
	}
	rec, err := a.opts.Lifecycle.Withdraw(r.Context(), rec.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Deleted by the retention sweep since owned read it.
		writeError(w, r, http.StatusNotFound, notFound(r.PathValue("id")))
		return
	case errors.Is(err, store.ErrNotOpen):
		writeError(w, r, http.StatusConflict, "request "+quote(rec.ID)+" is already "+string(rec.Status)+" and cannot be withdrawn")
		return
	case store.Unavailable(err):
		a.unavailable(w, r, "withdraw request", err, "the withdrawal could not be confirmed: the store (Redis) did not answer in time. "+
			"Retry after Retry-After; if it was applied meanwhile, the retry answers 409 with the request withdrawn")
		return
	case err != nil:
		a.failed(w, r, "withdraw request", err)
		return
	}
	a.log.InfoContext(r.Context(), "request withdrawn", "request_id", rec.ID, "agent", agent)
	// Every shard: an unposted request leaving its channel's queue makes
	// the next post there due, another request's, in another shard.
	a.wake()
	writeJSON(w, http.StatusOK, viewOf(rec))
}

func (a *API) wake() {
	if a.opts.Jobs != nil {
		a.opts.Jobs.Wake()
	}
}

// wakeFor is wake when the new work is request id's own jobs (its post).
func (a *API) wakeFor(id string) {
	if a.opts.Jobs != nil {
		a.opts.Jobs.WakeFor(id)
	}
}

// failed answers a store failure: 503 with Retry-After when Redis did not
// answer in time or could not be reached (store.Unavailable), else 500.
func (a *API) failed(w http.ResponseWriter, r *http.Request, op string, err error) {
	if store.Unavailable(err) {
		a.unavailable(w, r, op, err, "the store (Redis) did not answer in time; retry after Retry-After")
		return
	}
	a.log.ErrorContext(r.Context(), "api: "+op+" failed", "err", err)
	writeError(w, r, http.StatusInternalServerError, "internal error; the request was not changed")
}

// unavailable is 503 with Retry-After: Redis did not answer within the
// request's deadline, or could not be reached. msg says what the agent
// should do.
func (a *API) unavailable(w http.ResponseWriter, r *http.Request, op string, err error, msg string) {
	a.log.WarnContext(r.Context(), "api: "+op+": store unavailable", "err", err)
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	writeError(w, r, http.StatusServiceUnavailable, "store unavailable: "+msg)
}

func quote(s string) string {
	if len(s) > 140 {
		s = s[:140] + "…"
	}
	return `"` + s + `"`
}
