package bot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// timed is seed 000's example with a deadline, an on_deadline action, no
// escalation (its own issue), and a callback receiver.
func timed(t *testing.T, id string, deadline time.Time, action string, url string) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = deadline.Format(time.RFC3339)
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		doc["handoff"].(map[string]any)["response_url"] = url
		if action != "" {
			doc["extensions"] = map[string]any{"on_deadline": action}
		}
	})
}

// waitStatus waits (real time) until the request reaches a status.
func (h *harness) waitStatus(id string, want aah.Status) store.Record {
	h.t.Helper()
	deadline := time.Now().Add(guard)
	for {
		rec, err := h.store.Get(context.Background(), id)
		if err == nil && rec.Status == want {
			return rec
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("request %s is %v, want %s", id, rec.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type responseEntry struct {
	DecisionID string `json:"decision_id"`
	Approved   *bool
	Selected   any
	Defaulted  bool `json:"defaulted"`
	TimedOut   bool `json:"timed_out"`
	Answered   *bool
	DecidedBy  *struct{ ID string }
}

func responseOf(t *testing.T, rec store.Record) (overall, source string, entries map[string]responseEntry) {
	t.Helper()
	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	var r struct {
		Source struct {
			AgentID string `json:"agent_id"`
		}
		Content struct {
			Body struct {
				Data struct {
					OverallStatus string          `json:"overall_status"`
					Responses     []responseEntry `json:"responses"`
				}
			}
		}
	}
	if err := json.Unmarshal(rec.Response, &r); err != nil {
		t.Fatalf("response: %v", err)
	}
	entries = map[string]responseEntry{}
	for _, e := range r.Content.Body.Data.Responses {
		entries[e.DecisionID] = e
	}
	return r.Content.Body.Data.OverallStatus, r.Source.AgentID, entries
}

// Every deadline action, applied when the clock passes the deadline: the
// outcome, the response's markers, the message and the delivery.
func TestDeadlineActions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		action      string
		status      aah.Status
		overall     string
		check       func(t *testing.T, e map[string]responseEntry)
		aliceAnswer bool // Alice approves d1 and d2 before the deadline
	}{
		{"", aah.StatusExpired, "pending", func(t *testing.T, e map[string]responseEntry) {
			if e["d1"].Approved == nil || !*e["d1"].Approved || e["d3"].Answered == nil || *e["d3"].Answered {
				t.Errorf("expired response should list d1 as answered and d3 as not: %+v", e)
			}
		}, true},
		{"apply_defaults", aah.StatusResolved, "all_approved", func(t *testing.T, e map[string]responseEntry) {
			if !e["d3"].Defaulted || e["d3"].Selected != "next_week" || !e["d4"].Defaulted || e["d1"].Defaulted {
				t.Errorf("apply_defaults markers: %+v", e)
			}
		}, true},
		{"apply_defaults", aah.StatusExpired, "pending", nil, false}, // d1, d2 required without default
		{"reject", aah.StatusResolved, "all_rejected", func(t *testing.T, e map[string]responseEntry) {
			for _, d := range []string{"d1", "d2", "d4"} {
				if !e[d].TimedOut || e[d].Approved == nil || *e[d].Approved || e[d].DecidedBy != nil {
					t.Errorf("%s: %+v, want rejected and timed_out", d, e[d])
				}
			}
			if !e["d3"].Defaulted {
				t.Errorf("d3 should take its default: %+v", e["d3"])
			}
		}, false},
		{"approve", aah.StatusResolved, "all_approved", func(t *testing.T, e map[string]responseEntry) {
			if !e["d4"].TimedOut || e["d1"].TimedOut {
				t.Errorf("approve markers: %+v", e)
			}
		}, true},
	}
	for _, c := range cases {
		name := c.action + "/" + string(c.status)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			h := newHarness(t, withClock(clk))
			h.startJobs()
			agent := newReceiver(t, testCallbackSecret)
			deadline := clk.Now().Add(48 * time.Hour).Truncate(time.Second) // RFC 3339 drops the fraction
			id := h.postAndWait(timed(t, "deadline", deadline, c.action, agent.srv.URL))
			if c.aliceAnswer {
				ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
				ok(t, h.click(alice, id, "d2", button(blocks.ActionApprove, "true")))
			}
			// Nothing may happen before the deadline. The fake clock runs on
			// in real time, so stop well short of it: a slow machine must not
			// reach the deadline while the test looks.
			clk.Set(deadline.Add(-10 * time.Minute))
			h.waitDrained()
			if rec, _ := h.store.Get(context.Background(), id); !rec.Status.Open() {
				t.Fatalf("closed before its deadline: %v", rec.Status)
			}
			clk.Set(deadline.Add(time.Millisecond))
			rec := h.waitStatus(id, c.status)
			overall, source, entries := responseOf(t, rec)
			if overall != c.overall || source != "system:approvalbot" {
				t.Errorf("overall_status %q source %q, want %q from the system", overall, source, c.overall)
			}
			if c.check != nil {
				c.check(t, entries)
			}
			if d := agent.wait(t, guard); !d.signatureOK || string(d.body) != string(rec.Response) {
				t.Error("the deadline's response was not delivered intact")
			}
			h.waitIdle()
			channel, ts := h.messageOf(id)
			if m, _ := h.emu.Message(channel, ts); strings.Contains(string(m.Blocks), `"type":"actions"`) {
				t.Error("the message still has controls after the deadline")
			}
			entriesAudit, _ := h.store.Audit(context.Background(), id)
			if last := entriesAudit[len(entriesAudit)-2]; last.Event != "deadline_passed" && entriesAudit[len(entriesAudit)-3].Event != "deadline_passed" {
				t.Errorf("no deadline_passed in the audit: %v", entriesAudit)
			}
		})
	}
}

