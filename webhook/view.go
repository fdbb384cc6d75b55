package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// requestView is the API's representation of a stored request.
type requestView struct {
	ID     string     `json:"id"`
	Status aah.Status `json:"status"`
	// Escalated says the request was escalated (a step of data.escalation,
	// or a reviewer's hand-made escalation), EscalatedAt when it first was.
	// The status stays "escalated" while it is open, as seed 000 §6 lists
	// it, however many answers follow; Progress shows them. Once closed,
	// the status is how it ended and Escalated still says it was escalated.
	Escalated   bool       `json:"escalated"`
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
	// Progress counts the decisions answered so far (absent when the
	// stored document no longer parses).
	Progress    *aah.AnswerProgress `json:"progress,omitempty"`
	Agent       string              `json:"agent"`
	ReceivedAt  time.Time           `json:"received_at"`
	UpdatedAt   time.Time           `json:"updated_at"`
	WithdrawnAt *time.Time          `json:"withdrawn_at,omitempty"`
	Links       links               `json:"links"`
	Slack       slackView           `json:"slack"`
	Request     json.RawMessage     `json:"request"`
	// Response is the decision/response artifact, once resolved.
	Response json.RawMessage `json:"response,omitempty"`
	// Callback is the delivery of Response to handoff.response_url; absent
	// when the request has none (the agent polls).
	Callback *callbackView `json:"callback,omitempty"`
	// EventsCallback is the delivery of the request's progress events to
	// extensions.events.url; absent when it subscribed none.
	EventsCallback *eventsCallbackView `json:"events_callback,omitempty"`
	// Escalation is where the request was escalated, and why a step could
	// not be, once an escalation step has run.
	Escalation *escalationView `json:"escalation,omitempty"`
	// Answers are the answers given so far, one per decision, in the
	// response's shape (aah.AnswersSoFar); on GET of one request while it is
	// open (once closed, Response holds them).
	Answers []aah.DecisionAnswer `json:"answers,omitempty"`
}

// escalationView is the outcome of a request's escalation steps.
type escalationView struct {
	Steps    []int    `json:"steps"`              // steps of data.escalation that ran
	Users    []string `json:"users,omitempty"`    // Slack users it was escalated to
	Channels []string `json:"channels,omitempty"` // channels it was escalated to
	Error    string   `json:"error,omitempty"`    // why steps could not be resolved
}

// callbackView says where the delivery of the decision stands.
type callbackView struct {
	URL string `json:"url"`
	// State is "waiting" (no decision yet), "none" (closed without one:
	// withdrawn or expired), "pending" (queued), "retrying",
	// "delivered", "dead" (attempts exhausted: see redeliver) or "gone" (the
	// agent answered 410).
	State     string `json:"state"`
	WebhookID string `json:"webhook_id,omitempty"`
	// AttemptCount counts every attempt; Attempts lists them (the last 100),
	// oldest first, on GET of one request only.
	AttemptCount  int                     `json:"attempt_count"`
	Attempts      []store.DeliveryAttempt `json:"attempts,omitzero"`
	LastError     string                  `json:"last_error,omitempty"`
	NextAttemptAt *time.Time              `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time              `json:"delivered_at,omitempty"`
}

func callbackOf(rec store.Record) *callbackView {
	if rec.ResponseURL == "" {
		return nil
	}
	d := rec.Delivery
	c := &callbackView{URL: rec.ResponseURL, State: d.State, WebhookID: d.WebhookID,
		AttemptCount: d.Attempts, LastError: d.LastError}
	if c.State == store.DeliveryNone {
		c.State = "waiting"
		if !rec.Status.Open() {
			c.State = "none" // closed without a decision to deliver
		}
	}
	if !d.NextAttemptAt.IsZero() && d.State == store.DeliveryRetrying {
		c.NextAttemptAt = &d.NextAttemptAt
	}
	if !d.DeliveredAt.IsZero() {
		c.DeliveredAt = &d.DeliveredAt
	}
	return c
}

// eventsCallbackView says where the delivery of a request's events stands.
type eventsCallbackView struct {
	URL   string   `json:"url"`
	Types []string `json:"types,omitempty"` // absent: every type
	// State is "active" (delivering, or waiting for the next event),
	// "retrying" (the event after delivered_through failed; see
	// next_attempt_at), "gone" (the agent answered 410: unsubscribed) or
	// "dead" (an event's attempts ran out: no more are sent).
	State string `json:"state"`
	// DeliveredThrough is the id of the last event delivered (or skipped as
	// not subscribed); the stream's tail before the request's first event
	// until then.
	DeliveredThrough string     `json:"delivered_through"`
	AttemptCount     int        `json:"attempt_count"` // failed attempts at the next event
	LastError        string     `json:"last_error,omitempty"`
	NextAttemptAt    *time.Time `json:"next_attempt_at,omitempty"`
}

func eventsCallbackOf(rec store.Record) *eventsCallbackView {
	e := rec.Events
	if e.URL == "" {
		return nil
	}
	v := &eventsCallbackView{URL: e.URL, Types: e.Types, State: e.State, DeliveredThrough: e.Cursor,
		AttemptCount: e.Attempts, LastError: e.LastError}
	if v.State == store.EventsActive {
		v.State = "active"
	}
	if e.State == store.EventsRetrying && !e.NextAttemptAt.IsZero() {
		v.NextAttemptAt = &e.NextAttemptAt
	}
	return v
}

// slackView says where the request's message is, or why it is not there.
type slackView struct {
	// State is "queued" (not yet posted), "posted", "retrying" (a post
	// failed and will be retried), "failed" (the bot gave up; see Error) or
	// "cancelled" (withdrawn before it was posted).
	State     string     `json:"state"`
	Channel   string     `json:"channel"`
	TS        string     `json:"ts,omitempty"`
	Permalink string     `json:"permalink,omitempty"`
	PostedAt  *time.Time `json:"posted_at,omitempty"`
	Error     string     `json:"error,omitempty"`
}

func viewOf(rec store.Record) requestView {
	v := requestView{
		ID: rec.ID, Status: rec.Status, Agent: rec.Agent,
		ReceivedAt: rec.ReceivedAt, UpdatedAt: rec.UpdatedAt,
		Links:    links{Self: selfLink(rec.ID)},
		Request:  rec.Document,
		Callback: callbackOf(rec),

		EventsCallback: eventsCallbackOf(rec),
		Slack: slackView{
			Channel: rec.Channel, TS: rec.Slack.TS, Permalink: rec.Slack.Permalink,
			Error: rec.Slack.Error,
		},
	}
	v.Escalated = rec.Escalated()
	if !rec.EscalatedAt.IsZero() {
		v.EscalatedAt = &rec.EscalatedAt
	}
	v.Progress = progressOf(rec)
	if len(rec.EscalatedSteps) > 0 || rec.EscalationError != "" {
		v.Escalation = &escalationView{Steps: rec.EscalatedSteps, Users: rec.EscalatedTo,
			Channels: rec.EscalatedChannels, Error: rec.EscalationError}
	}
	if rec.Slack.Channel != "" {
		v.Slack.Channel = rec.Slack.Channel
	}
	if !rec.WithdrawnAt.IsZero() {
		v.WithdrawnAt = &rec.WithdrawnAt
	}
	if len(rec.Response) > 0 {
		v.Response = rec.Response
	}
	switch {
	case rec.Posted():
		v.Slack.State = "posted"
		v.Slack.PostedAt = &rec.Slack.PostedAt
	case rec.Slack.ErrorPermanent:
		v.Slack.State = "failed"
	case !rec.Status.Open():
		v.Slack.State = "cancelled"
	case rec.Slack.Error != "":
		v.Slack.State = "retrying"
	default:
		v.Slack.State = "queued"
	}
	return v
}

type listView struct {
	Items      []requestView `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
	Links      links         `json:"links"`
}

