package bot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
)

// An escalation target of a form escalation cannot resolve is refused at
// intake with a 400 naming the field and the accepted forms, not found
// failing when the step runs hours later; nothing is stored.
func TestUnknownEscalationTargetIsRefusedAtIntake(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, to := range []string{"role:finance", "foo"} {
		body := exampleWith(t, "esc-"+strings.ReplaceAll(to, ":", "-"), func(doc map[string]any) {
			data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
			data["escalation"] = map[string]any{"after": "24h", "to": to}
		})
		r := h.post(body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "content.body.data.escalation.to") ||
			!strings.Contains(string(r.Body), "user group id (S…)") {
			t.Errorf("to %q: %d %s, want 400 naming the field and the accepted forms", to, r.Status, r.Body)
		}
		if _, err := h.store.Get(context.Background(), "esc-"+strings.ReplaceAll(to, ":", "-")); err != store.ErrNotFound {
			t.Errorf("to %q: a refused request was stored (%v)", to, err)
		}
	}
}

// With both data.deadline and handoff.response_deadline set, the earlier
// one governs: the message shows it and the request expires at it.
func TestEarlierDeadlineGoverns(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	early := clk.Now().Add(24 * time.Hour).Truncate(time.Second)
	late := early.Add(48 * time.Hour)
	id := h.postAndWait(exampleWith(t, "two-deadlines", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = late.Format(time.RFC3339)
		delete(data, "escalation")
		doc["handoff"].(map[string]any)["response_deadline"] = early.Format(time.RFC3339)
	}))
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	if text := slackemu.RenderText(m.Blocks); !strings.Contains(text, "Due "+early.UTC().Format("2006-01-02 15:04 UTC")) {
		t.Errorf("the message does not show the earlier deadline %v:\n%s", early, text)
	}
	clk.Set(early.Add(time.Millisecond))
	h.waitStatus(id, aah.StatusExpired)
}

// handoff.expects_response: false sends no callback even with a
// response_url; the response is still stored and served by GET.
func TestNoCallbackWhenNoResponseIsExpected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "no-callback", map[string]any{}, func(doc map[string]any) {
		doc["handoff"].(map[string]any)["response_url"] = agent.srv.URL + "/decisions"
		doc["handoff"].(map[string]any)["expects_response"] = false
	}))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	h.waitIdle()
	rec, _ := h.store.Get(context.Background(), id)
	if rec.Status != aah.StatusResolved || len(rec.Response) == 0 {
		t.Fatalf("status %v, response %q", rec.Status, rec.Response)
	}
	if rec.ResponseURL != "" || rec.Delivery.State != store.DeliveryNone {
		t.Errorf("a delivery was set up: url %q state %q", rec.ResponseURL, rec.Delivery.State)
	}
	agent.mu.Lock()
	got := len(agent.got)
	agent.mu.Unlock()
	if got != 0 {
		t.Errorf("the agent received %d callbacks, want none", got)
	}
	if got := h.get(id); got["response"] == nil {
		t.Errorf("GET does not serve the response: %v", got)
	}
}

// The response's source.agent_role is the responder's role (seed 000 §4):
// the required role the resolving person holds; the requesting agent's own
// agent_role is not copied into it.
func TestResponseSourceCarriesTheRespondersRole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "role-source", map[string]any{
		"required_roles": []any{map[string]any{"role": "product_owner", "members": []any{alice.id}}},
	}, func(doc map[string]any) {
		doc["source"].(map[string]any)["agent_role"] = "planner"
	}))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	rec := h.waitStatus(id, aah.StatusResolved)
	var resp struct{ Source map[string]string }
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Source["agent_id"] != "human:"+alice.id || resp.Source["agent_role"] != "product_owner" {
		t.Errorf("source = %v, want Alice as product_owner", resp.Source)
	}
}
