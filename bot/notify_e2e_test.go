package bot_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// withNotify turns NOTIFY_REQUESTER on (its default; the harness's literal
// config leaves it off so other tests count only their own messages).
func withNotify(c *configT, _ *depsT) { c.NotifyRequester = true }

// requested is the seed example naming requester (extensions.slack
// requested_by), with edit applied after.
func requested(t *testing.T, id, requester string, edit func(doc map[string]any)) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		if edit != nil {
			edit(doc)
		}
		ext, _ := doc["extensions"].(map[string]any)
		if ext == nil {
			ext = map[string]any{}
			doc["extensions"] = ext
		}
		sl, _ := ext["slack"].(map[string]any)
		if sl == nil {
			sl = map[string]any{}
			ext["slack"] = sl
		}
		if requester != "" {
			sl["requested_by"] = requester
		}
	})
}

// withDeadline gives the request a deadline and no escalation.
func withDeadline(deadline time.Time) func(map[string]any) {
	return func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = deadline.Format(time.RFC3339)
		delete(data, "escalation")
		delete(doc["handoff"].(map[string]any), "response_deadline")
	}
}

// notices are the messages in user's DM telling them how a request ended.
func notices(emu *slackemu.Server, user, title string) []slackemu.Message {
	var out []slackemu.Message
	for _, m := range emu.Messages(user) {
		if strings.HasPrefix(m.Text, "Your request ") && strings.Contains(m.Text, title) {
			out = append(out, m)
		}
	}
	return out
}

// resolveByAlice answers every decision of the seed example and submits.
func resolveByAlice(t *testing.T, h *harness, id string) {
	t.Helper()
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.click(alice, id, "d3", staticSelect("immediate")))
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h.waitStatus(id, aah.StatusResolved)
}

// oneNotice checks that the requester got exactly one notice, saying want,
// linking the request's message.
func oneNotice(t *testing.T, h *harness, id, user, want string) slackemu.Message {
	t.Helper()
	got := notices(h.emu, user, "Marketing Strategy")
	if len(got) != 1 {
		t.Fatalf("%s has %d notices of %s, want 1: %+v", user, len(got), id, got)
	}
	m := got[0]
	if !strings.Contains(m.Text, want) {
		t.Errorf("notice %q does not say %q", m.Text, want)
	}
	if link := h.record(id).Slack.Permalink; link == "" || !strings.Contains(string(m.Blocks), link) {
		t.Errorf("notice does not link the request's message %q: %s", link, m.Blocks)
	}
	if strings.Contains(string(m.Blocks), `"type":"actions"`) {
		t.Errorf("notice has controls: %s", m.Blocks)
	}
	return m
}

// A request resolved by a click: its requester, named by email, is told
// once who resolved it and the final values.
func TestRequesterToldWhenResolved(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withNotify)
	h.startJobs()
	id := h.postAndWait(requested(t, "notify-resolved", "requester@example.com", nil))
	h.waitIdle() // the permalink is stored
	resolveByAlice(t, h, id)
	h.waitIdle()
	m := oneNotice(t, h, id, slackemu.UserRequester, "was resolved by <@U0ALICE>")
	if !strings.Contains(string(m.Blocks), "Outcome:") {
		t.Errorf("notice lacks the final values: %s", m.Blocks)
	}
	// The copies job leaves it as sent.
	if m.Edited != 0 {
		t.Errorf("the notice was edited %d times", m.Edited)
	}
}

// A request that expires at its deadline (the injected clock passes it):
// the requester, named by user id, is told it expired and what the timeout
// action did.
func TestRequesterToldWhenExpired(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk, withNotify)
	h.startJobs()
	deadline := clk.Now().Add(time.Hour).Truncate(time.Second)
	id := h.postAndWait(requested(t, "notify-expired", slackemu.UserRequester, withDeadline(deadline)))
	h.waitIdle()
	clk.Set(deadline.Add(time.Minute))
	h.waitStatus(id, aah.StatusExpired)
	h.waitDrained()
	h.waitIdle()
	m := oneNotice(t, h, id, slackemu.UserRequester, "expired: nobody decided it before its deadline")
	if !strings.Contains(m.Text, "(expire)") {
		t.Errorf("notice does not name the timeout action: %q", m.Text)
	}
}

// A request the agent withdraws through the API: the human in
// source.agent_id ("human:<user id>") is told.
func TestRequesterToldWhenWithdrawn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withNotify)
	h.startJobs()
	id := h.postAndWait(requested(t, "notify-withdrawn", "", func(doc map[string]any) {
		doc["source"].(map[string]any)["agent_id"] = "human:" + slackemu.UserRequester
	}))
	h.waitIdle()
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitIdle()
	oneNotice(t, h, id, slackemu.UserRequester, "was withdrawn by the agent")
}

