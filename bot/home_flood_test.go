package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
)

// A flood of requests naming one reviewer who opened her Home tab costs
// her one publish per window (5s), not two per request, and the last
// publish shows the final state.
func TestHomePublishesCoalescedPerUser(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk, func(c *configT, _ *depsT) { c.SlackPostInterval = time.Millisecond })
	h.startJobs()
	h.openEmptyHome(alice, "Ev0FLOOD")
	start := clk.Now()
	const n = 300
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ids[i] = fmt.Sprintf("flood-%04d", i)
			body := exampleWith(t, ids[i], func(doc map[string]any) {
				doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id}}}
			})
			if r := h.post(body); r.Status != http.StatusAccepted {
				t.Errorf("POST %s: %d %s", ids[i], r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	waitQuiet(t, h)
	published := func() []string {
		var out []string
		for _, c := range h.emu.CallsTo("views.publish") {
			if c.Params["user_id"] == alice.id && c.Error == "" {
				out = append(out, c.Params["view"])
			}
		}
		return out
	}
	before := parseHome(t, []byte(published()[len(published())-1]))
	if len(before.waiting) < 2 {
		t.Fatalf("the tab after the flood lists %v", before.waiting)
	}
	// The final change: the oldest request, listed first, is withdrawn.
	gone := before.waiting[0]
	mark := len(h.emu.CallsTo("views.publish"))
	if r := h.do(http.MethodDelete, "/v1/requests/"+gone, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitPublished(alice, mark, "left the withdrawn request out", func(ht homeTab) bool {
		return !slices.Contains(ht.waiting, gone)
	})
	waitQuiet(t, h)
	elapsed := clk.Now().Sub(start)
	all := published()
	// One for opening the tab, then at most one per window begun.
	if most := 2 + int(elapsed/(5*time.Second)); len(all) > most {
		t.Errorf("%d Home publishes for Alice in %s, want at most %d", len(all), elapsed, most)
	}
	last := parseHome(t, []byte(all[len(all)-1]))
	if len(last.waiting) == 0 || slices.Contains(last.waiting, gone) || last.waiting[0] != before.waiting[1] {
		t.Errorf("the last publish lists %v, want the final state (from %s, without the withdrawn %s)", last.waiting, before.waiting[1], gone)
	}
}

// Slack's 429 on views.publish (its limit counts per app) holds every
// Home publish for its Retry-After; the held publish then goes out with
// the latest state.
func TestHomePublishHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk)
	h.startJobs()
	h.emu.SetMethodLimit("views.publish", 1)
	h.openEmptyHome(alice, "Ev0LIMIT") // spends the minute's one publish
	id := h.accept(exampleWith(t, "limited-1", func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id}}}
	}))
	if _, err := h.emu.WaitForCalls(ctxTimeout(t, 10*time.Second), "views.publish", 2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused publish to be rescheduled", func() bool {
		d, err := h.store.Depth(context.Background())
		return err == nil && d.Due == 0 && d.InFlight == 0
	})
	if calls := h.emu.CallsTo("views.publish"); len(calls) != 2 || calls[1].Status != http.StatusTooManyRequests {
		t.Fatalf("views.publish calls within the limit's minute: %d, want the opening and one 429", len(calls))
	}
	clk.Set(clk.Now().Add(time.Minute + time.Second))
	h.waitPublished(alice, 2, "listed the request after the hold", func(ht homeTab) bool {
		return slices.Contains(ht.waiting, id)
	})
}

// waitQuiet is waitIdle for a flood: the outbox may take long to drain on
// a busy machine, so it waits on the condition for minutes, not seconds.
func waitQuiet(t *testing.T, h *harness) {
	t.Helper()
	h.waitOutboxEmpty(time.Minute, 5*time.Minute)
}

// A reviewer clicking through many requests costs the other reviewers who
// opened their Home tab one publish per window, not one per click: only
// the clicker's own tab is published at once.
func TestHomePublishesCoalescedForClicks(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk, func(c *configT, _ *depsT) { c.SlackPostInterval = time.Millisecond })
	h.startJobs()
	h.openEmptyHome(bob, "Ev0CLICKS")
	const n = 40
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("clicks-%02d", i)
		h.postAndWait(exampleWith(t, ids[i], func(doc map[string]any) {
			data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
			data["decisions"] = []any{map[string]any{"id": "go", "type": "approval", "prompt": "Go?", "required": true}}
			doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id, bob.id}}}
		}))
	}
	waitQuiet(t, h)
	start, before, mark := clk.Now(), len(bobPublishes(h)), len(h.emu.CallsTo("views.publish"))
	for _, id := range ids {
		ok(t, h.click(alice, id, "go", button(blocks.ActionApprove, "true")))
	}
	h.waitPublished(bob, mark, "listed nothing waiting", func(ht homeTab) bool { return len(ht.waiting) == 0 })
	waitQuiet(t, h)
	elapsed := clk.Now().Sub(start)
	if got, most := len(bobPublishes(h))-before, 1+int(elapsed/(5*time.Second)); got > most {
		t.Errorf("%d Home publishes for Bob while Alice answered %d requests in %s, want at most %d", got, n, elapsed, most)
	}
	last := parseHome(t, []byte(bobPublishes(h)[len(bobPublishes(h))-1]))
	if len(last.waiting) != 0 {
		t.Errorf("Bob's last Home tab still lists %v; every request was answered", last.waiting)
	}
}

func bobPublishes(h *harness) []string {
	var out []string
	for _, c := range h.emu.CallsTo("views.publish") {
		if c.Params["user_id"] == bob.id && c.Error == "" {
			out = append(out, c.Params["view"])
		}
	}
	return out
}
