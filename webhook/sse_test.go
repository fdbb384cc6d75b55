package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/internal/sseclient"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// eventsAPI is an API serving event streams (and long polls) from one
// change feed per hub, as a process does.
func (e *env) eventsAPI(opts webhook.EventHubOptions) (*api, *webhook.EventHub, context.CancelFunc) {
	a, hub, _, cancel := e.eventsAPIWaiters(opts)
	return a, hub, cancel
}

func (e *env) eventsAPIWaiters(opts webhook.EventHubOptions) (*api, *webhook.EventHub, *webhook.Waiters, context.CancelFunc) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	changes := e.st.SubscribeChanges(ctx, 2)
	if opts.Creations == nil {
		opts.Creations = changes
	}
	hub := webhook.NewEventHub(ctx, e.st, changes.Consumers[0], opts)
	w := webhook.NewWaiters(changes.Consumers[1])
	return e.api(func(o *webhook.Options) { o.Events, o.Waiters = hub, w }), hub, w, cancel
}

func (a *api) open(path, token, last string) *sseclient.Stream {
	a.t.Helper()
	s, err := sseclient.Open(context.Background(), a.srv.Client(), a.srv.URL+path, token, last)
	if err != nil {
		a.t.Fatalf("open %s: %v", path, err)
	}
	a.t.Cleanup(s.Close)
	return s
}

// sent is an event as the streams send it.
type sent struct {
	ID        string          `json:"id"`
	RequestID string          `json:"request_id"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"`
	At        time.Time       `json:"at"`
	Data      json.RawMessage `json:"data"`
	sse       sseclient.Event
}

// key names an event for exactly-once checks: request, type and decision.
func (s sent) key() string {
	var d struct {
		DecisionID string `json:"decision_id"`
	}
	_ = json.Unmarshal(s.Data, &d)
	return s.RequestID + "/" + s.Type + "/" + d.DecisionID
}

// next reads the stream's next event, failing the test when none comes.
func next(t *testing.T, s *sseclient.Stream) sent {
	t.Helper()
	ev, ok := s.Next(20 * time.Second)
	if !ok {
		t.Fatal("no event came (or the stream ended)")
	}
	var out sent
	if err := json.Unmarshal([]byte(ev.Data), &out); err != nil {
		t.Fatalf("data is not JSON: %q", ev.Data)
	}
	if out.ID != ev.ID || out.Type != ev.Type || ev.ID == "" {
		t.Fatalf("frame id %q event %q, data id %q type %q: want them equal", ev.ID, ev.Type, out.ID, out.Type)
	}
	out.sse = ev
	return out
}

func (e *env) answer(id, decision, user string) {
	e.t.Helper()
	_, err := e.st.Update(context.Background(), id, func(rec store.Record) (*store.Change, error) {
		a := aah.Answer{DecisionID: decision, Value: true, By: aah.Person{ID: user}, At: e.now()}
		return &store.Change{Answers: []aah.Answer{a}, Bump: true, Status: aah.StatusPartial,
			Audit: []store.AuditEvent{{Event: "answered", Actor: "human:" + user, Data: map[string]any{"decision_id": decision, "value": true}}}}, nil
	})
	mustNil(e.t, err)
}

