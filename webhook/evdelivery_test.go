package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// createSubscribed stores a pending request of agent "pm" whose events go
// to url (types nil: every type).
func (e *env) createSubscribed(id, url string, types ...string) store.Record {
	e.t.Helper()
	doc := fmt.Sprintf(`{"artifact":{"id":%q,"type":"decision/request"},"content":{"title":"Ship it?"}}`, id)
	rec, created, err := e.st.Create(context.Background(), store.NewRequest{ID: id, Agent: "pm",
		Document: json.RawMessage(doc), BodyHash: "hash-" + id, Channel: "#approvals",
		Events: &aah.EventSubscription{URL: url, Types: types}})
	if err != nil || !created {
		e.t.Fatalf("create %s: created=%v err=%v", id, created, err)
	}
	return rec
}

func (e *env) eventDeliverer(d *webhook.Deliverer, st webhook.EventDeliveryStore) *webhook.EventDeliverer {
	e.t.Helper()
	if st == nil {
		st = e.st
	}
	ed, err := webhook.NewEventDeliverer(d, st, nil)
	mustNil(e.t, err)
	return ed
}

// eventRunner runs the event and decision deliverers until the test ends.
func (e *env) eventRunner(d *webhook.Deliverer, ed *webhook.EventDeliverer) {
	e.t.Helper()
	r, err := jobs.NewRunner(e.st, jobs.Options{
		Handlers: map[string]jobs.Handler{store.JobEvents: ed, store.JobDeliver: d, store.JobPost: noop{},
			store.JobSync: noop{}, store.JobHome: noop{}},
		PollInterval: 10 * time.Millisecond, Now: e.now,
	})
	mustNil(e.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	e.t.Cleanup(func() { cancel(); wg.Wait() })
}

// requestEvents are every event of request id, oldest first.
func (e *env) requestEvents(id string) []store.Event {
	e.t.Helper()
	var out []store.Event
	after := "0-0"
	for {
		evs, err := e.st.EventsAfter(context.Background(), store.ShardOf(id), after, 100)
		mustNil(e.t, err)
		for _, ev := range evs {
			if ev.RequestID == id {
				out = append(out, ev)
			}
			after = ev.ID
		}
		if len(evs) < 100 {
			return out
		}
	}
}

type eventPost struct {
	ID        string          `json:"id"`
	RequestID string          `json:"request_id"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
}

func decodePost(t *testing.T, h hit) eventPost {
	t.Helper()
	var p eventPost
	if err := json.Unmarshal(h.Body, &p); err != nil {
		t.Fatalf("event body %q: %v", h.Body, err)
	}
	return p
}

// Every event of a subscribed request reaches the callback in order; the
// first two attempts at each fail (503) and are retried with the same
// webhook-id; every POST is signed as the decision response is; the final
// event carries the response.
func TestEventCallbacksInOrderWithRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	tries := map[string]int{}
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries[r.Header.Get("webhook-id")]++
		n := tries[r.Header.Get("webhook-id")]
		mu.Unlock()
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	d, _ := e.deliverer(nil)
	e.eventRunner(d, e.eventDeliverer(d, nil))
	e.createSubscribed("ev-order", rc.srv.URL+"/events")
	e.answer("ev-order", "d1", "U0REVIEWER")
	e.answer("ev-order", "d2", "U0REVIEWER")
	resp := responseFor("ev-order")
	e.resolve("ev-order", resp, "msg_ev-order")
	all := e.requestEvents("ev-order")
	last := all[len(all)-1].ID
	rec := e.waitFor("ev-order", time.Minute, func(r store.Record) bool { return r.Events.Cursor == last })
	if rec.Events.State != store.EventsActive || rec.Events.Attempts != 0 {
		t.Errorf("events state = %+v; want active, no pending attempts", rec.Events)
	}

	var delivered []eventPost
	mu.Lock()
	defer mu.Unlock()
	for i, h := range rc.got() {
		if err := verifyIndependently(e.secret, h.Header, h.Body); err != nil {
			t.Errorf("POST %d: %v", i+1, err)
		}
		p := decodePost(t, h)
		if want := webhook.EventWebhookID("ev-order", p.ID); h.Header.Get("webhook-id") != want {
			t.Errorf("POST %d: webhook-id %q, want %q", i+1, h.Header.Get("webhook-id"), want)
		}
		if tries[h.Header.Get("webhook-id")] != 3 {
			t.Errorf("event %s was tried %d times, want 3 (2 failures, then 200)", p.ID, tries[h.Header.Get("webhook-id")])
		}
		if len(delivered) == 0 || delivered[len(delivered)-1].ID != p.ID {
			delivered = append(delivered, p)
		}
	}
	var types, ids []string
	for _, p := range delivered {
		types, ids = append(types, p.Type), append(ids, p.ID)
	}
	wantTypes := []string{store.EventInputRequested, store.EventInputReceived, store.EventInputReceived, store.EventResolved}
	if !slices.Equal(types, wantTypes) || !slices.IsSortedFunc(ids, store.CompareEventIDs) {
		t.Fatalf("delivered %q (ids %q); want %q in stream order", types, ids, wantTypes)
	}
	var final struct {
		Response json.RawMessage `json:"response"`
	}
	mustNil(t, json.Unmarshal(delivered[3].Data, &final))
	if !strings.Contains(string(final.Response), `"resp-ev-order"`) {
		t.Errorf("resolved data %s; want the response", delivered[3].Data)
	}
}

// A subscription to some types gets only those; 410 unsubscribes: later
// events schedule nothing and are never sent.
func TestEventCallbackTypesAnd410(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var gone atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	d, _ := e.deliverer(nil)
	e.eventRunner(d, e.eventDeliverer(d, nil))
	e.createSubscribed("ev-410", rc.srv.URL+"/events", store.EventInputReceived)
	e.answer("ev-410", "d1", "U0REVIEWER")
	first := e.requestEvents("ev-410")[1].ID
	e.waitFor("ev-410", time.Minute, func(r store.Record) bool { return r.Events.Cursor == first })
	gone.Store(true)
	e.answer("ev-410", "d2", "U0REVIEWER")
	e.waitFor("ev-410", time.Minute, func(r store.Record) bool { return r.Events.State == store.EventsGone })
	e.answer("ev-410", "d3", "U0REVIEWER")
	e.waitQueueEmpty()
	hits := rc.got()
	if len(hits) != 2 {
		t.Fatalf("%d POSTs, want 2 (the first answer, then the 410)", len(hits))
	}
	for _, h := range hits {
		if p := decodePost(t, h); p.Type != store.EventInputReceived {
			t.Errorf("POSTed %s to a subscription to input:received only", p.Type)
		}
	}
}

// A target that keeps failing (500) is retried on the schedule, then the
// request's events stop (dead, in the dead-letter list); another request's
// callback is not held up meanwhile.
func TestEventCallbackDeadDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) })
	good := newReceiver(t, nil)
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) {
		o.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	})
	e.eventRunner(d, e.eventDeliverer(d, nil))
	e.createSubscribed("ev-dead", bad.srv.URL+"/events")
	e.createSubscribed("ev-fine", good.srv.URL+"/events")
	ok := e.requestEvents("ev-fine")[0].ID
	e.waitFor("ev-fine", time.Minute, func(r store.Record) bool { return r.Events.Cursor == ok })
	rec := e.waitFor("ev-dead", time.Minute, func(r store.Record) bool { return r.Events.State == store.EventsDead })
	if rec.Events.Attempts != 3 || rec.Events.LastError != "HTTP 500" {
		t.Errorf("events = %+v; want dead after 3 attempts, HTTP 500", rec.Events)
	}
	hits := bad.got()
	if len(hits) != 3 || hits[0].Header.Get("webhook-id") != hits[2].Header.Get("webhook-id") {
		t.Fatalf("%d POSTs to the failing target; want 3 with one webhook-id", len(hits))
	}
	dead, err := e.st.DeadJobs(context.Background(), store.ShardOf("ev-dead"))
	mustNil(t, err)
	if !slices.ContainsFunc(dead, func(j store.DeadJob) bool { return j.ID == store.JobID(store.JobEvents, "ev-dead") }) {
		t.Errorf("dead letters %+v; want the events job", dead)
	}
}

// A target the guard can never permit (loopback without
// CALLBACK_ALLOW_PRIVATE) is refused before anything is sent, at once.
func TestEventCallbackRefusesPrivateTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.AllowPrivate = false })
	e.eventRunner(d, e.eventDeliverer(d, nil))
	e.createSubscribed("ev-private", strings.Replace(rc.srv.URL, "http:", "https:", 1)+"/events")
	rec := e.waitFor("ev-private", time.Minute, func(r store.Record) bool { return r.Events.State == store.EventsDead })
	if !strings.Contains(rec.Events.LastError, "loopback") || len(rc.got()) != 0 {
		t.Errorf("events = %+v, %d POSTs; want dead, refused as loopback, nothing sent", rec.Events, len(rc.got()))
	}
}

// crashingStore loses the record of the first attempt, as a process that
// dies between the POST and storing its outcome.
type crashingStore struct {
	*store.Store
	crashed atomic.Bool
}

func (c *crashingStore) RecordEventAttempt(ctx context.Context, id string, a store.EventAttempt, state string, more bool) error {
	if c.crashed.CompareAndSwap(false, true) {
		return errors.New("connection reset (simulated crash)")
	}
	return c.Store.RecordEventAttempt(ctx, id, a, state, more)
}

// A crash between the POST and its record re-sends the same event with the
// same webhook-id (at least once); the cursor then moves once.
func TestEventCallbackRedeliveredAfterCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	d, _ := e.deliverer(nil)
	cs := &crashingStore{Store: e.st}
	ed := e.eventDeliverer(d, cs)
	rec := e.createSubscribed("ev-crash", rc.srv.URL+"/events")
	job := store.Job{ID: store.JobID(store.JobEvents, rec.ID), Kind: store.JobEvents, RequestID: rec.ID, Attempt: 1}
	if err := ed.Handle(context.Background(), job); err == nil {
		t.Fatal("Handle hid the lost record; the runner must run the job again")
	}
	if got := e.eventsOf(rec.ID); got.Cursor != rec.Events.Cursor {
		t.Fatalf("cursor moved to %s without a record", got.Cursor)
	}
	mustNil(t, ed.Handle(context.Background(), job))
	hits := rc.got()
	if len(hits) != 2 || hits[0].Header.Get("webhook-id") != hits[1].Header.Get("webhook-id") ||
		decodePost(t, hits[0]).ID != decodePost(t, hits[1]).ID {
		t.Fatalf("%d POSTs; want the same event twice with one webhook-id", len(hits))
	}
	ev := decodePost(t, hits[0])
	if got := e.eventsOf(rec.ID); got.Cursor != ev.ID {
		t.Fatalf("cursor %s, want %s", got.Cursor, ev.ID)
	}
	mustNil(t, ed.Handle(context.Background(), job)) // nothing more to send
	if len(rc.got()) != 2 {
		t.Fatalf("%d POSTs after the event was recorded; want 2", len(rc.got()))
	}
}

func (e *env) eventsOf(id string) store.EventsState {
	e.t.Helper()
	rec, err := e.st.Get(context.Background(), id)
	mustNil(e.t, err)
	return rec.Events
}
