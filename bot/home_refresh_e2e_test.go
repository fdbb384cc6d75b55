package bot_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// The App Home tab of someone who opened it follows the requests waiting
// for them without their reopening it: a request appears when it is
// created (and gains its link once posted) or escalated to them, and
// disappears when it is withdrawn or expires. Each check looks at the
// views.publish calls made after the change, so a tab that was already
// right before it cannot pass for one that followed it.

// openEmptyHome opens u's Home tab and waits for it to say nothing waits.
func (h *harness) openEmptyHome(u slackUser, eventID string) {
	h.t.Helper()
	h.openHome(u, eventID, nil)
	h.waitHome(u, "said nothing waits", func(ht homeTab) bool { return len(ht.waiting) == 0 })
}

// publishMark counts the views.publish calls so far, once the outbox is
// idle: the publishes after it are caused by what the test does next.
func (h *harness) publishMark() int {
	h.t.Helper()
	h.waitIdle()
	return len(h.emu.CallsTo("views.publish"))
}

// waitPublished waits for a views.publish of u's Home tab, after mark,
// whose tab satisfies cond.
func (h *harness) waitPublished(u slackUser, mark int, what string, cond func(homeTab) bool) homeTab {
	h.t.Helper()
	var last homeTab
	err := h.emu.WaitFor(ctxTimeout(h.t, guard), func(sn *slackemu.Snapshot) bool {
		calls := sn.CallsTo("views.publish")
		for _, c := range calls[min(mark, len(calls)):] {
			if c.Params["user_id"] != u.id || c.Error != "" {
				continue
			}
			if last = parseHome(h.t, json.RawMessage(c.Params["view"])); cond(last) {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no Home tab of %s published after the change %s; last: waiting %v\n%s", u.id, what, last.waiting, last.raw)
	}
	if errs := slackemu.ValidateView(last.raw); len(errs) > 0 {
		h.t.Fatalf("invalid Home tab: %v", errs)
	}
	return last
}

// publishedSince waits for the outbox to be idle, then counts the Home tabs
// published after mark by user.
func (h *harness) publishedSince(mark int) map[string]int {
	h.t.Helper()
	h.waitIdle()
	perUser := map[string]int{}
	for _, c := range h.emu.CallsTo("views.publish")[mark:] {
		perUser[c.Params["user_id"]]++
	}
	return perUser
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
	// Bob opened his tab but reviews nothing here; Morgan reviews the
	// request but never opened his.
	h.openEmptyHome(bob, "Ev0HRCW2")

	created := h.publishMark()
	id := h.accept(simple(t, "hr-created", []string{alice.id, morgan.id}, "C0APPROVALS"))
	h.waitPublished(alice, created, "listed the new request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	// Once posted, its entry links to the message.
	permalink := ""
	h.waitPublished(alice, created, "linked the posted message", func(ht homeTab) bool {
		if rec, err := h.store.Get(ctxTimeout(t, time.Second), id); err == nil {
			permalink = rec.Slack.Permalink
		}
		return permalink != "" && slices.Equal(ht.waiting, []string{id}) && strings.Contains(string(ht.raw), permalink)
	})

	withdrawn := h.publishMark()
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitPublished(alice, withdrawn, "dropped the withdrawn request", func(ht homeTab) bool { return len(ht.waiting) == 0 })

	perUser := h.publishedSince(created)
	if perUser[bob.id] != 0 {
		t.Errorf("Bob's Home tab was re-published %d times for a request he does not review", perUser[bob.id])
	}
	if perUser[morgan.id] != 0 {
		t.Errorf("Morgan's Home tab was published %d times though he never opened it", perUser[morgan.id])
	}
}

// A request naming nobody is decided by the workspace's default reviewers
// (Alice and Bob here): it is theirs to see, on their tabs as it comes and
// goes, and nobody else's.
func TestHomeTabFollowsRequestNamingNobody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	h.openEmptyHome(alice, "Ev0HRNN1")
	h.openEmptyHome(mallory, "Ev0HRNN2")
	h.openEmptyHome(bob, "Ev0HRNN3")

	created := h.publishMark()
	// Two decisions, so one answer leaves it open.
	id := h.accept(exampleWith(t, "hr-nobody", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:2]
		delete(data, "escalation")
		delete(data, "deadline")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		doc["extensions"] = map[string]any{"slack": map[string]any{"reminders": map[string]any{"every": "1h", "max": 0}}}
	}))
	h.waitPublished(alice, created, "listed the request naming nobody", func(ht homeTab) bool {
		return slices.Equal(ht.waiting, []string{id})
	})
	// Alice answers one decision: Bob, a default reviewer too, sees it
	// still waiting, refreshed as a named co-reviewer's tab would be.
	answered := h.publishMark()
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	h.waitPublished(bob, answered, "followed Alice's answer", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	withdrawn := h.publishMark()
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitPublished(alice, withdrawn, "dropped the withdrawn request", func(ht homeTab) bool { return len(ht.waiting) == 0 })
	if n := h.publishedSince(created)[mallory.id]; n != 0 {
		t.Errorf("Mallory's Home tab was re-published %d times for a request only the default reviewers decide", n)
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
	h.openEmptyHome(bob, "Ev0HREX2")

	expired := h.publishMark()
	clk.Set(now.Add(2*time.Hour + time.Second))
	h.waitStatus(id, aah.StatusExpired)
	h.waitPublished(alice, expired, "dropped the expired request", func(ht homeTab) bool { return len(ht.waiting) == 0 })
	if n := h.publishedSince(expired)[bob.id]; n != 0 {
		t.Errorf("Bob's Home tab was re-published %d times for a request he does not review", n)
	}
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
	h.openEmptyHome(mallory, "Ev0HRES3")

	escalated := h.publishMark()
	clk.Set(now.Add(time.Hour + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	// The escalation target now has it waiting; the reviewer's tab is
	// re-published too and still has it.
	h.waitPublished(bob, escalated, "listed the escalated request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	h.waitPublished(alice, escalated, "kept the escalated request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
	if n := h.publishedSince(escalated)[mallory.id]; n != 0 {
		t.Errorf("Mallory's Home tab was re-published %d times for a request she does not review", n)
	}
}
