// Package handlers serves what Slack sends approvalbot: interactions (clicks,
// selects, modal submissions), the slash command and Events API events (the
// App Home tab). Every request is verified with Slack's v0
// signature before it is parsed, a replay of one already applied is acked and
// ignored (replay.go), and every request is acknowledged as soon as its effect is
// recorded in Redis; Slack API calls (modals, ephemeral replies) run
// afterwards, off the request path.
package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// Decisions applies reviewers' actions; *approval.Core implements it.
type Decisions interface {
	Answer(ctx context.Context, requestID string, by aah.Person, values map[string]any) (approval.Outcome, error)
	// AnswerAll approves or rejects every approval decision at once.
	AnswerAll(ctx context.Context, requestID string, by aah.Person, approve bool) (approval.Outcome, error)
	// AnswerWithComment records a comment and an answer in one update.
	AnswerWithComment(ctx context.Context, requestID, decisionID string, by aah.Person, value any, comment string) (approval.Outcome, error)
	Comment(ctx context.Context, requestID, decisionID string, by aah.Person, text string) (approval.Outcome, error)
	SubmitWithComment(ctx context.Context, requestID string, by aah.Person, comment string) (approval.Outcome, error)
	// Reject rejects approval decisions with a reason, in one update;
	// RejectAll rejects every approval decision so.
	Reject(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, reason string) (approval.Outcome, error)
	RejectAll(ctx context.Context, requestID string, by aah.Person, reason string) (approval.Outcome, error)
	// Check refuses (with a *approval.Refusal) a person who may not take
	// action ("answer" or "comment") on the request, before a modal opens.
	Check(ctx context.Context, requestID string, by aah.Person, action string) error
	// The review extension's verbs (verbs.go): reject with a picked
	// reason, modify, defer/change_plan/abort, escalate by hand, and
	// CheckVerb before one's modal opens.
	RejectWith(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, r approval.Rejection) (approval.Outcome, error)
	Modify(ctx context.Context, requestID, decisionID string, by aah.Person, edited map[string]any, comment string) (approval.Outcome, error)
	Direct(ctx context.Context, requestID string, by aah.Person, verb aah.Verb, text string) (approval.Outcome, error)
	Reassign(ctx context.Context, requestID string, by aah.Person, to, note string) (approval.Outcome, error)
	CheckVerb(ctx context.Context, requestID, decisionID string, by aah.Person, verb aah.Verb) error
}

// Requests reads stored requests; *store.Store implements it.
type Requests interface {
	// Load reads a request with its parsed document (store.Store.Load).
	Load(ctx context.Context, id string) (store.Record, *aah.Request, error)
}

// SlackAPI is what the handlers call on Slack; *slack.Client implements it.
type SlackAPI interface {
	OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	PublishViewContext(ctx context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error)
}

