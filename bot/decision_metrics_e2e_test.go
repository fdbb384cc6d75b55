package bot_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/prometheus/client_golang/prometheus"
)

// decidable is seed 000's example created now, due at deadline, without
// escalation or reminders, naming Alice and Bob as reviewers.
func decidable(t *testing.T, id string, now, deadline time.Time) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		doc["artifact"].(map[string]any)["created_at"] = now.Format(time.RFC3339)
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = deadline.Format(time.RFC3339)
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []any{"U0ALICE", "bob@example.com"}}}
	})
}

// The decision metrics on /metrics, driven through Slack, the API and the
// timers on the harness clock: requests closed by every outcome are counted
// once each with their times, first answers once per request, reminder DMs
// and escalated copies once each, and the open requests by age at scrape
// time.
func TestDecisionMetrics(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	month := now.Add(30 * 24 * time.Hour)
	approved := h.postAndWait(decidable(t, "metrics-approved", now, month))
	rejected := h.postAndWait(decidable(t, "metrics-rejected", now, month))
	withdrawn := h.postAndWait(decidable(t, "metrics-withdrawn", now, month))
	expires := h.postAndWait(decidable(t, "metrics-expires", now, now.Add(2*time.Hour)))
	reminded := h.postAndWait(remindable(t, "metrics-reminded", "Reminded once", now, []string{"U0ALICE", "bob@example.com"}, "1h", 1))
	escalated := h.postAndWait(escalating(t, "metrics-escalated", now, []string{"U0ALICE"}, []any{step("1h", "U0MANAGER")}))
	t0 := h.record(approved).ReceivedAt

	// Counters and histograms are read until they reach what is wanted (the
	// store shows a change a moment before its process counts it), then
	// checked exactly once everything has settled, which catches a double
	// count.
	type want struct {
		decisions                                map[string]float64
		firstAnswers, reminders, escalationsSent float64
		open                                     map[string]float64
	}
	read := func() want {
		got := want{decisions: map[string]float64{}, open: map[string]float64{}}
		for _, o := range []string{"approved", "rejected", "partial", "expired", "withdrawn"} {
			got.decisions[o] = metricValue(t, h.reg, "approvalbot_decisions_total", map[string]string{"outcome": o})
			if n, _ := histogram(t, h.reg, "approvalbot_decision_time_to_resolution_seconds",
				map[string]string{"outcome": o}); float64(n) != got.decisions[o] {
				t.Errorf("time_to_resolution{outcome=%q} has %v samples, decisions_total %v", o, n, got.decisions[o])
			}
		}
		n, _ := histogram(t, h.reg, "approvalbot_decision_time_to_first_answer_seconds", nil)
		got.firstAnswers = float64(n)
		got.reminders = metricValue(t, h.reg, "approvalbot_reminders_sent_total", nil)
		got.escalationsSent = metricValue(t, h.reg, "approvalbot_escalations_total", nil)
		for _, age := range []string{"<1h", "1h-1d", ">1d"} {
			got.open[age] = metricValue(t, h.reg, "approvalbot_open_requests", map[string]string{"age": age})
		}
		return got
	}
	same := func(a, b want) bool {
		if a.firstAnswers != b.firstAnswers || a.reminders != b.reminders || a.escalationsSent != b.escalationsSent {
			return false
		}
		for k, v := range a.decisions {
			if b.decisions[k] != v {
				return false
			}
		}
		for k, v := range a.open {
			if b.open[k] != v {
				return false
			}
		}
		return true
	}
	expect := func(what string, w want) {
		t.Helper()
		for _, o := range []string{"approved", "rejected", "partial", "expired", "withdrawn"} {
			if _, ok := w.decisions[o]; !ok {
				w.decisions[o] = 0
			}
		}
		for deadline := time.Now().Add(guard); !same(read(), w); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: timed out at %+v, want %+v", what, read(), w)
			}
		}
		h.waitIdle()
		if got := read(); !same(got, w) {
			t.Errorf("%s: %+v, want %+v", what, got, w)
		}
	}
	expect("nothing decided yet", want{decisions: map[string]float64{}, open: map[string]float64{"<1h": 6, "1h-1d": 0, ">1d": 0}})

	// Alice approves one request 10 minutes in (a double click counts
	// nothing more) and rejects another 20 minutes in; the agent withdraws
	// a third.
	clk.Set(t0.Add(10 * time.Minute))
	ok(t, h.click(alice, approved, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.click(alice, approved, "d3", staticSelect("immediate")))
	ok(t, h.click(alice, approved, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h.waitStatus(approved, aah.StatusResolved)
	ok(t, h.click(alice, approved, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	clk.Set(t0.Add(20 * time.Minute))
	for _, d := range []string{"d1", "d2", "d4"} {
		ok(t, h.click(alice, rejected, d, button(blocks.ActionReject, "false")))
	}
	ok(t, h.click(alice, rejected, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h.waitStatus(rejected, aah.StatusResolved)
	if r := h.do(http.MethodDelete, "/v1/requests/"+withdrawn, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodDelete, "/v1/requests/"+withdrawn, tokenPM, "", nil); r.Status == http.StatusOK {
		t.Errorf("a second DELETE was accepted: %s", r.Body)
	}
	expect("approved, rejected, withdrawn", want{
		decisions: map[string]float64{"approved": 1, "rejected": 1, "withdrawn": 1}, firstAnswers: 2,
		open: map[string]float64{"<1h": 3, "1h-1d": 0, ">1d": 0},
	})
	if _, sum := histogram(t, h.reg, "approvalbot_decision_time_to_resolution_seconds",
		map[string]string{"outcome": "approved"}); sum < (10 * time.Minute).Seconds() {
		t.Errorf("time to resolution of the approved request: %vs, want at least 600", sum)
	}

	// An hour in: one reminder to Alice and Bob, one escalated copy.
	clk.Set(t0.Add(time.Hour + time.Second))
	h.waitReminded(t, reminded, 1)
	eventually(t, "the escalated copy", func() bool { return len(escalationCopies(h.emu, "U0MANAGER")) == 1 })
	// Two hours in, the deadline; a new request arrives.
	clk.Set(t0.Add(2*time.Hour + time.Second))
	h.waitStatus(expires, aah.StatusExpired)
	h.postAndWait(decidable(t, "metrics-new", clk.Now(), month))
	expect("two hours in", want{
		decisions: map[string]float64{"approved": 1, "rejected": 1, "withdrawn": 1, "expired": 1}, firstAnswers: 2,
		reminders: 2, escalationsSent: 1, open: map[string]float64{"<1h": 1, "1h-1d": 2, ">1d": 0},
	})
	// A day later the two older open requests are over a day old.
	clk.Set(t0.Add(25 * time.Hour))
	expect("a day later", want{
		decisions: map[string]float64{"approved": 1, "rejected": 1, "withdrawn": 1, "expired": 1}, firstAnswers: 2,
		reminders: 2, escalationsSent: 1, open: map[string]float64{"<1h": 0, "1h-1d": 1, ">1d": 2},
	})
	if h.record(escalated).Status != aah.StatusEscalated {
		t.Errorf("the escalated request is %s", h.record(escalated).Status)
	}
}

// failingAger is a store whose open-request indexes cannot be read.
type failingAger struct{ calls *int }

func (f failingAger) OpenByAge(ctx context.Context, _ []time.Duration) ([]int64, error) {
	*f.calls++
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("read without a deadline")
	}
	return nil, errors.New("redis: connection refused")
}

// A scrape whose read of the open requests fails still answers: it says
// so (scrape_ok 0, and a log line) instead of exporting stale or zero ages,
// and the read has a deadline so a slow Redis cannot hold the scrape.
func TestOpenRequestsCollectorFailedRead(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	calls := 0
	reg := prometheus.NewRegistry()
	reg.MustRegister(bot.NewOpenRequestsCollector(failingAger{&calls}, slog.New(slog.NewTextHandler(&logged, nil))))
	if got := metricValue(t, reg, "approvalbot_open_requests_scrape_ok", nil); got != 0 || calls != 1 {
		t.Errorf("scrape_ok %v after %d reads, want 0 after 1", got, calls)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "approvalbot_open_requests" {
			t.Errorf("open requests exported without a read: %v", f)
		}
	}
	if !strings.Contains(logged.String(), "connection refused") {
		t.Errorf("the failed read was not logged: %q", logged.String())
	}
}
