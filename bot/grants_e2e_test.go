package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// scaleRequest is a request of agent pm with one approval decision whose
// action is scale_service, reviewed by Alice and Bob.
func scaleRequest(t *testing.T, id string) []byte {
	t.Helper()
	doc := map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": id, "type": "decision/request", "title": "Scale api for " + id, "created_at": "2026-02-16T09:00:00Z"},
		"source":      map[string]any{"agent_id": "deployer"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"decisions": []any{map[string]any{"id": "scale", "type": "approval", "prompt": "Scale api to 6 replicas?", "required": true}}}}},
		"handoff": map[string]any{"expects_response": false},
		"extensions": map[string]any{"slack": map[string]any{"reviewers": []any{alice.id, bob.id}},
			"decisions": map[string]any{"scale": map[string]any{"proposed_action": map[string]any{
				"tool_name": "scale_service", "parameters": map[string]any{"replicas": 6}, "reversible": true}}}},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func durationSelect(value string) map[string]map[string]any {
	return map[string]map[string]any{blocks.BlockDuration: {blocks.ActionDuration: map[string]any{"type": "static_select",
		"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": value}, "value": value}}}}
}

// waitEphemeralWith waits for an ephemeral to u in #approvals containing want.
func (h *harness) waitEphemeralWith(u slackUser, want string) {
	h.t.Helper()
	err := h.emu.WaitFor(ctxTimeout(h.t, guard), func(s *slackemu.Snapshot) bool {
		for _, e := range s.Ephemerals("C0APPROVALS", u.id) {
			if strings.Contains(e.Text, want) {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no ephemeral to %s saying %q: %v", u.id, want, err)
	}
}

// messageHas reports whether the message's blocks hold want.
func messageHas(h *harness, channel, ts, want string) bool {
	h.t.Helper()
	m, found := h.emu.Message(channel, ts)
	return found && strings.Contains(string(m.Blocks), want)
}

// revokeClick is a click on a Revoke button (the notice's) as u.
func (h *harness) revokeClick(u slackUser, grantID, ts string) response {
	h.t.Helper()
	return h.sendInteraction(map[string]any{"type": "block_actions", "user": map[string]any{"id": u.id},
		"trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()), // each click its own, as Slack's
		"channel":    map[string]any{"id": "C0APPROVALS"}, "container": map[string]any{"message_ts": ts, "channel_id": "C0APPROVALS"},
		"actions": []any{action{"action_id": blocks.ActionRevokeGrant, "block_id": blocks.GrantsBlockID, "type": "button", "value": grantID}}})
}

// Standing approvals through Slack, end to end: Alice's "Approve similar…"
// opens the modal, which refuses a duration past the maximum and approves
// with one within it; the agent's next request resolves at once and is
// posted as a compact notice with a Revoke button; /approvals grants lists
// the grant; Mallory's and Bob's Revoke clicks are refused, Alice's
// revokes it, and the request after that is posted for review. On real
// Redis and on local mode's embedded store.
func TestStandingApprovalThroughSlack(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testStandingApprovalThroughSlack(t, newHarnessOnStore(t, backend,
				func(c *configT, _ *depsT) { c.StandingApprovalMax = time.Hour }))
		})
	}
}