// Options configure the Slack handlers.
type Options struct {
	// SigningSecret verifies the HTTP endpoints' requests; without it they
	// are not served (Socket Mode only).
	SigningSecret string
	Decisions     Decisions
	Requests      Requests
	Slack         SlackAPI
	// Async runs Slack API calls after the ack; default NewAsync(8, 256).
	Async    *Async
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: metrics not registered
	// Wake tells the job runner new work is queued for request requestID
	// (message syncs, deliveries: jobs.Runner.WakeFor).
	Wake func(requestID string)
	// Command is the slash command served at /slack/commands; default
	// DefaultCommand ("/approvals").
	Command string
	// Lists pages open requests for the slash command; default Requests,
	// when it implements Lister.
	Lists Lister
	// CommandBudget is how long a slash command may work before it is
	// acked and answered through response_url; default 2s.
	CommandBudget time.Duration
	// StoreBudget is the deadline of an interaction's or event's Redis
	// work, from its arrival (STORE_REQUEST_TIMEOUT); default 2s. Keep it
	// at most MaxStoreBudget, so the ack always makes Slack's 3 seconds
	// (the configuration refuses more; tests on a loaded machine lengthen
	// it).
	StoreBudget time.Duration
	// HTTPClient POSTs replies to Slack's response_url.
	HTTPClient *http.Client
	// Now is the clock for ages and deadlines; default time.Now.
	Now func() time.Time
	// Home keeps what the Events API and the App Home tab need; default
	// Requests, when it implements HomeStore. Without it (or Lists),
	// /slack/events is not served.
	Home HomeStore
	// Defaults are the workspace's sign-off rules, shown by "show" (as they
	// apply to each request's agent: Defaults.For).
	Defaults aah.Defaults
	// GrantMax is the longest standing approval a reviewer may grant
	// (STANDING_APPROVAL_MAX); "/approvals show" offers "Approve similar…"
	// above 0, as the request's message does. Default: Decisions' GrantMax
	// when it has one (the core's), else 0.
	GrantMax time.Duration
	// Replays remembers the interactions and commands already applied, so a
	// replayed signed request or a redelivered envelope is not applied
	// again; default Requests, when it implements ReplayStore.
	Replays ReplayStore

	// Grants are the standing approvals ("Approve similar…", Revoke,
	// /approvals grants); default Decisions, when it implements Grants.
	Grants Grants
	// Names looks up the name a person's answers are recorded with (the
	// cached directory's users.info: their real or display name): a
	// click's payload carries only their handle. Without it, the payload's
	// name is used; when a lookup fails, the payload's real name or the
	// user id (an answer is never held up by it: see nameBudget).
	Names interface {
		UserName(ctx context.Context, userID string) (string, error)
	}
}

// nameBudget bounds a name lookup on the way to recording a click, which
// Slack wants acknowledged within three seconds (the directory caches it).
const nameBudget = 800 * time.Millisecond

// grantLimit is what knows the longest standing approval (the core, once
// standing approvals are configured on it).
type grantLimit interface{ GrantMax() time.Duration }

// Slack serves Slack's requests.
type Slack struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
}

// maxSlackBody bounds what Slack may send; interaction payloads are far smaller.
const maxSlackBody = 1 << 20

// New validates its dependencies and returns the handlers.
func New(opts Options) (*Slack, error) {
	if opts.Decisions == nil || opts.Requests == nil || opts.Slack == nil {
		return nil, errors.New("handlers: decisions, requests and a Slack client are required")
	}
	if opts.Async == nil {
		opts.Async = NewAsync(8, 256)
	}
	if opts.Wake == nil {
		opts.Wake = func(string) {}
	}
	if opts.Command == "" {
		opts.Command = DefaultCommand
	}
	if opts.Lists == nil {
		opts.Lists, _ = opts.Requests.(Lister)
	}
	if opts.Grants == nil {
		opts.Grants, _ = opts.Decisions.(Grants)
	}
	if opts.Home == nil {
		opts.Home, _ = opts.Requests.(HomeStore)
	}
	if g, ok := opts.Decisions.(grantLimit); ok && opts.GrantMax == 0 {
		opts.GrantMax = g.GrantMax()
	}
	if opts.Replays == nil {
		opts.Replays, _ = opts.Requests.(ReplayStore)
	}
	if opts.CommandBudget <= 0 {
		opts.CommandBudget = defaultCommandBudget
	}
	if opts.StoreBudget <= 0 {
		opts.StoreBudget = defaultStoreBudget
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Slack{opts: opts, log: log, metrics: newMetrics(opts.Registry)}, nil
}

// Register mounts the Slack endpoints on mux. Without a signing secret it
// mounts none: requests could not be verified (Socket Mode needs none).
func (s *Slack) Register(mux *http.ServeMux) {
	if s.opts.SigningSecret == "" {
		return
	}
	mux.HandleFunc("POST /slack/interactions", s.interactions)
	if s.opts.Lists != nil {
		mux.HandleFunc("POST /slack/commands", s.commands)
	}
	if s.opts.Lists != nil && s.opts.Home != nil {
		mux.HandleFunc("POST /slack/events", s.events)
	}
}

// verified reads the body once, checks Slack's v0 signature over it (and
// that its timestamp is within five minutes), and only then parses the
// form; the caller checks it is not a replay (replayed). When it reports
// not ok it has answered the request.
func (s *Slack) verified(w http.ResponseWriter, r *http.Request) (url.Values, []byte, bool) {
	body, ok := s.verifiedBody(w, r)
	if !ok {
		return nil, nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed form body", http.StatusBadRequest)
		return nil, nil, false
	}
	return form, body, true
}

// verifiedBody reads the body once and checks Slack's v0 signature over it
// (and that its timestamp is within five minutes); on failure it has
// answered the request.
func (s *Slack) verifiedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSlackBody))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, s.opts.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		s.metrics.rejected.Inc()
		s.log.WarnContext(r.Context(), "slack request refused: bad signature", "err", err, "remote", r.RemoteAddr)
		http.Error(w, "invalid Slack signature", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

// interactions is POST /slack/interactions. Its Redis work, the replay
// check included, has one StoreBudget from arrival.
func (s *Slack) interactions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, cancel := s.storeDeadline(r.Context())
	defer cancel()
	form, body, ok := s.verified(w, r)
	if !ok {
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "payload is not an interaction", http.StatusBadRequest)
		return
	}
	defer func() { s.metrics.ack.WithLabelValues(string(cb.Type)).Observe(time.Since(start).Seconds()) }()
	switch first, err := s.replayed(ctx, r, body); {
	case err != nil:
		writeAck(w, s.unrecorded(ctx, &cb, err))
	case first:
		writeAck(w, s.Interaction(ctx, &cb))
	default:
		w.WriteHeader(http.StatusOK) // a replay: nothing applied, nothing said
	}
}

