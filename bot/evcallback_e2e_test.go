package bot_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
)

func withEvents(url string, types ...string) func(map[string]any) {
	return func(doc map[string]any) {
		sub := map[string]any{"url": url}
		if len(types) > 0 {
			sub["types"] = types
		}
		doc["extensions"].(map[string]any)["events"] = sub
	}
}

// postedEvent is an event callback's body.
type postedEvent struct {
	ID        string `json:"id"`
	RequestID string `json:"request_id"`
	Type      string `json:"type"`
	Data      struct {
		Actor    string          `json:"actor"`
		Response json.RawMessage `json:"response"`
	} `json:"data"`
}

// waitEvents waits until the receiver has answered 2xx to n POSTs and
// returns every POST (signature-checked) decoded.
func waitEvents(t *testing.T, r *receiver, n int) []postedEvent {
	t.Helper()
	deadline := time.After(guard)
	for range n {
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("fewer than %d event callbacks arrived: %d POSTs", n, len(r.deliveries()))
		}
	}
	var out []postedEvent
	for i, d := range r.deliveries() {
		var ev postedEvent
		if err := json.Unmarshal(d.body, &ev); err != nil {
			t.Fatalf("POST %d: %q: %v", i+1, d.body, err)
		}
		if !d.signatureOK {
			t.Errorf("POST %d (%s): the signature does not verify with CALLBACK_SECRET", i+1, ev.Type)
		}
		if want := "evt_" + ev.RequestID + "_" + ev.ID; d.id != want {
			t.Errorf("POST %d: webhook-id %q, want %q", i+1, d.id, want)
		}
		out = append(out, ev)
	}
	return out
}

// An agent that subscribed its events in extensions.events is POSTed
// input:requested, then Alice's click as input:received (before anyone
// else decides), then Bob's and the resolution with the response, in
// order, signed like the decision response, which is delivered as ever;
// on real Redis and on the embedded store. A first failure (503) is
// retried under the same webhook-id.
func TestEventCallbacksEndToEnd(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend)
			h.startJobs()
			agent := newReceiver(t, testCallbackSecret)
			events := newReceiver(t, testCallbackSecret)
			events.failFirst = 1
			id := h.postAndWait(approvalRequest(t, "evhook-"+backend, map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}, "quorum": 2},
				withResponseURL(agent.srv.URL+"/decision"), withEvents(events.srv.URL+"/events")))
			got := waitEvents(t, events, 1)
			if len(got) != 2 || got[0].Type != "input:requested" || got[1].ID != got[0].ID {
				t.Fatalf("first events %+v; want input:requested, failed once and retried", got)
			}

			ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
			got = waitEvents(t, events, 1)
			if last := got[len(got)-1]; last.Type != "input:received" || last.Data.Actor != "human:U0ALICE" {
				t.Fatalf("after Alice's click: %+v; want her input:received", last)
			}
			if len(agent.deliveries()) != 0 {
				t.Fatal("a decision response before the request resolved")
			}

			ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
			got = waitEvents(t, events, 2)
			var types, ids []string
			for _, ev := range got[1:] { // after the retried first
				types, ids = append(types, ev.Type), append(ids, ev.ID)
			}
			if want := []string{"input:requested", "input:received", "input:received", "resolved"}; !slices.Equal(types, want) {
				t.Fatalf("event callbacks %q; want %q", types, want)
			}
			if !strictlyOrdered(ids) {
				t.Errorf("event ids %q are not in stream order", ids)
			}
			decision := agent.wait(t, guard)
			final := got[len(got)-1]
			if !decision.signatureOK || !strings.Contains(string(final.Data.Response), `"overall_status"`) ||
				!jsonEqual(t, final.Data.Response, decision.body) {
				t.Errorf("resolved carries %s; want the decision response %s", final.Data.Response, decision.body)
			}
			// GET shows how far the events went, once the last is recorded.
			var cb map[string]any
			for deadline := time.Now().Add(guard); ; {
				cb, _ = h.get(id)["events_callback"].(map[string]any)
				if cb["delivered_through"] == final.ID || time.Now().After(deadline) {
					break
				}
				h.waitIdle()
			}
			if cb["delivered_through"] != final.ID || cb["state"] != "active" || cb["url"] != events.srv.URL+"/events" {
				t.Errorf("events_callback = %v; want active, delivered through %s", cb, final.ID)
			}
		})
	}
}

// strictlyOrdered compares "<ms>-<seq>" ids numerically.
func strictlyOrdered(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		a, b := ids[i-1], ids[i]
		if len(a) > len(b) || (len(a) == len(b) && a >= b) {
			return false
		}
	}
	return true
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// Intake refuses a subscription it cannot honour, naming the field.
func TestEventCallbackSubscriptionRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct{ url, types, field string }{
		{"ftp://agent.example.com/ev", "", "extensions.events.url"},
		{"https://agent.example.com/ev", "approved", "extensions.events.types[0]"},
	} {
		var types []string
		if tc.types != "" {
			types = []string{tc.types}
		}
		r := h.post(approvalRequest(t, "evhook-bad", map[string]any{}, withEvents(tc.url, types...)))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.field) {
			t.Errorf("%s %v: %d %s; want 400 naming %s", tc.url, types, r.Status, r.Body, tc.field)
		}
	}
}
