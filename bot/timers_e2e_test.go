package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// remindable is seed 000's example titled title, created now, due in 30
// days, without escalation, naming reviewers and reminding every `every`
// at most max times.
func remindable(t *testing.T, id, title string, now time.Time, reviewers []string, every string, max int) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		doc["artifact"].(map[string]any)["title"] = title
		doc["artifact"].(map[string]any)["created_at"] = now.Format(time.RFC3339)
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = now.Add(30 * 24 * time.Hour).Format(time.RFC3339)
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		sl := map[string]any{"reminders": map[string]any{"every": every, "max": max}}
		if len(reviewers) > 0 {
			sl["reviewers"] = reviewers
		}
		doc["extensions"] = map[string]any{"slack": sl}
	})
}

// escalating is seed 000's example created now, due in 30 days, without
// reminders, naming reviewers, with data.escalation set to escalation (one
// {after, to} object or a list of them).
func escalating(t *testing.T, id string, now time.Time, reviewers []string, escalation any) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		doc["artifact"].(map[string]any)["created_at"] = now.Format(time.RFC3339)
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = now.Add(30 * 24 * time.Hour).Format(time.RFC3339)
		data["escalation"] = escalation
		delete(doc["handoff"].(map[string]any), "response_deadline")
		if len(reviewers) > 0 {
			doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": reviewers}}
		}
	})
}

func step(after, to string) map[string]any { return map[string]any{"after": after, "to": to} }

// eventually polls cond (real time) until it holds, for up to guard.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) record(id string) store.Record {
	h.t.Helper()
	rec, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return rec
}

// waitReminded waits until reminder n of a request completed.
func (h *harness) waitReminded(t *testing.T, id string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("reminder %d of %s", n, id), func() bool { return h.record(id).RemindersDone >= n })
}

// remindersTo counts the reminders about a request titled title in a
// conversation (a user id means their DM).
func remindersTo(emu *slackemu.Server, channel, title string) int {
	n := 0
	for _, m := range emu.Messages(channel) {
		if strings.HasPrefix(m.Text, "Reminder: ") && strings.Contains(m.Text, title) {
			n++
		}
	}
	return n
}

