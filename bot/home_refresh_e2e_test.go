package bot_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// The App Home tab of someone who opened it follows the requests waiting
// for them without their reopening it: a request appears when it is
// created (and gains its link once posted) or escalated to them, and
// disappears when it is withdrawn or expires.

// openEmptyHome opens u's Home tab and waits for it to say nothing waits.
func (h *harness) openEmptyHome(u slackUser, eventID string) {
	h.t.Helper()
	h.openHome(u, eventID, nil)
	h.waitHome(u, "said nothing waits", func(ht homeTab) bool { return len(ht.waiting) == 0 })
}

// dueFor is seed 000's example reduced to one approval for reviewers, due
// at deadline (expiring then), created at now, without other timers.
func dueFor(t *testing.T, id string, now, deadline time.Time, reviewers []string) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		doc["artifact"].(map[string]any)["created_at"] = now.Format(time.RFC3339)
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:1]
		data["deadline"] = deadline.Format(time.RFC3339)
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": reviewers,
			"reminders": map[string]any{"every": "1h", "max": 0}}}
	})
}

func TestHomeTabFollowsCreateAndWithdraw(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	h.openEmptyHome(alice, "Ev0HRCW1")
	h.openEmptyHome(bob, "Ev0HRCW2")

	id := h.accept(simple(t, "hr-created", []string{alice.id}, "C0APPROVALS"))
	h.waitHome(alice, "listed the new request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	// Once posted, its entry links to the message.
	permalink := ""
	h.waitHome(alice, "linked the posted message", func(ht homeTab) bool {
		if rec, err := h.store.Get(ctxTimeout(t, time.Second), id); err == nil {
			permalink = rec.Slack.Permalink
		}
		return permalink != "" && strings.Contains(string(ht.raw), permalink)
	})

	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitHome(alice, "dropped the withdrawn request", func(ht homeTab) bool { return len(ht.waiting) == 0 })
	// Bob is no reviewer of it: his tab was never re-published.
	for _, c := range h.emu.CallsTo("views.publish") {
		if c.Params["user_id"] == bob.id && c.At.After(h.record(id).ReceivedAt) {
			t.Errorf("Bob's Home tab was re-published for a request he does not review")
		}
	}
	// Nobody who never opened the tab gets one.
	if _, ok := h.emu.HomeView(mallory.id); ok {
		t.Error("a Home tab was published for a user who never opened it")
	}
}

func TestHomeTabFollowsExpiry(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(dueFor(t, "hr-expires", now, now.Add(2*time.Hour), []string{alice.id}))
	h.openHome(alice, "Ev0HREX1", nil)
	h.waitHome(alice, "listed the request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })

	clk.Set(now.Add(2*time.Hour + time.Second))
	h.waitStatus(id, aah.StatusExpired)
	h.waitHome(alice, "dropped the expired request", func(ht homeTab) bool { return len(ht.waiting) == 0 })
}

func TestHomeTabFollowsEscalation(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "hr-escalates", now, []string{alice.id}, step("1h", bob.id)))
	h.openHome(alice, "Ev0HRES1", nil)
	h.waitHome(alice, "listed the request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	h.openEmptyHome(bob, "Ev0HRES2")

	clk.Set(now.Add(time.Hour + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	// The escalation target now has it waiting; the reviewer still has it.
	h.waitHome(bob, "listed the escalated request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	h.waitHome(alice, "kept the escalated request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
}
