package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// Seed 000's example answered in Slack, then submitted through "Submit
// with comment…": the button opens the submit modal, whose comment becomes
// data.comment next to the summary. Every person in the response is named
// as the directory (users.info) names them, "Bob Reviewer", not by the
// handle a click's payload carries ("Bob").
func TestSubmitWithCommentInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, id, "d2", button(blocks.ActionReject, "false")))
	ok(t, h.click(bob, id, "d3", staticSelect("next_week")))
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmitComment, blocks.RequestScope)))

	// The modal opens (after the ack).
	deadline := time.Now().Add(guard)
	var opened bool
	for !opened && time.Now().Before(deadline) {
		for _, v := range h.emu.Views() {
			opened = opened || v.CallbackID == blocks.ModalSubmit
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !opened {
		t.Fatal("Submit with comment… opened no submit modal")
	}
	ref := blocks.ModalRef{RequestID: id, DecisionID: blocks.RequestScope, Channel: "C0APPROVALS"}
	ok(t, h.submitModal(bob, blocks.ModalSubmit, ref, map[string]map[string]any{
		"comment": {"text": textInput("Go, but hold the budget until Q3")}}))

	rec, err := h.store.Get(context.Background(), id)
	if err != nil || rec.Status != aah.StatusResolved {
		t.Fatalf("after submit: %v %s", err, rec.Status)
	}
	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	var resp aah.Response
	if err := jsonUnmarshal(rec.Response, &resp); err != nil {
		t.Fatal(err)
	}
	d := resp.Content.Body.Data
	if resp.Source.AgentID != "human:"+slackemu.UserBob || resp.Source.AgentName != "Bob Reviewer" {
		t.Errorf("source = %+v, want Bob by his directory name", resp.Source)
	}
	if d.Comment == nil || d.Comment.Text != "Go, but hold the budget until Q3" || d.Comment.ByName != "Bob Reviewer" || d.Summary == "" {
		t.Errorf("data.comment = %+v, summary %q", d.Comment, d.Summary)
	}
	for _, a := range d.Responses {
		if a.DecidedBy != nil && strings.Fields(a.DecidedBy.Name)[0] == a.DecidedBy.Name {
			t.Errorf("%s decided by %+v: a handle, not a name", a.DecisionID, a.DecidedBy)
		}
	}
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		found = found || e.Event == "submitted" && e.Data["comment"] == "Go, but hold the budget until Q3"
	}
	if !found {
		t.Error("the audit does not record the submit comment")
	}
}