// Nobody named: nobody told. NOTIFY_REQUESTER=false: nobody told either.
func TestRequesterNotToldWithoutRequesterOrSwitch(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	on := newHarnessOn(t, rdb, prefix, emu, withNotify)
	on.startJobs()
	anon := on.postAndWait(requested(t, "notify-nobody", "", nil))
	on.waitIdle()
	resolveByAlice(t, on, anon)
	on.waitIdle()
	off := newHarnessOn(t, rdb, prefix, emu)
	off.startJobs()
	named := off.postAndWait(requested(t, "notify-off", "requester@example.com", nil))
	off.waitIdle()
	if r := off.do(http.MethodDelete, "/v1/requests/"+named, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	off.waitIdle()
	on.waitIdle()
	if got := emu.Messages(slackemu.UserRequester); len(got) != 0 {
		t.Errorf("the requester got %d messages, want none: %+v", len(got), got)
	}
}

// A requester who cannot be resolved is audited once, and nothing retries.
func TestRequesterUnresolvedIsAuditedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withNotify)
	h.startJobs()
	id := h.postAndWait(requested(t, "notify-unknown", "nobody@example.com", nil))
	h.waitIdle()
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitIdle()
	failed := 0
	for _, e := range auditEvents(t, h, id) {
		if e.Event == "requester_notify_failed" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d requester_notify_failed events, want 1", failed)
	}
}

// The DM's answer is lost after Slack posted it (a crash in the call, a
// dropped connection): the retry finds the DM by its metadata and adopts
// it, so the requester still has one.
func TestRequesterNoticeLostAnswerIsAdopted(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := clockedHarness(t, clk, withNotify)
	h.startJobs()
	id := h.postAndWait(requested(t, "notify-lost", slackemu.UserRequester, withDeadline(clk.Now().Add(24*time.Hour))))
	h.waitIdle()
	// The next chat.postMessage is the DM: closing updates the request's
	// message with chat.update.
	h.emu.InjectFailAfterEffect("chat.postMessage", http.StatusBadGateway, 1)
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitDrained()
	clk.Set(clk.Now().Add(5 * time.Second)) // the retry is due
	h.waitDrained()
	// Two attempts were started, so a sweep follows one lease later: let it
	// run too, and still find one DM.
	clk.Set(clk.Now().Add(time.Minute + time.Second))
	h.waitDrained()
	oneNotice(t, h, id, slackemu.UserRequester, "was withdrawn by the agent")
	lost := 0
	for _, c := range h.emu.CallsTo("chat.postMessage") {
		if c.Status == http.StatusBadGateway {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("%d lost chat.postMessage answers, want 1 (the injection)", lost)
	}
	if n := len(h.emu.CallsTo("conversations.history")); n == 0 {
		t.Error("the retry never looked for the DM the first attempt sent")
	}
	copies, err := h.store.Copies(ctxTimeout(t, guard), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if c.Effect == "notify:requester:"+slackemu.UserRequester && (c.Copy == nil || c.Copy.TS == "") {
			t.Errorf("the adopted DM is not recorded: %+v", c)
		}
	}
}

// Two replicas send the DM at once (the first is stuck in chat.postMessage
// past its lease, and the second takes the job over): the requester keeps
// one, the loser's is deleted, and the sweep a lease later leaves it.
func TestRequesterNoticeTwoReplicasLeaveOne(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	stuck, entered, release := holdingFirstDM(emu, func(post func() (string, string, error)) (string, string, error) { return post() })
	first := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withSlack(stuck), withNotify)
	first.startJobs()
	now := clk.Now()
	id := first.postAndWait(requested(t, "notify-race", slackemu.UserRequester, withDeadline(now.Add(24*time.Hour))))
	first.waitIdle()
	if r := first.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	<-entered // the first replica is inside chat.postMessage to the requester

	clk.Set(clk.Now().Add(time.Minute + time.Second)) // its lease runs out
	second := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withNotify)
	second.startJobs()
	eventually(t, "the second replica's DM", func() bool {
		return len(notices(emu, slackemu.UserRequester, "Marketing Strategy")) == 1
	})
	close(release)
	if err := emu.WaitFor(ctxTimeout(t, 10*time.Second), func(sn *slackemu.Snapshot) bool {
		return sn.CountCalls("chat.delete") == 1
	}); err != nil {
		t.Fatalf("the losing DM was not deleted: %v", err)
	}
	clk.Set(clk.Now().Add(time.Minute + time.Second)) // the sweep is due
	second.waitDrained()
	first.waitDrained()
	oneNotice(t, second, id, slackemu.UserRequester, "was withdrawn by the agent")
}

// Local mode's embedded store carries the DM's exactly-once protocol as
// real Redis does: a lost answer is adopted, not repeated.
func TestRequesterNoticeOnBothStores(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend, withNotify)
			h.startJobs()
			id := h.postAndWait(requested(t, "notify-"+backend, "requester@example.com", nil))
			h.waitIdle()
			h.emu.InjectFailAfterEffect("chat.postMessage", 0, 1) // the connection drops after Slack posted it
			if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
				t.Fatalf("DELETE: %d %s", r.Status, r.Body)
			}
			eventually(t, "the DM recorded", func() bool {
				copies, err := h.store.Copies(ctxTimeout(t, guard), id)
				for _, c := range copies {
					if err == nil && c.Effect == "notify:requester:"+slackemu.UserRequester && c.Copy != nil && c.Copy.TS != "" {
						return true
					}
				}
				return false
			})
			oneNotice(t, h, id, slackemu.UserRequester, "was withdrawn by the agent")
		})
	}
}