// list is GET /v1/requests?status=&limit=&cursor=: the caller's requests,
// oldest first, paginated by an opaque cursor.
func (a *API) list(w http.ResponseWriter, r *http.Request, agent string) {
	q := r.URL.Query()
	var probs []aah.FieldError
	query := store.ListQuery{Agent: agent, Cursor: q.Get("cursor")}
	if s := q.Get("status"); s != "" {
		if !aah.Status(s).Valid() {
			probs = append(probs, aah.FieldError{Field: "status", Message: "must be one of pending, partial, resolved, expired, escalated, withdrawn"})
		}
		query.Status = aah.Status(s)
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxPageSize {
			probs = append(probs, aah.FieldError{Field: "limit", Message: "must be a whole number from 1 to " + strconv.Itoa(store.MaxPageSize)})
		}
		query.Limit = n
	}
	if len(probs) > 0 {
		writeError(w, r, http.StatusBadRequest, "invalid query", probs...)
		return
	}
	page, err := a.opts.Store.List(r.Context(), query)
	if errors.Is(err, store.ErrBadCursor) {
		writeError(w, r, http.StatusBadRequest, "invalid query", aah.FieldError{Field: "cursor", Message: "is not a cursor this server issued"})
		return
	} else if err != nil {
		a.failed(w, r, "list requests", err)
		return
	}
	out := listView{Items: make([]requestView, len(page.Items)), NextCursor: page.NextCursor}
	for i, rec := range page.Items {
		out.Items[i] = viewOf(rec)
	}
	self := url.Values{}
	for _, k := range []string{"status", "limit"} {
		if v := q.Get(k); v != "" {
			self.Set(k, v)
		}
	}
	if page.NextCursor != "" {
		self.Set("cursor", page.NextCursor)
		out.Links.Next = "/v1/requests?" + self.Encode()
	}
	out.Links.Self = r.URL.RequestURI()
	writeJSON(w, http.StatusOK, out)
}

// detailOf is the view of one request: with, while it is open, the answers
// given so far. A document that no longer parses shows none (it still
// shows as sent, in Request).
func detailOf(rec store.Record) requestView {
	v := viewOf(rec)
	if rec.Status.Open() {
		if req, err := rec.Request(); err == nil {
			v.Answers = aah.AnswersSoFar(req, rec.Answers)
		}
	}
	return v
}

// progressOf counts the request's decisions answered so far. It reads only
// the decisions' ids and required flags of the stored document (a list
// does not parse each request in full); nil when even that fails.
func progressOf(rec store.Record) *aah.AnswerProgress {
	var doc struct {
		Content struct {
			Body struct {
				Data struct {
					Decisions []struct {
						ID       string `json:"id"`
						Required bool   `json:"required"`
					} `json:"decisions"`
				} `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if json.Unmarshal(rec.Document, &doc) != nil || len(doc.Content.Body.Data.Decisions) == 0 {
		return nil
	}
	req := &aah.Request{}
	for _, d := range doc.Content.Body.Data.Decisions {
		req.Data.Decisions = append(req.Data.Decisions, aah.Decision{ID: d.ID, Required: d.Required})
	}
	p := aah.AnswerProgressOf(req, rec.Answers)
	return &p
}
