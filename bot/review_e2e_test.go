package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// Seed 000's example can be submitted as shown: decision d3 is required and
// its menu shows the default ("next_week") preselected, so Submit records it
// as the submitter's answer, marked as a default they accepted, in the
// stored answer, the response, the message and the audit. A date picker
// showing its default is the same.
func TestSubmitRecordsThePreselectedDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "preselected", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = append(data["decisions"].([]any), map[string]any{"id": "d5", "type": "date",
			"prompt": "Launch date?", "required": true, "default": "2027-03-01"})
	}))
	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, id, "d2", button(blocks.ActionApprove, "true")))
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))

	rec, _ := h.store.Get(context.Background(), id)
	if rec.Status != aah.StatusResolved {
		t.Fatalf("status after submit = %v, want resolved (the menu and date picker showed their defaults)", rec.Status)
	}
	for d, want := range map[string]any{"d3": "next_week", "d5": "2027-03-01"} {
		if a := rec.Answers[d]; a.Value != want || a.By.ID != bob.id || !a.DefaultAccepted || a.Defaulted || a.At.IsZero() {
			t.Errorf("%s = %+v, want %v accepted by Bob", d, a, want)
		}
	}
	// Optional d4 (approval buttons show nothing selected) takes its default as before.
	if a := rec.Answers["d4"]; !a.Defaulted || a.DefaultAccepted || a.By.ID != "" {
		t.Errorf("d4 = %+v, want a plain default nobody accepted", a)
	}

	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("response: %v", err)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data struct{ Responses []map[string]any }
			}
		}
	}
	_ = json.Unmarshal(rec.Response, &resp)
	for _, r := range resp.Content.Body.Data.Responses {
		accepted := r["decision_id"] == "d3" || r["decision_id"] == "d5"
		if (r["default_accepted"] == true) != accepted || accepted && r["decided_at"] == nil {
			t.Errorf("response entry %v: default_accepted should be set exactly on d3 and d5, with decided_at", r)
		}
	}

	h.waitIdle()
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	text := slackemu.RenderText(m.Blocks)
	if n := strings.Count(text, "accepted the default shown"); n != 2 {
		t.Errorf("message marks %d accepted defaults, want 2:\n%s", n, text)
	}

	entries, _ := h.store.Audit(context.Background(), id)
	accepted := 0
	for _, e := range entries {
		if e.Event == "answered" && e.Data["default_accepted"] == true && e.Actor == "human:"+bob.id {
			accepted++
		}
	}
	if accepted != 2 {
		t.Errorf("audit has %d accepted defaults by Bob, want 2", accepted)
	}
}

// A required decision whose control shows nothing preselected (approval
// buttons, a text input) stays unanswered even with a default: Submit
// refuses and names it.
func TestSubmitLeavesUnshownDefaultsUnanswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "unshown", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = []any{
			map[string]any{"id": "go", "type": "approval", "prompt": "Go ahead?", "required": true, "default": true},
			map[string]any{"id": "when", "type": "choice", "prompt": "When?", "required": true, "default": "now",
				"options": []any{map[string]any{"value": "now", "label": "Now"}, map[string]any{"value": "later", "label": "Later"}}},
		}
	}))
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	if err := h.emu.WaitFor(ctxTimeout(t, 10*time.Second), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals("C0APPROVALS", alice.id)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if e := h.emu.Ephemerals("C0APPROVALS", alice.id)[0].Text; !strings.Contains(e, "Go ahead?") || strings.Contains(e, "When?") {
		t.Errorf("refusal should name only the approval: %q", e)
	}
	if rec, _ := h.store.Get(context.Background(), id); rec.Status.Open() != true || len(rec.Answers) != 0 {
		t.Errorf("a refused submit stored something: %v %+v", rec.Status, rec.Answers)
	}
}

// Every reviewer's comment survives: three people comment on d4, and the
// stored answer, the response (comment: the answerer's rationale; comments:
// everyone's) and the message keep all three, each with its author.
func TestEveryCommentSurvives(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "all-comments", func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id, bob.id, morgan.id}}}
	}))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "d4", Channel: "C0APPROVALS"}
	comment := func(u slackUser, text string) {
		ok(t, h.submitModal(u, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput(text)}}))
	}
	ok(t, h.click(alice, id, "d4", button(blocks.ActionReject, "false")))
	comment(alice, "Spam risk")
	comment(bob, "Trial drives signups")
	comment(morgan, "Ask finance")
	comment(bob, "Trial drives signups, but cap it") // replaces Bob's own comment only
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	ok(t, h.click(alice, id, "d4", button(blocks.ActionReject, "false")))
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))

	rec, _ := h.store.Get(context.Background(), id)
	if rec.Status != aah.StatusResolved {
		t.Fatalf("status = %v", rec.Status)
	}
	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("response: %v", err)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data struct {
					Responses []struct {
						DecisionID string `json:"decision_id"`
						Comment    *string
						Comments   []struct {
							By     string `json:"by"`
							ByName string `json:"by_name"`
							At     string `json:"at"`
							Text   string `json:"text"`
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		t.Fatal(err)
	}
	d4 := resp.Content.Body.Data.Responses[3]
	if d4.DecisionID != "d4" || d4.Comment == nil || *d4.Comment != "Spam risk" {
		t.Errorf("d4 comment = %v, want Alice's rationale", d4.Comment)
	}
	// Named as the directory names them (users.info), not by the handle
	// the click carried ("Alice").
	want := []struct{ by, name, text string }{
		{"human:U0ALICE", "Alice Reviewer", "Spam risk"},
		{"human:U0BOB", "Bob Reviewer", "Trial drives signups, but cap it"},
		{"human:U0MANAGER", "Morgan Manager", "Ask finance"},
	}
	if len(d4.Comments) != len(want) {
		t.Fatalf("d4 comments = %+v, want %d", d4.Comments, len(want))
	}
	for i, w := range want {
		if c := d4.Comments[i]; c.By != w.by || c.ByName != w.name || c.Text != w.text || c.At == "" {
			t.Errorf("comments[%d] = %+v, want %+v", i, c, w)
		}
	}

	h.waitIdle()
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	text := slackemu.RenderText(m.Blocks)
	for _, line := range []string{"> Spam risk\n", "> Trial drives signups, but cap it — @U0BOB", "> Ask finance — @U0MANAGER"} {
		if !strings.Contains(text, line) {
			t.Errorf("message lacks %q:\n%s", line, text)
		}
	}
}
