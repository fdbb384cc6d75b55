package bot_test

// Regression tests for authorization defects a review found; each comment
// says what went wrong.

import (
	"encoding/json"
	"testing"

	"github.com/approvalbot/approvalbot/blocks"
)

// Submit once gave an unsettled optional approval decision its default, so
// a default of true approved it without its quorum. A default may reject a
// gated decision but never approve it; it stays unanswered instead.
func TestSubmitDoesNotApproveAGatedDecisionByDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	// Seed 000: d1, d2 required approvals, d3 a choice, d4 optional approval with default true.
	id := h.postAndWait(exampleWith(t, "quorum-submit", func(doc map[string]any) {
		withResponseURL(agent.srv.URL + "/d")(doc)
		doc["extensions"] = map[string]any{"slack": map[string]any{"quorum": 2, "reviewers": []any{alice.id, bob.id}}}
		delete(doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any), "escalation")
	}))
	for _, u := range []slackUser{alice, bob} {
		ok(t, h.click(u, id, "d1", button(blocks.ActionApprove, "true")))
		ok(t, h.click(u, id, "d2", button(blocks.ActionApprove, "true")))
	}
	ok(t, h.click(alice, id, "d4", button(blocks.ActionApprove, "true"))) // one of two
	ok(t, h.click(bob, id, "d3", staticSelect("next_week")))
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	if rec := answersOf(t, h, id); rec.Status != "resolved" {
		t.Fatalf("status %s", rec.Status)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data struct {
					OverallStatus string `json:"overall_status"`
					Responses     []struct {
						DecisionID string `json:"decision_id"`
						Approved   *bool  `json:"approved"`
						Defaulted  bool   `json:"defaulted"`
						Answered   *bool  `json:"answered"`
					} `json:"responses"`
				}
			}
		}
	}
	d := agent.wait(t, guard)
	if err := json.Unmarshal(d.body, &resp); err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Content.Body.Data.Responses {
		if r.DecisionID == "d4" && (r.Approved != nil || r.Defaulted || r.Answered == nil || *r.Answered) {
			t.Errorf("d4 with one of two approvals was reported as %+v; want answered: false", r)
		}
	}
}

// The reject modal once saved the reason and the rejection in two updates:
// a rejection refused after the first (here: the request resolved in
// between) left its reason behind on the decision.
func TestRefusedRejectionLeavesNoReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "reason-atomic", map[string]any{"require_reason": true}))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"}
	r := h.submitModal(bob, blocks.ModalReject, ref, map[string]map[string]any{"comment": {"text": textInput("Too late?")}})
	if r.Status != 200 || !contains(string(r.Body), "already resolved") {
		t.Fatalf("rejecting a resolved request: %d %s", r.Status, r.Body)
	}
	if a := answersOf(t, h, id).Answers["ship"]; len(a.Comments) != 0 || a.Value != true {
		t.Errorf("a refused rejection changed the answer: %+v", a)
	}
}

// Under require_reason, another person's comment once replaced the
// rejecter's reason, and the response carried theirs instead. Now each
// person has their own comment: Bob's joins, Alice's reason stays hers.
func TestRejectionReasonStaysWithTheRejecter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "reason-kept", func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"require_reason": true}}
	}))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "d1", Channel: "C0APPROVALS"}
	ok(t, h.submitModal(alice, blocks.ModalReject, ref, map[string]map[string]any{"comment": {"text": textInput("Segments overlap")}}))
	ok(t, h.submitModal(bob, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput("fine, ignore")}}))
	a := answersOf(t, h, id).Answers["d1"]
	if r, _ := a.Rationale(); r.Text != "Segments overlap" || r.By.ID != alice.id || a.Value != false || len(a.Comments) != 2 {
		t.Errorf("d1 = %+v", a)
	}
	// Alice may change her own reason.
	ok(t, h.submitModal(alice, blocks.ModalReject, ref, map[string]map[string]any{"comment": {"text": textInput("Segments overlap; see doc")}}))
	if c, _ := answersOf(t, h, id).Answers["d1"].CommentOf(alice.id); c.Text != "Segments overlap; see doc" {
		t.Errorf("after Alice changes her reason: %+v", a)
	}
}