// Resolving or withdrawing a request cancels its deadline in the same step:
// passing the deadline afterwards does nothing.
func TestClosingCancelsTheDeadline(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	deadline := clk.Now().Add(time.Hour).Truncate(time.Second)
	resolved := h.postAndWait(timed(t, "resolved-first", deadline, "reject", ""))
	withdrawn := h.postAndWait(timed(t, "withdrawn-first", deadline, "reject", ""))
	ok(t, h.click(alice, resolved, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.click(alice, resolved, "d3", staticSelect("immediate")))
	ok(t, h.click(alice, resolved, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	if r := h.do(http.MethodDelete, "/v1/requests/"+withdrawn, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d", r.Status)
	}
	for _, id := range []string{resolved, withdrawn} {
		if rec, _ := h.store.Get(context.Background(), id); len(rec.Timers) != 0 {
			t.Errorf("%s still lists timers %v", id, rec.Timers)
		}
	}
	clk.Set(deadline.Add(time.Minute))
	h.waitIdle() // whatever the jump made due has run
	for id, want := range map[string]aah.Status{resolved: aah.StatusResolved, withdrawn: aah.StatusWithdrawn} {
		rec, _ := h.store.Get(context.Background(), id)
		entries, _ := h.store.Audit(context.Background(), id)
		for _, e := range entries {
			if e.Event == "deadline_passed" {
				t.Errorf("%s: the deadline fired after the request closed", id)
			}
		}
		if rec.Status != want {
			t.Errorf("%s: status %v, want %v", id, rec.Status, want)
		}
	}
	if v := metricValue(t, h.reg, "approvalbot_jobs_total", map[string]string{"kind": "expire"}); v != 0 {
		t.Errorf("%v expire jobs ran, want none", v)
	}
}

// Three bot processes on one Redis race for the same deadline timers: every
// request expires exactly once and its response is delivered once.
func TestThreeProcessesApplyEachDeadlineOnce(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	fast := func(c *configT, _ *depsT) { c.SlackPostInterval = time.Millisecond }
	first := newHarness(t, withClock(clk), fast)
	procs := []*harness{first,
		newHarnessOn(t, first.rdb, first.prefix, first.emu, withClock(clk), fast),
		newHarnessOn(t, first.rdb, first.prefix, first.emu, withClock(clk), fast)}
	agent := newReceiver(t, testCallbackSecret)
	deadline := clk.Now().Add(time.Hour).Truncate(time.Second)
	const n = 20
	var ids []string
	for i := range n {
		ids = append(ids, procs[i%3].postAndWaitQuiet(timed(t, "race-"+strconv.Itoa(i), deadline, "", agent.srv.URL)))
	}
	for _, p := range procs {
		p.startJobs()
	}
	first.waitIdle()
	clk.Set(deadline.Add(time.Second))
	for _, id := range ids {
		first.waitStatus(id, aah.StatusExpired)
	}
	for range n {
		agent.wait(t, guard)
	}
	first.waitIdle()
	for _, id := range ids {
		entries, _ := first.store.Audit(context.Background(), id)
		count := map[string]int{}
		for _, e := range entries {
			count[e.Event]++
		}
		if count["deadline_passed"] != 1 || count["expired"] != 1 || count["delivery_succeeded"] != 1 {
			t.Errorf("%s: %v, want one deadline, one expiry, one delivery", id, count)
		}
	}
	if got := len(agent.deliveries()); got != n {
		t.Errorf("%d deliveries for %d requests", got, n)
	}
	// Each expiry is counted by the one process that applied it: across the
	// three, once per request (the expire jobs acked, so counted, by now).
	var expired, samples float64
	for _, p := range procs {
		expired += metricValue(t, p.reg, "approvalbot_decisions_total", map[string]string{"outcome": "expired"})
		k, _ := histogram(t, p.reg, "approvalbot_decision_time_to_resolution_seconds", map[string]string{"outcome": "expired"})
		samples += float64(k)
	}
	if expired != n || samples != n {
		t.Errorf("decisions_total{outcome=\"expired\"} %v and %v resolution samples across the processes, want %d", expired, samples, n)
	}
}

// postAndWaitQuiet submits a request; its message is posted once jobs run.
func (h *harness) postAndWaitQuiet(body []byte) string {
	h.t.Helper()
	r := h.post(body)
	if r.Status != http.StatusAccepted {
		h.t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	return r.json(h.t)["id"].(string)
}
