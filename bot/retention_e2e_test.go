package bot_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/store"
)

// With RETENTION set, the job runner's retention sweeps delete a request
// that closed longer ago than it once an export covers its audit, and keep
// one closed as long ago that no export covers yet (counted on /metrics as
// waiting); the audit still verifies. The clock is the harness's: the
// sweeps run when it jumps, not on the wall clock.
func TestRetentionSweepsThroughTheJobRunner(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk), func(c *configT, _ *depsT) { c.Retention = bot.Retention(30 * 24 * time.Hour) })
	h.startJobs()
	ctx := context.Background()
	h.postAndWaitQuiet(exampleWith(t, "ret-exported", nil))
	if r := h.do(http.MethodDelete, "/v1/requests/ret-exported", tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitIdle()
	// What `approvalbot audit export` does: export, then mark.
	var file bytes.Buffer
	sum, err := h.store.Export(ctx, &file, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.MarkExported(ctx, sum.Runs); err != nil {
		t.Fatal(err)
	}
	h.postAndWaitQuiet(exampleWith(t, "ret-unexported", nil))
	if r := h.do(http.MethodDelete, "/v1/requests/ret-unexported", tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitIdle()
	if h.do(http.MethodGet, "/v1/requests/ret-exported", tokenPM, "", nil).Status != http.StatusOK {
		t.Fatal("deleted before its time")
	}

	// A month later, the hourly sweeps find both past retention.
	start := clk.Now()
	clk.Set(start.Add(31 * 24 * time.Hour))
	deadline := time.Now().Add(guard)
	for h.do(http.MethodGet, "/v1/requests/ret-exported", tokenPM, "", nil).Status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the retention sweep did not delete the exported request")
		}
		clk.Set(clk.Now().Add(time.Hour)) // the next sweep of each shard is due
		h.svc.Runner().Wake()
		time.Sleep(10 * time.Millisecond)
	}
	r := h.do(http.MethodGet, "/v1/requests/ret-exported", tokenPM, "", nil)
	if !strings.Contains(string(r.Body), "retention") {
		t.Errorf("404 of a deleted request: %s", r.Body)
	}
	if h.do(http.MethodGet, "/v1/requests/ret-unexported", tokenPM, "", nil).Status != http.StatusOK {
		t.Error("a request no export covers was deleted")
	}
	if r := h.do(http.MethodGet, "/v1/requests/ret-exported/audit", tokenPM, "", nil); r.Status != http.StatusNotFound {
		t.Errorf("audit of a deleted request: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodGet, "/v1/requests/ret-unexported/audit", tokenPM, "", nil); r.Status != http.StatusOK || r.json(t)["verified"] != true {
		t.Errorf("audit of a kept request after the sweep: %d %s", r.Status, r.Body)
	}
	// The sweep counts a deletion after it committed, which the 404 above
	// may have seen first.
	for time.Now().Before(deadline) && metricValue(t, h.reg, "approvalbot_retention_deleted_total", nil) < 1 {
		time.Sleep(time.Millisecond)
	}
	if n := metricValue(t, h.reg, "approvalbot_retention_deleted_total", nil); n != 1 {
		t.Errorf("approvalbot_retention_deleted_total = %v, want 1", n)
	}
	for time.Now().Before(deadline) && metricValue(t, h.reg, "approvalbot_retention_waiting_for_export_requests", nil) != 1 {
		clk.Set(clk.Now().Add(time.Hour))
		h.svc.Runner().Wake()
		time.Sleep(10 * time.Millisecond)
	}
	if n := metricValue(t, h.reg, "approvalbot_retention_waiting_for_export_requests", nil); n != 1 {
		t.Errorf("approvalbot_retention_waiting_for_export_requests = %v, want 1", n)
	}
	if age := metricValue(t, h.reg, "approvalbot_audit_unexported_seconds", nil); age < (30 * 24 * time.Hour).Seconds() {
		t.Errorf("approvalbot_audit_unexported_seconds = %v, want over 30 days", age)
	}
	if rep, err := h.store.VerifyAll(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("VerifyAll after the sweep: %+v, %v", rep, err)
	}
	// The export made before the sweep still verifies offline.
	if _, err := store.NewAuditVerifier(nil).VerifyExport(&file); err != nil {
		t.Errorf("the export: %v", err)
	}
	// The id may be used again: a new request (without the example's
	// deadlines, passed on the jumped clock).
	again := exampleWith(t, "ret-exported", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		delete(data, "deadline")
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
	})
	if r := h.post(again); r.Status != http.StatusAccepted {
		t.Errorf("resubmitting a deleted id: %d %s", r.Status, r.Body)
	}
	h.waitIdle()
	if rep, err := h.store.VerifyAll(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("VerifyAll after the id came back: %+v, %v", rep, err)
	}
}
