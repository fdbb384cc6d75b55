package bot_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
)

// BenchmarkInteractionAck measures how long Slack waits for approvalbot to
// acknowledge a click: signature check, payload parse, the answer's atomic
// audited write to real Redis, and the ack, over real HTTP on loopback.
// Clicks arrive at a fixed rate (200/s, spread over 50 open requests with
// four approval decisions each, alternating approve/reject so every click is
// a change); it reports the p50 and p99 ack latency. Slack allows 3 s.
func BenchmarkInteractionAck(b *testing.B) {
	const rate, requests = 200, 50
	h := newHarness(b)
	ids := make([]string, requests)
	for i := range ids {
		ids[i] = fmt.Sprintf("ack-%02d", i)
		if r := h.post(exampleWith(b, ids[i], nil)); r.Status != http.StatusAccepted {
			b.Fatalf("POST: %d", r.Status)
		}
	}
	latencies := make([]time.Duration, b.N)
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		wg.Go(func() {
			id := ids[i%requests]
			verb, value := blocks.ActionApprove, "true"
			if (i/requests)%2 == 1 {
				verb, value = blocks.ActionReject, "false"
			}
			payload := map[string]any{"type": "block_actions",
				"user":    map[string]any{"id": "U0ALICE", "name": "alice"},
				"channel": map[string]any{"id": "C0APPROVALS"},
				"actions": []any{action{"action_id": verb, "block_id": blocks.BlockID(1, id, "d1"), "type": "button", "value": value}}}
			start := time.Now()
			if r := h.sendInteraction(payload); r.Status != http.StatusOK {
				b.Errorf("click: %d %s", r.Status, r.Body)
			}
			latencies[i] = time.Since(start)
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkResolutionToCallback measures how long an agent waits for its
// decision: from the click that resolves a one-decision request to the
// signed response arriving at the agent's endpoint (job runner, delivery
// job, signing, POST on loopback). Resolutions come one at a time; it
// reports p50 and p99.
func BenchmarkResolutionToCallback(b *testing.B) {
	h := newHarness(b)
	h.startJobs()
	agent := newReceiver(b, testCallbackSecret)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("cb-%05d", i)
		body := exampleWith(b, ids[i], func(doc map[string]any) {
			data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
			data["decisions"] = data["decisions"].([]any)[:1]
			withResponseURL(agent.srv.URL)(doc)
		})
		if r := h.post(body); r.Status != http.StatusAccepted {
			b.Fatalf("POST: %d", r.Status)
		}
	}
	h.waitIdle() // every message posted: only deliveries run from here on
	latencies := make([]time.Duration, b.N)
	b.ResetTimer()
	for i, id := range ids {
		start := time.Now()
		r := h.sendInteraction(map[string]any{"type": "block_actions",
			"user": map[string]any{"id": "U0ALICE", "name": "alice"}, "channel": map[string]any{"id": "C0APPROVALS"},
			"actions": []any{action{"action_id": blocks.ActionApprove, "block_id": blocks.BlockID(1, id, "d1"), "type": "button", "value": "true"}}})
		if r.Status != http.StatusOK {
			b.Fatalf("click: %d", r.Status)
		}
		agent.wait(b, 10*time.Second)
		latencies[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}