func auditEvents(t *testing.T, h *harness, id string) []store.AuditEntry {
	t.Helper()
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func countEvents(entries []store.AuditEntry, event string) int {
	n := 0
	for _, e := range entries {
		if e.Event == event {
			n++
		}
	}
	return n
}

// Reminders DM each listed reviewer who has not answered, exactly max
// times, one interval apart; they stop for a reviewer once they answered
// and for everyone once the request closes.
func TestReminderCounts(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	reviewers := []string{"U0ALICE", "bob@example.com"}
	quiet := h.postAndWait(remindable(t, "remind-quiet", "Nobody answers", now, reviewers, "1h", 3))
	answered := h.postAndWait(remindable(t, "remind-alice", "Alice answers", now, reviewers, "1h", 3))
	resolved := h.postAndWait(remindable(t, "remind-resolved", "Gets resolved", now, reviewers, "1h", 3))
	withdrawn := h.postAndWait(remindable(t, "remind-withdrawn", "Gets withdrawn", now, reviewers, "1h", 3))
	t0 := h.record(quiet).ReceivedAt

	type counts struct{ alice, bob int }
	check := func(title string, want counts) {
		t.Helper()
		got := counts{remindersTo(h.emu, "U0ALICE", title), remindersTo(h.emu, "U0BOB", title)}
		if got != want {
			t.Errorf("%q: reminders alice=%d bob=%d, want %d and %d", title, got.alice, got.bob, want.alice, want.bob)
		}
	}
	clk.Set(t0.Add(30 * time.Minute))
	h.waitDrained()
	check("Nobody answers", counts{0, 0})

	clk.Set(t0.Add(time.Hour + time.Second))
	for _, id := range []string{quiet, answered, resolved, withdrawn} {
		h.waitReminded(t, id, 1)
	}
	h.waitIdle()
	check("Nobody answers", counts{1, 1})
	check("Alice answers", counts{1, 1})
	check("Gets resolved", counts{1, 1})

	ok(t, h.click(alice, answered, "d1", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, resolved, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.click(alice, resolved, "d3", staticSelect("immediate")))
	ok(t, h.click(alice, resolved, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h.waitStatus(resolved, aah.StatusResolved)
	if r := h.do(http.MethodDelete, "/v1/requests/"+withdrawn, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}

	for n := 2; n <= 3; n++ {
		clk.Set(t0.Add(time.Duration(n)*time.Hour + time.Second))
		h.waitReminded(t, quiet, n)
		h.waitReminded(t, answered, n)
		h.waitIdle()
	}
	check("Nobody answers", counts{3, 3})
	check("Alice answers", counts{1, 3})
	check("Gets resolved", counts{1, 1})
	check("Gets withdrawn", counts{1, 1})

	clk.Set(t0.Add(4*time.Hour + time.Second))
	h.waitIdle() // whatever the jump made due has run
	check("Nobody answers", counts{3, 3})
	check("Alice answers", counts{1, 3})
	for _, id := range []string{quiet, answered} {
		rec := h.record(id)
		if slices.Contains(rec.Timers, store.TimerID(store.JobRemind, id, 4)) {
			t.Errorf("%s scheduled a fourth reminder", id)
		}
		if n := countEvents(auditEvents(t, h, id), "reminded"); n != 3 {
			t.Errorf("%s: %d reminded events, want 3", id, n)
		}
	}
	if n := countEvents(auditEvents(t, h, resolved), "reminded"); n != 1 {
		t.Errorf("resolved request: %d reminded events, want 1", n)
	}

	// The DM names what is pending, the wait, the deadline and the request.
	var last string
	for _, m := range h.emu.Messages("U0BOB") {
		if strings.Contains(m.Text, "Alice answers") {
			last = unescapeJSON(string(m.Blocks))
		}
	}
	for _, want := range []string{"Approve budget allocation?", "Waiting 3 hours", "<!date^", h.record(answered).Slack.Permalink} {
		if !strings.Contains(last, want) {
			t.Errorf("Bob's last reminder lacks %q: %s", want, last)
		}
	}
	if strings.Contains(last, "Approve target audience segments?") {
		t.Error("the reminder lists d1, which Alice answered")
	}
}

// Without listed reviewers, a reminder is a reply in the request's thread.
func TestRemindersWithoutReviewersReplyInThread(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	id := h.postAndWait(remindable(t, "remind-thread", "Thread reminders", clk.Now(), nil, "1h", 2))
	t0 := h.record(id).ReceivedAt
	for n := 1; n <= 3; n++ {
		clk.Set(t0.Add(time.Duration(n)*time.Hour + time.Second))
		if n <= 2 {
			h.waitReminded(t, id, n)
		}
		h.waitIdle() // whatever the jump made due has run
	}
	channel, ts := h.messageOf(id)
	var replies int
	for _, m := range h.emu.Messages(channel) {
		if strings.HasPrefix(m.Text, "Reminder: ") {
			replies++
			if m.ThreadTS != ts {
				t.Errorf("reminder posted outside the request's thread: %+v", m)
			}
		}
	}
	if replies != 2 {
		t.Errorf("%d thread reminders, want 2", replies)
	}
	if n := remindersTo(h.emu, "U0ALICE", "Thread reminders"); n != 0 {
		t.Errorf("%d DMs without listed reviewers", n)
	}
}

// A Slack outage on the second DM: the retry reaches only the reviewer
// who was missed, so each still gets exactly one reminder.
func TestReminderRetryAfterPartialFailure(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	var emu *slackemu.Server
	var once sync.Once
	emu = slackemu.New(slackemu.Options{OnMessage: func(m slackemu.Message) {
		// Called before the answer to Alice's DM: Bob's DM, next, fails.
		if strings.HasPrefix(m.Text, "Reminder: ") && m.Channel != "" && strings.HasPrefix(m.Channel, "D") {
			once.Do(func() { emu.InjectHTTPStatus("chat.postMessage", http.StatusServiceUnavailable, 1) })
		}
	}})
	clk := newFakeClock()
	h := newHarnessOn(t, rdb, prefix, emu, withClock(clk))
	h.startJobs()
	id := h.postAndWait(remindable(t, "remind-503", "Outage", clk.Now(), []string{"U0ALICE", "U0BOB"}, "1h", 1))
	clk.Set(h.record(id).ReceivedAt.Add(time.Hour + time.Second))
	h.waitReminded(t, id, 1)
	// Not waitIdle: a 5xx may hide a DM Slack accepted, so a sweep is due
	// one lease later; what is due now is the reminder's retry.
	h.waitDrained()
	if a, b := remindersTo(emu, "U0ALICE", "Outage"), remindersTo(emu, "U0BOB", "Outage"); a != 1 || b != 1 {
		t.Errorf("reminders alice=%d bob=%d, want one each", a, b)
	}
	failed := 0
	for _, c := range emu.CallsTo("chat.postMessage") {
		if c.Status == http.StatusServiceUnavailable {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed posts, want the one injected", failed)
	}
	entries := auditEvents(t, h, id)
	for _, e := range entries {
		if e.Event == "reminded" {
			if got := fmt.Sprint(e.Data["recipients"]); got != "[U0ALICE U0BOB]" {
				t.Errorf("reminded recipients = %s", got)
			}
		}
	}
}

// A recipient Slack refuses for good is audited and skipped; the others
// are reminded.
func TestReminderPermanentRefusal(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	// U0BOT is the bot itself: cannot_dm_bot.
	id := h.postAndWait(remindable(t, "remind-refused", "Refused", clk.Now(), []string{"U0BOT", "U0BOB"}, "1h", 1))
	clk.Set(h.record(id).ReceivedAt.Add(time.Hour + time.Second))
	h.waitReminded(t, id, 1)
	if n := remindersTo(h.emu, "U0BOB", "Refused"); n != 1 {
		t.Errorf("Bob got %d reminders", n)
	}
	var found bool
	for _, e := range auditEvents(t, h, id) {
		if e.Event == "reminder_failed" && e.Data["recipient"] == "U0BOT" && e.Data["error"] == "cannot_dm_bot" {
			found = true
		}
	}
	if !found {
		t.Error("no reminder_failed audit for the refused recipient")
	}
}

// Three processes share Redis and race on the same reminder timers: every
// reminder DM is still sent exactly once.
func TestRemindersThreeProcessesExactlyOnce(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	clk := newFakeClock()
	var hs []*harness
	for range 3 {
		h := newHarnessOn(t, rdb, prefix, emu, withClock(clk))
		h.startJobs()
		hs = append(hs, h)
	}
	now := clk.Now()
	const requests, max = 20, 2
	var ids []string
	for i := range requests {
		ids = append(ids, hs[i%3].postAndWait(remindable(t, fmt.Sprintf("race-%02d", i), fmt.Sprintf("Race %02d.", i), now,
			[]string{"U0ALICE", "bob@example.com"}, "1h", max)))
	}
	var t0 time.Time
	for _, id := range ids {
		if r := hs[0].record(id).ReceivedAt; r.After(t0) {
			t0 = r
		}
	}
	for n := 1; n <= max+1; n++ {
		clk.Set(t0.Add(time.Duration(n)*time.Hour + time.Second))
		for _, id := range ids {
			if n <= max {
				hs[n%3].waitReminded(t, id, n)
			}
		}
		hs[0].waitIdle()
	}
	for i := range requests {
		title := fmt.Sprintf("Race %02d.", i)
		if a, b := remindersTo(emu, "U0ALICE", title), remindersTo(emu, "U0BOB", title); a != max || b != max {
			t.Errorf("%s: alice got %d reminders, bob %d; want %d each", title, a, b, max)
		}
	}
	// The DMs are counted as exactly once as they are sent: across the
	// three processes, one per DM.
	var sent float64
	for _, h := range hs {
		sent += metricValue(t, h.reg, "approvalbot_reminders_sent_total", nil)
	}
	if want := float64(requests * max * 2); sent != want {
		t.Errorf("approvalbot_reminders_sent_total %v across the processes, want %v", sent, want)
	}
}

// clickIn clicks a control of a request in a copy of its message shown in
// another conversation (an escalation DM).
func (h *harness) clickIn(u slackUser, channel, ts, id, decision string, a action) response {
	h.t.Helper()
	a["block_id"] = h.blockID(id, decision)
	return h.sendInteraction(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": "T0LOCAL", "domain": "local"},
		"user":       map[string]any{"id": u.id, "username": strings.ToLower(strings.Fields(u.name)[0]), "name": strings.Fields(u.name)[0], "team_id": "T0LOCAL"},
		"api_app_id": "A0LOCAL",
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
		"channel":    map[string]any{"id": channel, "name": "directmessage"},
		"message":    map[string]any{"type": "message", "ts": ts},
		"actions":    []any{a},
	})
}

// escalationCopies are the escalated copies of requests in a conversation.
func escalationCopies(emu *slackemu.Server, channel string) []slackemu.Message {
	var out []slackemu.Message
	for _, m := range emu.Messages(channel) {
		if strings.HasPrefix(m.Text, "Escalated to you: ") {
			out = append(out, m)
		}
	}
	return out
}

var manager = slackUser{"U0MANAGER", "Morgan Manager"}

func TestEscalation(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, h *harness, id string)
	dmedTo := func(users ...string) check {
		return func(t *testing.T, h *harness, id string) {
			for _, u := range users {
				eventually(t, "the escalated copy in "+u+"'s DM", func() bool { return len(escalationCopies(h.emu, u)) == 1 })
				m := escalationCopies(h.emu, u)[0]
				if !strings.Contains(string(m.Blocks), `"type":"actions"`) || !strings.Contains(string(m.Blocks), "Escalated to you:") {
					t.Errorf("%s's copy has no controls or intro: %s", u, m.Blocks)
				}
				if !strings.HasPrefix(m.Channel, "D") {
					t.Errorf("copy posted in %s, not a DM", m.Channel)
				}
			}
			if got := h.record(id).EscalatedTo; !slices.Equal(got, users) {
				t.Errorf("escalated_to = %v, want %v", got, users)
			}
		}
	}
	bannerNames := func(names ...string) check {
		return func(t *testing.T, h *harness, id string) {
			h.waitIdle()
			channel, ts := h.messageOf(id)
			m, _ := h.emu.Message(channel, ts)
			want := ":arrow_heading_up: *Escalated* to " + strings.Join(names, ", ")
			if !strings.Contains(unescapeJSON(string(m.Blocks)), want) {
				t.Errorf("the original message does not say %q: %s", want, m.Blocks)
			}
		}
	}
	cases := []struct {
		name       string
		escalation any
		checks     []check
	}{
		{"email", step("1h", "manager@example.com"), []check{dmedTo("U0MANAGER"), bannerNames("<@U0MANAGER>")}},
		{"user id", []any{step("1h", "U0BOB")}, []check{dmedTo("U0BOB"), bannerNames("<@U0BOB>")}},
		{"user group", []any{step("1h", "S0LEADS")}, []check{dmedTo("U0MANAGER", "U0ALICE"), bannerNames("<@U0MANAGER>", "<@U0ALICE>")}},
		{"channel", []any{step("1h", "#general")}, []check{func(t *testing.T, h *harness, id string) {
			eventually(t, "the copy in #general", func() bool {
				for _, m := range h.emu.Messages("C0GENERAL") {
					if strings.Contains(string(m.Blocks), "Escalated to this channel") && strings.Contains(string(m.Blocks), `"type":"actions"`) {
						return true
					}
				}
				return false
			})
			if rec := h.record(id); len(rec.EscalatedTo) != 0 || !slices.Equal(rec.EscalatedChannels, []string{"#general"}) {
				t.Errorf("escalated_to %v, channels %v", rec.EscalatedTo, rec.EscalatedChannels)
			}
		}, bannerNames("#general")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			h := newHarness(t, withClock(clk))
			h.startJobs()
			now := clk.Now()
			id := h.postAndWait(escalating(t, "esc", now, []string{"U0ALICE"}, c.escalation))
			clk.Set(now.Add(50 * time.Minute)) // short of the hour by more than any stall
			h.waitDrained()
			if st := h.record(id).Status; st != aah.StatusPending {
				t.Fatalf("escalated early: %s", st)
			}
			clk.Set(now.Add(time.Hour + time.Second))
			h.waitStatus(id, aah.StatusEscalated)
			for _, chk := range c.checks {
				chk(t, h, id)
			}
			entries := auditEvents(t, h, id)
			if countEvents(entries, "escalated") != 1 || countEvents(entries, "escalation_failed") != 0 {
				t.Errorf("audit: %+v", entries)
			}
		})
	}
}

// The escalation target answers through the copy DMed to them, though the
// request names another reviewer; an outsider clicking the same copy is
// refused.
func TestEscalationTargetDecidesFromTheDM(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "esc-decide", now, []string{"U0ALICE", "U0BOB"}, step("1h", "manager@example.com")))
	// Mallory is not a reviewer: refused, nothing recorded.
	h.click(mallory, id, "d1", button(blocks.ActionApprove, "true"))
	if rec := h.record(id); len(rec.Answers) != 0 {
		t.Fatalf("an outsider's click was recorded: %v", rec.Answers)
	}
	clk.Set(now.Add(time.Hour + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	eventually(t, "the manager's copy", func() bool { return len(escalationCopies(h.emu, "U0MANAGER")) == 1 })
	dm := escalationCopies(h.emu, "U0MANAGER")[0]

	h.clickIn(mallory, dm.Channel, dm.TS, id, "d1", button(blocks.ActionApprove, "true"))
	if rec := h.record(id); len(rec.Answers) != 0 {
		t.Fatalf("an outsider's click on the copy was recorded: %v", rec.Answers)
	}
	ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, "d3", staticSelect("immediate")))
	ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	rec := h.waitStatus(id, aah.StatusResolved)
	if rec.ResolvedBy.ID != "U0MANAGER" {
		t.Errorf("resolved by %+v, want the manager", rec.ResolvedBy)
	}
	for _, d := range []string{"d1", "d2", "d3", "d4"} {
		if a := rec.Answers[d]; a.By.ID != "U0MANAGER" {
			t.Errorf("%s answered by %+v", d, a.By)
		}
	}
}

// A chain of two steps fires in order, each adding its target.
func TestEscalationChain(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "esc-chain", now, []string{"U0ALICE"},
		[]any{step("1h", "U0BOB"), step("2h", "manager@example.com")}))
	clk.Set(now.Add(time.Hour + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	eventually(t, "Bob's copy", func() bool { return len(escalationCopies(h.emu, "U0BOB")) == 1 })
	if n := len(escalationCopies(h.emu, "U0MANAGER")); n != 0 {
		t.Fatalf("the second step fired early")
	}
	if got := h.record(id).EscalatedTo; !slices.Equal(got, []string{"U0BOB"}) {
		t.Errorf("after step 0: escalated_to %v", got)
	}
	// Jumping the clock past a running job's lease would hand it to another
	// worker mid-send: let it finish first.
	h.waitIdle()
	clk.Set(now.Add(2*time.Hour + time.Second))
	eventually(t, "the manager's copy", func() bool { return len(escalationCopies(h.emu, "U0MANAGER")) == 1 })
	h.waitIdle()
	rec := h.record(id)
	if !slices.Equal(rec.EscalatedTo, []string{"U0BOB", "U0MANAGER"}) || rec.Status != aah.StatusEscalated {
		t.Errorf("after step 1: escalated_to %v, status %s", rec.EscalatedTo, rec.Status)
	}
	var steps []any
	for _, e := range auditEvents(t, h, id) {
		if e.Event == "escalated" {
			steps = append(steps, e.Data["step"])
		}
	}
	if fmt.Sprint(steps) != "[0 1]" {
		t.Errorf("escalated steps in the audit: %v, want [0 1]", steps)
	}
	if n := len(escalationCopies(h.emu, "U0BOB")); n != 1 {
		t.Errorf("Bob got %d copies, want 1", n)
	}
}

// Targets that cannot be resolved are recorded and audited; the request
// stays pending and answerable by its reviewers. (A target of an unknown
// form, such as a role name, is refused at intake instead.)
func TestEscalationUnresolvedTargets(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "esc-unresolved", now, []string{"U0ALICE"},
		[]any{step("1h", "nobody@example.com"), step("2h", "S0NOGROUP")}))
	clk.Set(now.Add(2*time.Hour + time.Second))
	eventually(t, "both steps recorded", func() bool { return len(h.record(id).EscalatedSteps) == 2 })
	h.waitIdle()
	rec := h.record(id)
	if rec.Status != aah.StatusPending || len(rec.EscalatedTo) != 0 {
		t.Errorf("status %s, escalated_to %v; want pending, nobody", rec.Status, rec.EscalatedTo)
	}
	for _, want := range []string{"nobody@example.com", "users_not_found", "S0NOGROUP", "no_such_subteam"} {
		if !strings.Contains(rec.EscalationError, want) {
			t.Errorf("escalation_error %q lacks %q", rec.EscalationError, want)
		}
	}
	failed := map[string]bool{}
	for _, e := range auditEvents(t, h, id) {
		if e.Event == "escalation_failed" {
			failed[fmt.Sprint(e.Data["to"])] = e.Data["reason"] != ""
		}
	}
	if !failed["nobody@example.com"] || !failed["S0NOGROUP"] {
		t.Errorf("escalation_failed audit: %v", failed)
	}
	// The agent sees it too.
	esc, _ := h.get(id)["escalation"].(map[string]any)
	if esc == nil || !strings.Contains(fmt.Sprint(esc["error"]), "users_not_found") || len(esc["steps"].([]any)) != 2 {
		t.Errorf("GET escalation = %v", esc)
	}
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	if st := h.record(id).Status; st != aah.StatusPartial {
		t.Errorf("after Alice answered: %s, want partial", st)
	}
}

// An escalated request is in other hands: no more reminders.
func TestNoRemindersOnceEscalated(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	body := escalating(t, "esc-remind", now, []string{"U0ALICE"}, step("90m", "U0BOB"))
	body = []byte(strings.Replace(string(body), `"reviewers":["U0ALICE"]`, `"reviewers":["U0ALICE"],"reminders":{"every":"1h","max":3}`, 1))
	id := h.postAndWait(body)
	t0 := h.record(id).ReceivedAt
	clk.Set(t0.Add(time.Hour + time.Second))
	h.waitReminded(t, id, 1)
	h.waitIdle()
	clk.Set(now.Add(90*time.Minute + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	h.waitIdle()
	clk.Set(t0.Add(3*time.Hour + time.Second))
	h.waitIdle() // whatever the jump made due has run
	if n := remindersTo(h.emu, "U0ALICE", "Approve Marketing Strategy"); n != 1 {
		t.Errorf("Alice got %d reminders, want 1 (before the escalation)", n)
	}
}

// unescapeJSON undoes the HTML escaping of JSON encoders (slack-go's).
func unescapeJSON(s string) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(s)
}
