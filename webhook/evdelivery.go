package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// EventDeliveryStore is the state the event deliverer needs; *store.Store
// implements it.
type EventDeliveryStore interface {
	Get(ctx context.Context, id string) (store.Record, error)
	NextEvent(ctx context.Context, rec store.Record) (ev store.Event, skipped string, found bool, err error)
	RecordEventAttempt(ctx context.Context, id string, a store.EventAttempt, state string, more bool) error
}

// EventDeliverer POSTs a request's progress events to the callback it
// subscribed in extensions.events. It is the job handler of store.JobEvents
// jobs, one per request, so one agent's failing endpoint delays only its
// own request's events. Each job run makes one attempt at the request's
// next event (the first after its cursor that the subscription wants),
// through the decision response's Deliverer: the same signing, SSRF guard,
// timeout, retry schedule and Retry-After handling. The outcome and the
// next job are stored together: 2xx moves the cursor past the event and
// runs the job again for the next one; a failure retries the same event on
// the schedule (later events wait behind it, so order holds); 410 Gone
// unsubscribes; attempts exhausted (or a target never permitted) stop the
// request's events, with a dead-letter entry. A crash between the POST and
// its record re-sends the event with the same webhook-id: at least once.
type EventDeliverer struct {
	d        *Deliverer
	st       EventDeliveryStore
	log      *slog.Logger
	outcomes *prometheus.CounterVec
}

// NewEventDeliverer builds the event deliverer on d (which signs and sends).
func NewEventDeliverer(d *Deliverer, st EventDeliveryStore, reg prometheus.Registerer) (*EventDeliverer, error) {
	if d == nil || st == nil {
		return nil, errors.New("webhook: event deliverer needs a Deliverer and a store")
	}
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "approvalbot_event_callbacks_total",
		Help: "Progress event POSTs to agents' extensions.events callbacks, by outcome: delivered, retry, " +
			"refused (retried), gone (410: unsubscribed), dead (attempts exhausted or never permitted: stopped).",
	}, []string{"outcome"})
	for _, o := range []string{"delivered", "retry", "refused", "gone", "dead"} {
		outcomes.WithLabelValues(o)
	}
	if reg != nil {
		var err error
		if outcomes, err = register(reg, outcomes); err != nil {
			return nil, err
		}
	}
	return &EventDeliverer{d: d, st: st, log: d.log, outcomes: outcomes}, nil
}

// EventWebhookID is the Standard Webhooks message id of a request's event:
// the same on every attempt, so receivers dedupe redeliveries by it.
func EventWebhookID(requestID, eventID string) string { return "evt_" + requestID + "_" + eventID }

// EventBody is the JSON an event callback POSTs: the event as the
// request's SSE stream sends it in its data: line.
func EventBody(e store.Event) []byte {
	b, _ := json.Marshal(eventView{ID: e.ID, RequestID: e.RequestID, Agent: e.Agent, Type: e.Type, At: e.At, Data: e.Data})
	return b
}

// Handle makes one attempt at the job's request's next event. It returns
// nil when the outcome is stored or there is nothing to send; an error when
// the store failed or the runner is shutting down (the job runs again).
func (e *EventDeliverer) Handle(ctx context.Context, job store.Job) error {
	rec, err := e.st.Get(ctx, job.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("events %s: %w", job.RequestID, err)
	}
	if !rec.Events.Subscribed() {
		return nil
	}
	ev, skipped, found, err := e.st.NextEvent(ctx, rec)
	if err != nil {
		return fmt.Errorf("events %s: %w", rec.ID, err)
	}
	from := rec.Events.Cursor
	if !found {
		if skipped == "" {
			return nil
		}
		// Only events the subscription does not want (or a long read):
		// move past them, and look again.
		return e.record(ctx, rec.ID, store.EventAttempt{From: from, EventID: skipped, At: e.d.now()}, store.EventsActive, true)
	}
	n := 1
	if rec.Events.Failing == ev.ID {
		n = rec.Events.Attempts + 1
	} // else the event that failed was trimmed (EVENTS_RETENTION) and skipped: a fresh count
	res := e.d.attempt(ctx, rec.Agent, rec.Events.URL, EventWebhookID(rec.ID, ev.ID), EventBody(ev))
	if res.abandoned != nil {
		return fmt.Errorf("events %s: attempt %d at %s abandoned: %w", rec.ID, n, ev.ID, res.abandoned)
	}
	var tmp store.DeliveryAttempt
	state, outcome := e.d.settle(res, n, &tmp)
	a := store.EventAttempt{From: from, EventID: ev.ID, At: res.at.UTC(), Status: res.status, Error: res.err,
		Attempt: n, NextAttemptAt: tmp.NextAttemptAt}
	evState := map[string]string{store.DeliveryDelivered: store.EventsActive, store.DeliveryRetrying: store.EventsRetrying,
		store.DeliveryGone: store.EventsGone, store.DeliveryDead: store.EventsDead}[state]
	if err := e.record(ctx, rec.ID, a, evState, evState == store.EventsActive); err != nil {
		return err
	}
	e.outcomes.WithLabelValues(outcome).Inc()
	attrs := []any{"request_id", rec.ID, "event_id", ev.ID, "type", ev.Type, "attempt", n,
		"host", hostOf(rec.Events.URL), "status", res.status, "duration", res.duration}
	switch evState {
	case store.EventsActive:
		e.log.DebugContext(ctx, "event delivered", attrs...)
	case store.EventsRetrying:
		e.log.WarnContext(ctx, "event delivery failed; will retry", append(attrs, "error", res.err, "next_attempt_at", a.NextAttemptAt)...)
	default:
		e.log.ErrorContext(ctx, "event deliveries stopped", append(attrs, "state", evState, "error", res.err)...)
	}
	return nil
}

func (e *EventDeliverer) record(ctx context.Context, id string, a store.EventAttempt, state string, more bool) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err := e.st.RecordEventAttempt(rctx, id, a, state, more)
	switch {
	case errors.Is(err, store.ErrStaleCursor), errors.Is(err, store.ErrNotFound):
		return nil // another run settled it, or the request is gone
	case err != nil:
		// The agent may have the event already; the job re-sends it with
		// the same webhook-id, which the agent dedupes on.
		return fmt.Errorf("events %s: record attempt at %s: %w", id, a.EventID, err)
	}
	return nil
}

// GaveUp is called when the runner buried an events job because Handle
// kept failing (the store kept failing). The cursor is stored: a later
// event of the request schedules the job again.
func (e *EventDeliverer) GaveUp(ctx context.Context, job store.Job, err error) {
	e.log.ErrorContext(ctx, "event callback job dead-lettered after repeated store errors",
		"request_id", job.RequestID, "err", err)
}