// unrecorded acks an interaction whose replay check Redis could not answer.
// It is not applied (it might be a replay: the check fails closed), and the
// person is told to try again, as when the answer itself cannot be stored.
func (s *Slack) unrecorded(ctx context.Context, cb *slack.InteractionCallback, err error) any {
	s.log.WarnContext(ctx, "could not check a Slack interaction for replay; not applied", "type", cb.Type, "user", cb.User.ID, "err", err)
	msg := notRecorded
	switch cb.Type {
	case slack.InteractionTypeViewSubmission:
		block := blocks.BlockComment
		if cb.View.CallbackID == blocks.ModalInput {
			block = blocks.BlockValue
		}
		return fieldErrors(block, msg)
	case slack.InteractionTypeBlockActions:
		channel := cmp.Or(cb.Channel.ID, cb.Container.ChannelID)
		s.tellUser(channel, cb.User.ID, msg)
	}
	return nil
}

// defaultStoreBudget bounds an interaction's Redis work unless Options say
// otherwise; MaxStoreBudget leaves its ack time to reach Slack within 3 s.
const (
	defaultStoreBudget = 2 * time.Second
	MaxStoreBudget     = 2500 * time.Millisecond
)

// Interaction handles one interaction, whichever transport brought it (the
// HTTP endpoint after verifying its signature, or Socket Mode), and returns
// what its acknowledgement carries: nil for an empty one, or a
// view_submission's field errors. Its effect is recorded when it returns;
// Slack API calls it causes run afterwards on the Async pool.
//
// Its Redis work has StoreBudget from now, so it is acked within Slack's 3
// seconds however slow Redis is. An answer that could not be stored in
// time is not recorded later behind the reviewer's back: it is written
// under store.WriteBy(4/5 of the budget), so Redis itself refuses the
// transaction past that point, however late a frozen server gets to it;
// the last fifth is for the answer of a change applied just in time to
// arrive. The reviewer is told it was not recorded (storeTrouble), or, in
// the one case left, when the transaction went out and its answer did not
// come back, that it could not be confirmed and the message shows whether
// it was (a recorded change always updates the message).
func (s *Slack) Interaction(ctx context.Context, cb *slack.InteractionCallback) any {
	ctx, cancel := s.storeDeadline(ctx)
	defer cancel()
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		s.blockActions(ctx, cb)
	case slack.InteractionTypeViewSubmission:
		if errs := s.viewSubmission(ctx, cb); errs != nil {
			return errs
		}
	}
	return nil // view_closed and others need no answer
}