func (e *env) createFor(agent, id string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"artifact":{"id":%q,"type":"decision/request"}}`, id)
	_, created, err := e.st.Create(context.Background(), store.NewRequest{ID: id, Agent: agent,
		Document: json.RawMessage(doc), BodyHash: "hash-" + id, Channel: "#approvals"})
	if err != nil || !created {
		e.t.Fatalf("create %s: %v %v", id, created, err)
	}
}

// A request's stream sends its whole history as SSE frames, then what
// happens, and ends after the final event; resuming after any id sends
// exactly the events after it.
func TestRequestEventStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _, _ := e.eventsAPI(webhook.EventHubOptions{})
	e.create("ev-one", "")
	s := a.open("/v1/requests/ev-one/events", tokenPM, "")
	if ct := s.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	first := next(t, s)
	if first.Type != store.EventInputRequested || first.RequestID != "ev-one" || first.Agent != "pm" {
		t.Fatalf("first event = %+v", first)
	}
	e.answer("ev-one", "d1", "U1")
	got := next(t, s)
	if got.Type != store.EventInputReceived || !strings.Contains(string(got.Data), `"decision_id":"d1"`) {
		t.Fatalf("second event = %+v %s", got, got.Data)
	}
	e.resolve("ev-one", responseFor("ev-one"), "")
	final := next(t, s)
	if final.Type != store.EventResolved || !strings.Contains(string(final.Data), `"resp-ev-one"`) {
		t.Fatalf("final event = %+v %s", final, final.Data)
	}
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end after the final event")
	}
	// Resume after the first, by header and by query.
	for _, resume := range []func() *sseclient.Stream{
		func() *sseclient.Stream { return a.open("/v1/requests/ev-one/events", tokenPM, first.ID) },
		func() *sseclient.Stream {
			return a.open("/v1/requests/ev-one/events?last_event_id="+first.ID, tokenPM, "")
		},
	} {
		r := resume()
		var types []string
		for ev := range r.Events {
			types = append(types, ev.Type)
		}
		if fmt.Sprint(types) != fmt.Sprint([]string{store.EventInputReceived, store.EventResolved}) {
			t.Errorf("resumed after %s: %v", first.ID, types)
		}
	}
}

// The agent's stream carries only its own requests' events; another
// agent's request is 404; resuming with the last cursor after a
// disconnect sends every event exactly once.
func TestAgentEventStreamIsolationAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _, _ := e.eventsAPI(webhook.EventHubOptions{})
	s := a.open("/v1/events", tokenPM, "")
	ids := []string{"ev-a1", "ev-a2", "ev-a3", "ev-a4", "ev-a5"}
	want := map[string]int{}
	for _, id := range ids {
		e.createFor("pm", id)
		e.createFor("other", "x-"+id)
		want[id+"/"+store.EventInputRequested+"/"]++
	}
	seen := map[string]int{}
	var last string
	for range ids {
		ev := next(t, s)
		seen[ev.key()]++
		last = ev.ID
	}
	s.Close()
	// While disconnected.
	for _, id := range ids {
		e.answer(id, "d1", "U1")
		e.answer("x-"+id, "d1", "U1")
		want[id+"/"+store.EventInputReceived+"/d1"]++
	}
	e.answer(ids[0], "d2", "U2") // before reconnecting
	want[ids[0]+"/"+store.EventInputReceived+"/d2"]++
	r := a.open("/v1/events", tokenPM, last)
	e.answer(ids[1], "d2", "U2") // after
	want[ids[1]+"/"+store.EventInputReceived+"/d2"]++
	for range len(want) - len(ids) {
		ev := next(t, r)
		if ev.Agent != "pm" || strings.HasPrefix(ev.RequestID, "x-") {
			t.Fatalf("another agent's event on pm's stream: %+v", ev)
		}
		seen[ev.key()]++
		last = ev.ID
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("events seen %v, want each of %v once", seen, want)
	}
	if ev, ok := r.Next(200 * time.Millisecond); ok {
		t.Errorf("an extra event: %+v", ev)
	}
	// The cursor resumes from where the stream was, once more.
	r.Close()
	r2 := a.open("/v1/events?last_event_id="+last, tokenPM, "")
	e.withdrawAs(t, ids[4])
	if ev := next(t, r2); ev.Type != store.EventWithdrawn || ev.RequestID != ids[4] {
		t.Errorf("after resuming: %+v", ev)
	}
	// Another agent's request is not found, for its stream.
	if _, err := sseclient.Open(context.Background(), a.srv.Client(), a.srv.URL+"/v1/requests/x-ev-a1/events", tokenPM, ""); !isStatus(err, http.StatusNotFound) {
		t.Errorf("another agent's request: %v, want 404", err)
	}
	for _, bad := range []string{"garbage", "12-x", "c1.zz"} {
		if _, err := sseclient.Open(context.Background(), a.srv.Client(), a.srv.URL+"/v1/events", tokenPM, bad); !isStatus(err, http.StatusBadRequest) {
			t.Errorf("Last-Event-ID %q: %v, want 400", bad, err)
		}
	}
}

func (e *env) withdrawAs(t *testing.T, id string) {
	t.Helper()
	_, err := e.st.Update(context.Background(), id, func(rec store.Record) (*store.Change, error) {
		return &store.Change{Status: aah.StatusWithdrawn, Bump: true, WithdrawnAt: e.now(),
			Audit: []store.AuditEvent{{Event: "withdrawn", Actor: "agent:" + rec.Agent}}}, nil
	})
	mustNil(t, err)
}

func isStatus(err error, status int) bool {
	var se *sseclient.StatusError
	return errors.As(err, &se) && se.Status == status
}

// Idle streams get heartbeats; the cap answers 503 with Retry-After; a
// stopped hub (shutdown) ends every stream.
func TestEventStreamHeartbeatCapShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, hub, stop := e.eventsAPI(webhook.EventHubOptions{MaxStreams: 1, Heartbeat: 20 * time.Millisecond})
	s := a.open("/v1/events", tokenPM, "")
	_, err := sseclient.Open(context.Background(), a.srv.Client(), a.srv.URL+"/v1/events", tokenOther, "")
	var se *sseclient.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || se.Header.Get("Retry-After") == "" {
		t.Errorf("second stream at a cap of 1: %v, want 503 with Retry-After", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Pings() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s.Pings() < 2 {
		t.Errorf("%d heartbeats", s.Pings())
	}
	stop()
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived the hub")
	}
	if hub.Len() != 0 {
		t.Errorf("%d streams left", hub.Len())
	}
}

// until=change wakes a long poll on any change, not only on close; since=
// counts from the updated_at the client saw.
func TestLongPollUntilChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _, w, _ := e.eventsAPIWaiters(webhook.EventHubOptions{})
	e.create("lp-change", "")
	before := a.do(http.MethodGet, "/v1/requests/lp-change", tokenPM).json(t)["updated_at"].(string)
	done := make(chan response, 1)
	go func() {
		r, _ := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-change?wait=30s&until=change", tokenPM)
		done <- r
	}()
	waitWaiters(t, w, 1)
	start := time.Now()
	e.answer("lp-change", "d1", "U1")
	select {
	case r := <-done:
		if got := r.json(t); r.Status != http.StatusOK || got["status"] != "partial" {
			t.Errorf("until=change answered %d %s", r.Status, r.Body)
		}
		if took := time.Since(start); took >= 30*time.Second {
			t.Errorf("until=change sat out its wait (%s)", took)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the long poll was not woken by the answer")
	}
	// A change made before the poll began: since= the updated_at seen
	// before it answers at once.
	start = time.Now()
	r := a.do(http.MethodGet, "/v1/requests/lp-change?wait=30s&since="+before, tokenPM)
	if got := r.json(t); got["status"] != "partial" || time.Since(start) >= 30*time.Second {
		t.Errorf("since=%s answered %s after %s", before, got["status"], time.Since(start))
	}
	if r := a.do(http.MethodGet, "/v1/requests/lp-change?wait=1s&until=sometime", tokenPM); r.Status != http.StatusBadRequest {
		t.Errorf("until=sometime: %d", r.Status)
	}
}

// A stream that falls behind a burst (a mailbox of one event) is dropped
// by the hub and catches up from Redis: still every event exactly once.
func TestAgentEventStreamBurst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _, _ := e.eventsAPI(webhook.EventHubOptions{Buffer: 1})
	s := a.open("/v1/events", tokenPM, "")
	const n = 60
	want := map[string]int{}
	for i := range n {
		id := fmt.Sprintf("ev-burst-%d", i)
		e.createFor("pm", id)
		want[id+"/"+store.EventInputRequested+"/"] = 1
	}
	seen := map[string]int{}
	for range n {
		seen[next(t, s).key()]++
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	if ev, ok := s.Next(200 * time.Millisecond); ok {
		t.Errorf("an extra event: %+v", ev)
	}
}

// failingEvents is an event source whose Redis never answers.
type failingEvents struct{}

func (failingEvents) EventsAfter(context.Context, int, string, int64) ([]store.Event, error) {
	return nil, errors.New("redis down")
}
func (failingEvents) EventTails(context.Context) ([]string, error) {
	return nil, errors.New("redis down")
}

// Until the hub knows where the streams are (Redis down at start), a
// stream is refused with 503 and Retry-After rather than opened with a gap.
func TestEventStreamBeforeTheHubIsReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hub := webhook.NewEventHub(ctx, failingEvents{}, make(chan string), webhook.EventHubOptions{Poll: 10 * time.Millisecond})
	a := e.api(func(o *webhook.Options) { o.Events, o.StoreTimeout = hub, 100*time.Millisecond })
	_, err := sseclient.Open(context.Background(), a.srv.Client(), a.srv.URL+"/v1/events", tokenPM, "")
	var se *sseclient.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || se.Header.Get("Retry-After") == "" {
		t.Errorf("stream before the hub is ready: %v, want 503 with Retry-After", err)
	}
}

// A request id used again after retention deleted its request: the new
// request's stream does not replay the deleted one's events.
func TestRequestEventStreamOfAReusedID(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnvWithClock(t, clock)
	a, _, _ := e.eventsAPI(webhook.EventHubOptions{})
	e.create("ev-reused", "")
	e.withdrawAs(t, "ev-reused")
	// What the retention sweep leaves of it: nothing under its key.
	mustNil(t, e.rdb.Del(context.Background(), fmt.Sprintf("%s:{s%02d}:req:ev-reused", e.prefix, store.ShardOf("ev-reused"))).Err())
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	e.create("ev-reused", "")
	s := a.open("/v1/requests/ev-reused/events", tokenPM, "")
	if ev := next(t, s); ev.Type != store.EventInputRequested || !ev.At.Equal(clock().Truncate(time.Millisecond)) {
		t.Fatalf("first event %+v, want the new request's input:requested", ev)
	}
	if ev, ok := s.Next(200 * time.Millisecond); ok {
		t.Errorf("an event of the deleted request: %+v", ev)
	}
}
