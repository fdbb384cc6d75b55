package bot_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// A signed request captured on the wire stays valid for Slack's five-minute
// signature window. Sending the same body with the same timestamp (so the
// same signature) again is a replay: Slack itself never resends an
// interaction or a command. The tests below send one payload twice at the
// same instant, which yields byte-for-byte the same signed request
// (json.Marshal sorts map keys).

// Approve, reject, then a replay of the approve: the replay is acked and
// ignored, the answer stays "reject", and the audit records nothing for it.
func TestReplayedClickIsIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	at := time.Now()
	approve := h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true"))
	ok(t, h.sendInteractionAt(approve, at, h.cfg.SlackSigningSecret))
	ok(t, h.click(alice, id, "d1", button(blocks.ActionReject, "false")))
	if a := h.record(id).Answers["d1"]; a.Value != false {
		t.Fatalf("after approve then reject, d1 = %v, want false", a.Value)
	}
	before := auditEvents(t, h, id)

	r := h.sendInteractionAt(approve, at, h.cfg.SlackSigningSecret)
	if r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("the replay was answered %d %s, want an empty 200", r.Status, r.Body)
	}
	if a := h.record(id).Answers["d1"]; a.Value != false || a.By.ID != alice.id {
		t.Errorf("after the replayed approve, d1 = %v by %s, want Alice's reject", a.Value, a.By.ID)
	}
	if after := auditEvents(t, h, id); len(after) != len(before) {
		t.Errorf("the replay added %d audit entries: %+v", len(after)-len(before), after[len(before):])
	}
}

// A replayed modal submission is ignored too: a later comment is not
// overwritten by the replay of an earlier one.
func TestReplayedModalSubmissionIsIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "d4", Channel: "C0APPROVALS"}
	comment := func(text string) map[string]any {
		return submitPayload(alice, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput(text)}})
	}
	at := time.Now()
	first := comment("Spam risk")
	ok(t, h.sendInteractionAt(first, at, h.cfg.SlackSigningSecret))
	ok(t, h.submitModal(alice, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput("Fine after all")}}))
	before := auditEvents(t, h, id)

	if r := h.sendInteractionAt(first, at, h.cfg.SlackSigningSecret); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("the replay was answered %d %s, want an empty 200", r.Status, r.Body)
	}
	if a := h.record(id).Answers["d4"]; !hasComment(a, alice.id, "Fine after all") {
		t.Errorf("after the replayed submission, d4 = %+v, want Alice's later comment", a)
	}
	if after := auditEvents(t, h, id); len(after) != len(before) {
		t.Errorf("the replay added %d audit entries", len(after)-len(before))
	}
}

// A replayed slash command is acked empty instead of being answered again.
func TestReplayedSlashCommandIsIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	h.postAndWait(example(t))
	at := time.Now()
	body := slashForm(alice, "/approvals", "all", "C0APPROVALS", "approvals", "https://hooks.slack.invalid/commands/1")
	if r := h.sendCommandAt(body, at, h.cfg.SlackSigningSecret); r.Status != http.StatusOK || len(r.Body) == 0 {
		t.Fatalf("/approvals all: %d %s, want the listing", r.Status, r.Body)
	}
	if r := h.sendCommandAt(body, at, h.cfg.SlackSigningSecret); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("the replayed command was answered %d %s, want an empty 200", r.Status, r.Body)
	}
	// The same command sent anew (Slack's next request: a new trigger id
	// and timestamp) is answered as usual.
	if got := h.listed(alice, "all"); len(got) != 1 {
		t.Errorf("/approvals all after the replay lists %v, want the request", got)
	}
}

// Over Socket Mode, Slack delivers an envelope again (same envelope id)
// when our ack was lost. After approve and reject, a late redelivery of the
// approve's envelope must not undo the reject.
func TestSocketModeRedeliveredClickAfterALaterOneIsIgnored(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	id := h.postAndWait(example(t))
	first := h.deliver("interactive", h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true")))
	h.deliver("interactive", h.clickPayload(alice, id, "d1", button(blocks.ActionReject, "false")))
	before := auditEvents(t, h, id)

	ctx := ctxTimeout(t, guard)
	if _, err := h.emu.SendEnvelope(ctx, slackemu.Envelope{ID: first.ID, Type: first.Type, Payload: first.Payload}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.emu.WaitAck(ctx, first.ID); err != nil {
		t.Fatal("the redelivered envelope was not acked:", err)
	}
	if a := h.record(id).Answers["d1"]; a.Value != false {
		t.Errorf("after the redelivered approve, d1 = %v, want the later reject", a.Value)
	}
	if after := auditEvents(t, h, id); len(after) != len(before) {
		t.Errorf("the redelivery added %d audit entries", len(after)-len(before))
	}
}