func testStandingApprovalThroughSlack(t *testing.T, h *harness) {
	h.startJobs()
	origin := h.postAndWait(scaleRequest(t, "origin-1"))
	if ch, ts := h.messageOf(origin); !messageHas(h, ch, ts, `"action_id":"`+blocks.ActionApproveSimilar+`"`) {
		t.Error(`the request's message offers no "Approve similar…"`)
	}

	ok(t, h.click(alice, origin, "scale", button(blocks.ActionApproveSimilar, "scale")))
	calls, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "views.open", 1)
	if err != nil {
		t.Fatal(err)
	}
	view := calls[0].Params["view"]
	for _, want := range []string{blocks.ModalGrant, "15 minutes", "1 hour", "scale_service"} {
		if !strings.Contains(view, want) {
			t.Errorf("grant modal lacks %q: %s", want, view)
		}
	}
	if strings.Contains(view, "4 hours") {
		t.Errorf("the modal offers more than STANDING_APPROVAL_MAX: %s", view)
	}
	ref := blocks.ModalRef{RequestID: origin, DecisionID: "scale", Channel: "C0APPROVALS"}
	for value, want := range map[string]string{"2h0m0s": "at most 1h0m0s", "": "Choose for how long"} {
		r := h.submitModal(alice, blocks.ModalGrant, ref, durationSelect(value))
		if !strings.Contains(string(r.Body), blocks.BlockDuration) || !strings.Contains(string(r.Body), want) {
			t.Errorf("duration %q: %d %s; want an error on the duration saying %q", value, r.Status, r.Body, want)
		}
	}
	values := durationSelect("30m0s")
	values[blocks.BlockComment] = map[string]any{blocks.ActionText: textInput("launch day")}
	ok(t, h.submitModal(alice, blocks.ModalGrant, ref, values))
	h.waitEphemeralWith(alice, "approved at once")
	if rec, _ := h.store.Get(context.Background(), origin); rec.Status != aah.StatusResolved {
		t.Fatalf("origin after the grant: %s", rec.Status)
	}
	grants, err := h.store.Grants(context.Background(), "pm")
	if err != nil || len(grants) != 1 || grants[0].By.ID != alice.id || grants[0].Comment != "launch day" {
		t.Fatalf("grants = %+v, %v", grants, err)
	}
	g := grants[0]

	next := h.postAndWait(scaleRequest(t, "next-1"))
	rec, _ := h.store.Get(context.Background(), next)
	if rec.Status != aah.StatusResolved || rec.Answers["scale"].Grant == nil {
		t.Fatalf("next request: %s %+v; want resolved by the grant", rec.Status, rec.Answers)
	}
	msg, found := h.emu.Message(rec.Slack.Channel, rec.Slack.TS)
	if !found {
		t.Fatal("the notice is not in Slack")
	}
	notice := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(msg.Blocks))
	for _, want := range []string{"Scale api for next-1", "scale_service", "<@U0ALICE>", `"value":"` + g.ID + `"`, blocks.GrantsBlockID} {
		if !strings.Contains(notice, want) {
			t.Errorf("notice lacks %q: %s", want, notice)
		}
	}
	if strings.Contains(notice, `"action_id":"approve"`) {
		t.Errorf("the notice carries the request's controls: %s", notice)
	}

	listing := h.slash(bob, "grants")
	if raw := string(listing.Blocks); !strings.Contains(raw, g.ID) || !strings.Contains(raw, "scale_service") {
		t.Errorf("/approvals grants = %s", raw)
	}

	ok(t, h.revokeClick(mallory, g.ID, rec.Slack.TS))
	h.waitEphemeralWith(mallory, "Only <@U0ALICE>")
	ok(t, h.revokeClick(bob, g.ID, rec.Slack.TS))
	h.waitEphemeralWith(bob, "Only <@U0ALICE>")
	if live, _ := h.store.Grants(context.Background(), ""); len(live) != 1 {
		t.Fatalf("refused revokes changed the grants: %v", live)
	}
	ok(t, h.revokeClick(alice, g.ID, rec.Slack.TS))
	h.waitEphemeralWith(alice, "Revoked")
	if got, _ := h.store.GetGrant(context.Background(), g.ID); got.RevokedBy == nil || got.RevokedBy.ID != alice.id {
		t.Errorf("grant after Alice's revoke: %+v", got)
	}
	ok(t, h.revokeClick(mallory, g.ID, rec.Slack.TS)) // the button is still there
	h.waitEphemeralWith(mallory, "<@U0ALICE> revoked this standing approval already")
	entries, _ := h.store.Audit(context.Background(), origin)
	var evs []string
	for _, e := range entries {
		evs = append(evs, e.Event)
	}
	if got := strings.Join(evs, ","); !strings.HasSuffix(got, "grant_created,grant_revoked") {
		t.Errorf("origin audit = %s", got)
	}

	after := h.postAndWait(scaleRequest(t, "after-1"))
	if rec, _ := h.store.Get(context.Background(), after); rec.Status != aah.StatusPending {
		t.Errorf("after the revoke: %s; want pending", rec.Status)
	}
	channel, ts := h.messageOf(after)
	if m, _ := h.emu.Message(channel, ts); !strings.Contains(string(m.Blocks), `"action_id":"approve"`) {
		t.Errorf("the request after the revoke is not posted for review: %s", m.Blocks)
	}
	if r := h.do(http.MethodGet, "/v1/grants", tokenPM, "", nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), g.ID) {
		t.Errorf("GET /v1/grants after the revoke = %d %s", r.Status, r.Body)
	}
}

// With STANDING_APPROVAL_MAX=0 "Approve similar…" is refused with the
// reason and nothing is granted.
func TestStandingApprovalsOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(scaleRequest(t, "off-1"))
	if ch, ts := h.messageOf(id); messageHas(h, ch, ts, blocks.ActionApproveSimilar) {
		t.Error(`with standing approvals off the message offers "Approve similar…"`)
	}
	// A click crafted anyway (an old message) is refused with the reason.
	ok(t, h.click(alice, id, "scale", button(blocks.ActionApproveSimilar, "scale")))
	h.waitEphemeralWith(alice, "Standing approvals are off")
	if n := len(h.emu.CallsTo("views.open")); n != 0 {
		t.Errorf("views.open called %d times", n)
	}
}