// storeDeadline bounds a request's Redis work by StoreBudget from now; a
// change under it is applied only if Redis applies it before 4/5 of the
// budget (store.WriteBy). Under a budget already, ctx keeps it: the HTTP
// endpoints start theirs on arrival, before the replay check.
func (s *Slack) storeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Value(budgetKey{}) != nil {
		return ctx, func() {}
	}
	ctx = context.WithValue(ctx, budgetKey{}, true)
	now := time.Now()
	ctx, cancel := context.WithDeadline(ctx, now.Add(s.opts.StoreBudget))
	return store.WriteBy(ctx, now.Add(s.opts.StoreBudget*4/5)), cancel
}

// notRecorded tells a reviewer their answer was not stored because Redis
// did not answer in time.
const notRecorded = ":warning: Your answer was not recorded: the bot's database did not answer in time. " +
	"Please try again in a moment."

// budgetKey marks a context that carries a store budget (storeDeadline).
type budgetKey struct{}

// storeTrouble is what a reviewer is told when Redis did not answer in
// time (store.Unavailable), and "" for any other error.
func storeTrouble(err error) string {
	switch {
	case errors.Is(err, store.ErrOutcomeUnknown):
		return ":warning: Your answer could not be confirmed in time: the bot's database is slow. " +
			"If the message does not show it within a few seconds, it was not recorded; please try again."
	case store.Unavailable(err):
		return notRecorded
	}
	return ""
}

// writeAck answers an HTTP request from Slack with a core's payload: 200 and
// an empty body when there is none, else the payload as JSON.
func writeAck(w http.ResponseWriter, payload any) {
	if payload == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(payload)
}

func person(u slack.User) aah.Person {
	name := u.Name
	if u.RealName != "" {
		name = u.RealName
	}
	return aah.Person{ID: u.ID, Name: name}
}

// person is who acted in a payload, named as the directory knows them
// (Options.Names): their real or display name, not the handle the payload
// carries. A failed lookup names them by the payload's real name, else by
// their id; it is logged, never in the way of the answer.
func (s *Slack) person(ctx context.Context, u slack.User) aah.Person {
	if s.opts.Names == nil || u.ID == "" {
		return person(u)
	}
	ctx, cancel := context.WithTimeout(ctx, nameBudget)
	defer cancel()
	name, err := s.opts.Names.UserName(ctx, u.ID)
	if err != nil || strings.TrimSpace(name) == "" {
		if err != nil {
			s.log.WarnContext(ctx, "could not look up a reviewer's name", "user", u.ID, "err", err)
		}
		name = u.RealName
		if name == "" {
			name = u.ID
		}
	}
	return aah.Person{ID: u.ID, Name: name}
}

// tellUser shows a message only the user sees, next to where they acted.
func (s *Slack) tellUser(channel, user, text string) {
	if channel == "" || user == "" {
		return
	}
	s.opts.Async.Go("ephemeral", func(ctx context.Context) {
		if _, err := s.opts.Slack.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
			s.log.WarnContext(ctx, "could not send an ephemeral reply", "channel", channel, "user", user, "err", err)
		}
	})
}

type metrics struct {
	ack      *prometheus.HistogramVec
	rejected prometheus.Counter
	replays  *prometheus.CounterVec
	actions  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ack: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "approvalbot_slack_interaction_ack_seconds",
			Help:    "Time from receiving a Slack interaction to acknowledging it, by type.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"type"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "approvalbot_slack_requests_rejected_total",
			Help: "Requests to the Slack endpoints refused for a missing, stale or wrong signature.",
		}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_slack_replays_total",
			Help: "Slack requests ignored because they were already applied, by transport: http (a replayed signed request), socket (a redelivered envelope).",
		}, []string{"transport"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_slack_actions_total",
			Help: "Reviewer actions by action and result: recorded, unchanged, refused, error.",
		}, []string{"action", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.ack, m.rejected, m.replays, m.actions)
	}
	return m
}
