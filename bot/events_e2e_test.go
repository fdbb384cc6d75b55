package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/sseclient"
	"github.com/approvalbot/approvalbot/store"
)

// openEvents opens an event stream on h's HTTP server as agent pm.
func (h *harness) openEvents(path, last string) *sseclient.Stream {
	h.t.Helper()
	s, err := sseclient.Open(context.Background(), h.http.Client(), h.http.URL+path, tokenPM, last)
	if err != nil {
		h.t.Fatalf("open %s: %v", path, err)
	}
	h.t.Cleanup(s.Close)
	return s
}

// streamed is one event as the streams send it.
type streamed struct {
	ID        string          `json:"id"`
	RequestID string          `json:"request_id"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
}

func nextEvent(t *testing.T, s *sseclient.Stream) streamed {
	t.Helper()
	ev, ok := s.Next(guard)
	if !ok {
		t.Fatal("no event came, or the stream ended")
	}
	var out streamed
	if err := json.Unmarshal([]byte(ev.Data), &out); err != nil || out.ID != ev.ID || out.Type != ev.Type {
		t.Fatalf("event frame id %q type %q data %s (%v)", ev.ID, ev.Type, ev.Data, err)
	}
	return out
}

// An agent watches a request on one replica while a reviewer clicks on
// another (and a third replica streams it too); the agent's connection drops mid-request, its replica restarts,
// and the agent resumes with Last-Event-ID on the other replica: it has
// received every event of the request exactly once, in order, ending with
// resolved carrying the response. On real Redis and on local mode's
// embedded store.
func TestEventsAcrossReplicasDisconnectAndRestart(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testEventsAcrossReplicas(t, newHarnessOnStore(t, backend))
		})
	}
}

func testEventsAcrossReplicas(t *testing.T, h1 *harness) {
	h1.startJobs()
	h2 := newHarnessOn(t, h1.rdb, h1.prefix, h1.emu)
	agentStream := h2.openEvents("/v1/events", "")
	// A third replica's stream stays connected throughout.
	h3 := newHarnessOn(t, h1.rdb, h1.prefix, h1.emu)
	third := h3.openEvents("/v1/events", "")
	if n := metricValue(t, h2.reg, "approvalbot_event_streams", nil); n != 1 {
		t.Errorf("approvalbot_event_streams = %v with one stream open, want 1", n)
	}

	id := h1.postAndWait(exampleWith(t, "events-e2e", func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id, bob.id}}}
	}))
	var got []streamed
	got = append(got, nextEvent(t, agentStream))
	if got[0].Type != store.EventInputRequested || got[0].RequestID != id {
		t.Fatalf("first event on replica 2 = %+v", got[0])
	}
	ok(t, h1.click(alice, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	got = append(got, nextEvent(t, agentStream)) // seen on replica 2: a click on replica 1
	if got[1].Type != store.EventInputReceived {
		t.Fatalf("after a click on replica 1, replica 2 streamed %+v", got[1])
	}
	// The connection drops; replica 2 restarts (its streams end at Close).
	agentStream.Close()
	h2.svc.Close()
	ok(t, h1.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h2 = newHarnessOn(t, h1.rdb, h1.prefix, h1.emu) // restarted
	resumed := h2.openEvents("/v1/events", got[len(got)-1].ID)
	for got[len(got)-1].Type != store.EventResolved {
		got = append(got, nextEvent(t, resumed))
	}
	if ev, more := resumed.Next(300 * time.Millisecond); more {
		t.Errorf("an event after resolved: %+v", ev)
	}
	answered := countEvents(auditEvents(t, h1, id), "answered")
	want := []string{store.EventInputRequested}
	for range answered {
		want = append(want, store.EventInputReceived)
	}
	want = append(want, store.EventResolved)
	var types []string
	for _, e := range got {
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("events %v; want %v (the audit has %d answers)", types, want, answered)
	}
	var final struct {
		Response struct {
			Artifact struct {
				Type string `json:"type"`
			} `json:"artifact"`
		} `json:"response"`
	}
	if err := json.Unmarshal(got[len(got)-1].Data, &final); err != nil || final.Response.Artifact.Type != "decision/response" {
		t.Errorf("resolved data = %s (%v): want the response", got[len(got)-1].Data, err)
	}
	// The third replica streamed the same events, once each.
	var thirdTypes []string
	for len(thirdTypes) == 0 || thirdTypes[len(thirdTypes)-1] != store.EventResolved {
		thirdTypes = append(thirdTypes, nextEvent(t, third).Type)
	}
	if fmt.Sprint(thirdTypes) != fmt.Sprint(want) {
		t.Errorf("the third replica streamed %v; want %v", thirdTypes, want)
	}
	// The request's own stream, on either replica, replays its history
	// and ends after resolved.
	s := h1.openEvents("/v1/requests/"+id+"/events", "")
	var replay []string
	for ev := range s.Events {
		replay = append(replay, ev.Type)
	}
	if fmt.Sprint(replay) != fmt.Sprint(want) {
		t.Errorf("the request's stream replayed %v, want %v", replay, want)
	}
}
