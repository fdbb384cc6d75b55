package bot_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
)

// The request resolves during a Slack outage of chat.update longer than
// the sync job's attempts (JOB_MAX_ATTEMPTS, 5 here). Dead-lettered, the
// sync would never run again (a closed request has no next change) and the
// message would show the request open, with live buttons, for good. Its
// retries are not counted for a day after the change: once Slack is back,
// the message shows the outcome.
func TestSyncOutlastsAChatUpdateOutage(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk)
	h.startJobs()
	id := h.postAndWait(simple(t, "sync-outage", []string{alice.id}, "C0APPROVALS"))
	outage := 3 * h.cfg.JobMaxAttempts
	h.emu.InjectHTTPStatus("chat.update", http.StatusServiceUnavailable, outage)
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	if st := h.record(id).Status; st.Open() {
		t.Fatalf("request is %s after the click, want it resolved", st)
	}
	for range 2 * outage { // every retry of the sync job, and then some
		clk.Set(clk.Now().Add(10 * time.Minute))
		h.waitDrained()
	}
	rec := h.record(id)
	m, _ := h.emu.Message(rec.Slack.Channel, rec.Slack.TS)
	if hasControls(m) || m.Edited == 0 || rec.Slack.RenderedVersion != rec.Version {
		t.Errorf("request is %s (version %d, message rendered at %d); its message shows it open: edited %d times, "+
			"controls %v; chat.update calls: %d", rec.Status, rec.Version, rec.Slack.RenderedVersion, m.Edited,
			hasControls(m), len(h.emu.CallsTo("chat.update")))
	}
}

// A 429 on chat.update without Retry-After (a proxy dropped the header)
// waits RATE_LIMIT_HOLD, as a post's does, not the seconds a failing
// update's first retries are spaced by.
func TestSync429WithoutRetryAfterWaitsTheHold(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk, func(_ *configT, d *depsT) { d.RateLimitHold = 30 * time.Second })
	h.startJobs()
	id := h.postAndWait(simple(t, "sync-429", []string{alice.id}, "C0APPROVALS"))
	h.emu.InjectHTTPStatus("chat.update", http.StatusTooManyRequests, 1)
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	h.waitDrained()
	if n := len(h.emu.CallsTo("chat.update")); n != 1 {
		t.Fatalf("%d chat.update calls after the click, want the one answered 429", n)
	}
	clk.Set(clk.Now().Add(10 * time.Second))
	h.waitDrained()
	if n := len(h.emu.CallsTo("chat.update")); n != 1 {
		t.Errorf("%d chat.update calls 10 s after a 429, want 1: the update waits the 30 s hold", n)
	}
	clk.Set(clk.Now().Add(25 * time.Second))
	h.waitDrained()
	rec := h.record(id)
	if m, _ := h.emu.Message(rec.Slack.Channel, rec.Slack.TS); m.Edited == 0 || rec.Slack.RenderedVersion != rec.Version {
		t.Errorf("the message was not updated once the hold passed (edited %d, rendered %d of %d)", m.Edited,
			rec.Slack.RenderedVersion, rec.Version)
	}
}
