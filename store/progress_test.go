package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// TestProgressEvents: every change that an agent watching its requests
// cares about writes its event in the same transaction, on both backends.
func TestProgressEvents(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Run("Lifecycle", func(t *testing.T) { testEventsLifecycle(t, b) })
			t.Run("Atomic", func(t *testing.T) { testEventsAtomic(t, b) })
			t.Run("TrimByAge", func(t *testing.T) { testEventsTrim(t, b) })
			t.Run("Kinds", func(t *testing.T) { testEventKinds(t, b) })
			t.Run("ClockBehind", func(t *testing.T) { testEventsClockBehind(t, b) })
		})
	}
}

// shardEvents reads every event of a shard's stream.
func (f fixture) shardEvents(t *testing.T, shard int) []store.Event {
	t.Helper()
	var out []store.Event
	after := "0-0"
	for {
		evs, err := f.s.EventsAfter(f.ctx, shard, after, 3)
		if err != nil {
			t.Fatalf("EventsAfter: %v", err)
		}
		out = append(out, evs...)
		if len(evs) < 3 {
			return out
		}
		after = evs[len(evs)-1].ID
	}
}

func eventTypes(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func answerChange(decision, user string, value any, at time.Time) *store.Change {
	a := aah.Answer{DecisionID: decision, Value: value, By: aah.Person{ID: user}, At: at}
	return &store.Change{Answers: []aah.Answer{a}, Bump: true, Status: aah.StatusPartial,
		Audit: []store.AuditEvent{{Event: "answered", Actor: "human:" + user, Data: map[string]any{"decision_id": decision, "value": value}}}}
}

func testEventsLifecycle(t *testing.T, b backend) {
	f := newFixture(t, b)
	id := "evt-life"
	f.mustCreate(t, newReq(id, "agent-a"))
	f.clk.Advance(time.Second)
	if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return answerChange("d1", "U1", true, f.clk.Now()), nil
	}); err != nil {
		t.Fatal(err)
	}
	// Bookkeeping and refused clicks write no event.
	if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Audit: []store.AuditEvent{{Event: "click_refused", Actor: "human:U2"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Status: aah.StatusResolved, Bump: true,
			Resolution: &store.Resolution{Response: []byte(`{"overall_status":"approved"}`), At: f.clk.Now(), By: aah.Person{ID: "U1"}},
			Audit:      []store.AuditEvent{{Event: "resolved", Actor: "human:U1"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	evs := f.shardEvents(t, shardOf(id))
	if got, want := fmt.Sprint(eventTypes(evs)), fmt.Sprint([]string{store.EventInputRequested, store.EventInputReceived, store.EventResolved}); got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	for i, e := range evs {
		if e.RequestID != id || e.Agent != "agent-a" || e.Shard != shardOf(id) {
			t.Errorf("event %d = %+v, want request %s of agent-a in its shard", i, e, id)
		}
		if i > 0 && store.CompareEventIDs(evs[i-1].ID, e.ID) >= 0 {
			t.Errorf("event ids do not grow: %s then %s", evs[i-1].ID, e.ID)
		}
	}
	if want := t0.Add(time.Second); !evs[1].At.Equal(want) || evs[1].ID != fmt.Sprintf("%d-0", want.UnixMilli()) {
		t.Errorf("answer event at %v id %s, want the store's clock %v", evs[1].At, evs[1].ID, want)
	}
	var got struct {
		DecisionID string     `json:"decision_id"`
		Actor      string     `json:"actor"`
		Answer     aah.Answer `json:"answer"`
	}
	if err := json.Unmarshal(evs[1].Data, &got); err != nil || got.DecisionID != "d1" || got.Actor != "human:U1" || got.Answer.By.ID != "U1" {
		t.Errorf("input:received data = %s (%v), want who/what/when of d1", evs[1].Data, err)
	}
	var final struct {
		Status   string          `json:"status"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(evs[2].Data, &final); err != nil || final.Status != "resolved" || string(final.Response) != `{"overall_status":"approved"}` {
		t.Errorf("resolved data = %s (%v), want the response", evs[2].Data, err)
	}
	if !evs[2].Final() || evs[1].Final() {
		t.Errorf("Final: resolved %v, input:received %v", evs[2].Final(), evs[1].Final())
	}
	tails, err := f.s.EventTails(f.ctx)
	if err != nil || tails[shardOf(id)] != evs[2].ID {
		t.Fatalf("EventTails = %v, %v; want %s in shard %d", tails, err, evs[2].ID, shardOf(id))
	}
	if after, _ := f.s.EventsAfter(f.ctx, shardOf(id), evs[2].ID, 10); len(after) != 0 {
		t.Errorf("EventsAfter the tail = %v, want none", after)
	}
}

// testEventsAtomic: concurrent answers on one shard, retried on WATCH
// conflicts, write exactly one event each; a change that fails writes none.
func testEventsAtomic(t *testing.T, b backend) {
	f := newFixture(t, b)
	ids := idsInShard("evt-atomic", 3, 4)
	for _, id := range ids {
		f.mustCreate(t, newReq(id, "agent-a"))
	}
	var wg sync.WaitGroup
	const per = 5
	for _, id := range ids {
		for k := range per {
			wg.Go(func() {
				if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
					return answerChange(fmt.Sprintf("d%d", k), "U1", true, f.clk.Now()), nil
				}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	boom := errors.New("boom")
	if _, err := f.s.Update(f.ctx, ids[0], func(store.Record) (*store.Change, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	evs := f.shardEvents(t, 3)
	count := map[string]int{}
	for _, e := range evs {
		count[e.RequestID+" "+e.Type]++
	}
	for _, id := range ids {
		if count[id+" "+store.EventInputRequested] != 1 || count[id+" "+store.EventInputReceived] != per {
			t.Errorf("%s: %d input:requested, %d input:received; want 1 and %d", id,
				count[id+" "+store.EventInputRequested], count[id+" "+store.EventInputReceived], per)
		}
		audit, err := f.s.Audit(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		answered := 0
		for _, a := range audit {
			if a.Event == "answered" {
				answered++
			}
		}
		if answered != count[id+" "+store.EventInputReceived] {
			t.Errorf("%s: %d answered audit entries, %d events", id, answered, count[id+" "+store.EventInputReceived])
		}
	}
	for i := 1; i < len(evs); i++ {
		if store.CompareEventIDs(evs[i-1].ID, evs[i].ID) >= 0 {
			t.Fatalf("event ids do not grow: %s then %s", evs[i-1].ID, evs[i].ID)
		}
	}
}

// testEventsTrim: events older than the retention, by the store's clock,
// are trimmed as newer ones are added to the shard.
func testEventsTrim(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.EventsRetention = time.Hour })
	ids := idsInShard("evt-trim", 5, 3)
	f.mustCreate(t, newReq(ids[0], "agent-a"))
	f.clk.Advance(30 * time.Minute)
	f.mustCreate(t, newReq(ids[1], "agent-a"))
	if got := len(f.shardEvents(t, 5)); got != 2 {
		t.Fatalf("%d events within the retention, want 2", got)
	}
	f.clk.Advance(31 * time.Minute) // the first is 61 minutes old
	f.mustCreate(t, newReq(ids[2], "agent-a"))
	evs := f.shardEvents(t, 5)
	if len(evs) != 2 || evs[0].RequestID != ids[1] || evs[1].RequestID != ids[2] {
		t.Fatalf("after an hour, events of %v, want %v", requestIDs(evs), ids[1:])
	}
}

func requestIDs(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.RequestID)
	}
	return out
}

// testEventKinds: escalation and reminders as the core audits them, an
// expiry carrying its response, and a withdrawal by the core; a large
// response is linked, not inlined.
func testEventKinds(t *testing.T, b backend) {
	f := newFixture(t, b)
	ids := idsInShard("evt-kinds", 7, 3)
	for _, id := range ids {
		f.mustCreate(t, newReq(id, "agent-a"))
	}
	update := func(id string, ch *store.Change) {
		t.Helper()
		if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) { return ch, nil }); err != nil {
			t.Fatal(err)
		}
	}
	update(ids[0], &store.Change{Status: aah.StatusEscalated, Bump: true, Escalation: &store.Escalation{Step: 0, To: []string{"U9"}},
		Audit: []store.AuditEvent{{Event: "escalated", Actor: "system", Data: map[string]any{"step": 0, "targets": []string{"U9"}}}}})
	update(ids[0], &store.Change{RemindersDone: 1,
		Audit: []store.AuditEvent{{Event: "reminded", Actor: "system", Data: map[string]any{"n": 1, "recipients": []string{"U9"}}}}})
	big := []byte(`{"pad":"` + strings.Repeat("x", store.MaxInlineEventBytes) + `"}`)
	update(ids[0], &store.Change{Status: aah.StatusExpired, Bump: true, Resolution: &store.Resolution{Response: big, At: f.clk.Now()},
		Audit: []store.AuditEvent{{Event: "deadline_passed", Actor: "system"}}})
	update(ids[1], &store.Change{Status: aah.StatusExpired, Bump: true, Resolution: &store.Resolution{Response: []byte(`{"small":1}`), At: f.clk.Now()},
		Audit: []store.AuditEvent{{Event: "deadline_passed", Actor: "system"}}})
	f.mustWithdraw(t, ids[2])
	if _, err := f.withdraw(ids[2]); !errors.Is(err, store.ErrNotOpen) { // refused: no second event
		t.Fatalf("second withdrawal: %v, want ErrNotOpen", err)
	}
	byReq := map[string][]store.Event{}
	for _, e := range f.shardEvents(t, 7) {
		byReq[e.RequestID] = append(byReq[e.RequestID], e)
	}
	want := map[string][]string{
		ids[0]: {store.EventInputRequested, store.EventEscalated, store.EventReminded, store.EventExpired},
		ids[1]: {store.EventInputRequested, store.EventExpired},
		ids[2]: {store.EventInputRequested, store.EventWithdrawn},
	}
	for id, types := range want {
		if got := eventTypes(byReq[id]); fmt.Sprint(got) != fmt.Sprint(types) {
			t.Errorf("%s: events %v, want %v", id, got, types)
		}
	}
	if len(byReq) != len(want) {
		t.Errorf("events of %d requests, want %d", len(byReq), len(want))
	}
	esc := string(byReq[ids[0]][1].Data)
	if !strings.Contains(esc, `"targets":["U9"]`) {
		t.Errorf("escalated data = %s", esc)
	}
	if d := string(byReq[ids[0]][3].Data); strings.Contains(d, `"response":`) || !strings.Contains(d, `"response_link":"/v1/requests/`+ids[0]+`"`) {
		t.Errorf("a large response inline: %.200s", d)
	}
	if d := string(byReq[ids[1]][1].Data); !strings.Contains(d, `"response":{"small":1}`) {
		t.Errorf("expired data = %s, want the response", d)
	}
}

// testEventsClockBehind: a write whose clock is behind the stream's newest
// event (another process's clock ahead) still appends after it, never
// before; a request subscribing to its events then starts from the event
// before its own, whichever way the ids were numbered.
func testEventsClockBehind(t *testing.T, b backend) {
	f := newFixture(t, b)
	ids := idsInShard("behind", 3, 3)
	f.clk.Set(t0.Add(time.Minute))
	f.mustCreate(t, newReq(ids[0], "pm"))
	f.clk.Set(t0) // a minute behind the stream's newest
	f.mustCreate(t, newReq(ids[1], "pm"))
	sub := newReq(ids[2], "pm")
	sub.Events = &aah.EventSubscription{URL: "https://agent.example.com/ev"}
	rec := f.mustCreate(t, sub)
	evs := f.shardEvents(t, 3)
	var got []string
	for i, e := range evs {
		got = append(got, e.RequestID)
		if i > 0 && store.CompareEventIDs(evs[i-1].ID, e.ID) >= 0 {
			t.Errorf("event %d id %s does not follow %s", i, e.ID, evs[i-1].ID)
		}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("events of %v in stream order, want %v", got, ids)
	}
	if rec.Events.Cursor != evs[1].ID {
		t.Errorf("cursor of the subscribing request = %q, want the event before its own, %q", rec.Events.Cursor, evs[1].ID)
	}
	if stored := f.mustGet(t, ids[2]); stored.Events.Cursor != evs[1].ID {
		t.Errorf("stored cursor = %q, want %q", stored.Events.Cursor, evs[1].ID)
	}
}
