package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// postAndWait submits a request and waits until its message is in Slack.
func (h *harness) postAndWait(body []byte) string {
	h.t.Helper()
	r := h.post(body)
	if r.Status != http.StatusAccepted {
		h.t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	id := r.json(h.t)["id"].(string)
	deadline := time.Now().Add(guard)
	for {
		if rec, err := h.store.Get(context.Background(), id); err == nil && rec.Posted() {
			return id
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("request %s was not posted", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ok(t *testing.T, r response) {
	t.Helper()
	if r.Status != http.StatusOK || len(r.Body) > 0 && strings.Contains(string(r.Body), "errors") {
		t.Fatalf("interaction: %d %s", r.Status, r.Body)
	}
}

// Seed 000's example, answered in Slack by two reviewers: Alice approves d1
// and d2, Bob picks next_week for d3 and rejects d4 with a comment, comments
// are added through the comment modal, and Bob submits. The response
// artifact matches seed 000 §4 field by field and the message shows the
// outcome without controls.
func TestSeedExampleAnsweredByTwoReviewers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(exampleWith(t, "aah_decision_abc123", withResponseURL(agent.srv.URL+"/decisions")))
	ref := func(d string) blocks.ModalRef {
		return blocks.ModalRef{RequestID: id, DecisionID: d, Channel: "C0APPROVALS"}
	}
	comment := func(u slackUser, d, text string) {
		ok(t, h.submitModal(u, blocks.ModalComment, ref(d), map[string]map[string]any{"comment": {"text": textInput(text)}}))
	}

	ok(t, h.click(alice, id, "d1", button(blocks.ActionApprove, "true")))
	comment(alice, "d1", "Good segmentation")
	ok(t, h.click(alice, id, "d2", button(blocks.ActionApprove, "true")))
	ok(t, h.click(bob, id, "d3", staticSelect("next_week")))
	comment(bob, "d3", "Align with newsletter schedule")
	comment(bob, "d4", "Require CC to reduce spam signups")
	ok(t, h.click(bob, id, "d4", button(blocks.ActionReject, "false")))
	if st := h.get(id)["status"]; st != "partial" {
		t.Fatalf("status before submit = %v, want partial", st)
	}
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))

	got := h.get(id)
	if got["status"] != "resolved" {
		t.Fatalf("status after submit = %v", got["status"])
	}
	rec, _ := h.store.Get(context.Background(), id)
	checkSeedResponse(t, rec.Response, id)

	// The agent receives exactly the stored response, signed.
	d := agent.wait(t, guard)
	if !d.signatureOK || string(d.body) != string(rec.Response) || d.id != rec.Delivery.WebhookID || d.id == "" {
		t.Errorf("delivery: signature ok=%v id=%q (want %q), body equal=%v", d.signatureOK, d.id, rec.Delivery.WebhookID, string(d.body) == string(rec.Response))
	}
	h.waitIdle()
	if cb := h.get(id)["callback"].(map[string]any); cb["state"] != "delivered" {
		t.Errorf("callback after delivery: %v", cb)
	}

	// The message no longer offers any control, and names who answered what.
	h.waitIdle()
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	text := slackemu.RenderText(m.Blocks)
	if strings.Contains(string(m.Blocks), `"type":"actions"`) {
		t.Errorf("resolved message still has controls:\n%s", text)
	}
	for _, want := range []string{"Resolved", "@U0ALICE", "@U0BOB", "Launch next Monday", "Require CC to reduce spam signups", "4 of 4 answered"} {
		if !strings.Contains(text, want) {
			t.Errorf("resolved message lacks %q:\n%s", want, text)
		}
	}

	// The audit trail has every step, and its chain verifies.
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, e := range entries {
		events = append(events, e.Event)
	}
	want := "requested posted answered commented answered answered commented commented answered submitted resolved delivery_succeeded"
	if strings.Join(events, " ") != want {
		t.Errorf("audit events:\n got %s\nwant %s", strings.Join(events, " "), want)
	}
	if err := h.store.VerifyChain("request "+id, entries); err != nil {
		t.Error(err)
	}
}

// checkSeedResponse compares a response artifact with seed 000 §4.
func checkSeedResponse(t *testing.T, raw []byte, requestID string) {
	t.Helper()
	if err := schema.ValidateResponse(raw); err != nil {
		t.Errorf("response does not validate against the response schema: %v", err)
	}
	var r struct {
		AAHVersion string `json:"aah_version"`
		Artifact   struct {
			ID, Type, Title string
			CreatedAt       string `json:"created_at"`
		}
		Source struct {
			AgentID   string `json:"agent_id"`
			AgentName string `json:"agent_name"`
		}
		Content struct {
			MediaType string `json:"media_type"`
			Body      struct {
				Schema string
				Data   struct {
					RequestID     string            `json:"request_id"`
					Responses     []json.RawMessage `json:"responses"`
					OverallStatus string            `json:"overall_status"`
					Summary       string
				}
			}
		}
		Handoff struct {
			ParentArtifactIDs []string `json:"parent_artifact_ids"`
			TargetAgent       string   `json:"target_agent"`
		}
		Lifecycle struct{ Status string }
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	data := r.Content.Body.Data
	checks := map[string][2]string{
		"aah_version":         {r.AAHVersion, "0.1"},
		"artifact.type":       {r.Artifact.Type, "decision/response"},
		"artifact.title":      {r.Artifact.Title, "Response: Approve Marketing Strategy"},
		"source.agent_id":     {r.Source.AgentID, "human:U0BOB"},
		"content.media_type":  {r.Content.MediaType, "application/vnd.aah.decision-response+json"},
		"body.schema":         {r.Content.Body.Schema, "aah:decision/response@1.0"},
		"data.request_id":     {data.RequestID, requestID},
		"data.overall_status": {data.OverallStatus, "partial"},
		"handoff.target":      {r.Handoff.TargetAgent, "product-manager"},
		"handoff.parents":     {strings.Join(r.Handoff.ParentArtifactIDs, ","), requestID},
		"lifecycle.status":    {r.Lifecycle.Status, "final"},
	}
	for field, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", field, c[0], c[1])
		}
	}
	if r.Artifact.ID == "" || r.Artifact.ID == requestID || r.Artifact.CreatedAt == "" || data.Summary == "" {
		t.Errorf("artifact id/created_at/summary missing: %+v summary=%q", r.Artifact, data.Summary)
	}
	want := []struct {
		id, field, value, comment, by string
	}{
		{"d1", "approved", "true", `"Good segmentation"`, "U0ALICE"},
		{"d2", "approved", "true", "null", "U0ALICE"},
		{"d3", "selected", `"next_week"`, `"Align with newsletter schedule"`, "U0BOB"},
		{"d4", "approved", "false", `"Require CC to reduce spam signups"`, "U0BOB"},
	}
	if len(data.Responses) != len(want) {
		t.Fatalf("%d responses, want %d", len(data.Responses), len(want))
	}
	for i, w := range want {
		var a map[string]json.RawMessage
		_ = json.Unmarshal(data.Responses[i], &a)
		var by struct{ ID string }
		_ = json.Unmarshal(a["decided_by"], &by)
		if string(a["decision_id"]) != `"`+w.id+`"` || string(a[w.field]) != w.value || string(a["comment"]) != w.comment ||
			by.ID != w.by || len(a["decided_at"]) == 0 {
			t.Errorf("responses[%d] = %s, want %s %s=%s comment=%s decided_by %s", i, data.Responses[i], w.id, w.field, w.value, w.comment, w.by)
		}
	}
}

// Forged, stale and unsigned interactions are refused with 401 and change
// nothing.
func TestInteractionsNeedAValidSignature(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	channel, ts := h.messageOf(id)
	payload := map[string]any{"type": "block_actions", "user": map[string]any{"id": alice.id},
		"channel": map[string]any{"id": channel}, "container": map[string]any{"message_ts": ts},
		"actions": []any{action{"action_id": blocks.ActionApprove, "block_id": h.blockID(id, "d1"), "type": "button", "value": "true"}}}
	before, _ := h.store.Audit(context.Background(), id)
	cases := map[string]response{
		"wrong secret":       h.sendInteractionAt(payload, time.Now(), "not-the-secret"),
		"ten minutes old":    h.sendInteractionAt(payload, time.Now().Add(-10*time.Minute), h.cfg.SlackSigningSecret),
		"ten minutes future": h.sendInteractionAt(payload, time.Now().Add(10*time.Minute), h.cfg.SlackSigningSecret),
	}
	unsigned, _ := http.Post(h.http.URL+"/slack/interactions", "application/x-www-form-urlencoded", strings.NewReader("payload={}"))
	cases["unsigned"] = response{Status: unsigned.StatusCode}
	for name, r := range cases {
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, r.Status)
		}
	}
	after, _ := h.store.Audit(context.Background(), id)
	if rec, _ := h.store.Get(context.Background(), id); len(rec.Answers) != 0 || len(after) != len(before) {
		t.Errorf("a refused interaction changed state: answers=%v audit %d→%d", rec.Answers, len(before), len(after))
	}
	if v := metricValue(t, h.reg, "approvalbot_slack_requests_rejected_total", nil); v != 4 {
		t.Errorf("rejected counter = %v, want 4", v)
	}
}

// singleApproval is a request with one approval decision: it resolves on its
// first valid answer.
func singleApproval(t *testing.T, id string) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:1]
	})
}

// A hundred reviewers clicking Approve or Reject at once on a one-decision
// request resolve it exactly once; everyone else is told it is resolved, and
// the response agrees with the single recorded answer.
func TestConcurrentConflictingClicksResolveOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) {
		c.DefaultReviewers = nil // all 100 clickers may decide the request, which names nobody
		for i := range 100 {
			c.DefaultReviewers = append(c.DefaultReviewers, fmt.Sprintf("U0R%03d", i))
		}
	})
	h.startJobs()
	id := h.postAndWait(singleApproval(t, "race"))
	block := h.blockID(id, "d1")
	channel, ts := h.messageOf(id)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			verb, value := blocks.ActionApprove, "true"
			if i%2 == 1 {
				verb, value = blocks.ActionReject, "false"
			}
			r := h.sendInteraction(map[string]any{"type": "block_actions",
				"user":    map[string]any{"id": fmt.Sprintf("U0R%03d", i), "name": fmt.Sprintf("r%d", i)},
				"channel": map[string]any{"id": channel}, "container": map[string]any{"message_ts": ts},
				"trigger_id": "t", "actions": []any{action{"action_id": verb, "block_id": block, "type": "button", "value": value}}})
			if r.Status != http.StatusOK {
				t.Errorf("click %d: %d", i, r.Status)
			}
		})
	}
	wg.Wait()
	rec, err := h.store.Get(context.Background(), id)
	if err != nil || rec.Status != aah.StatusResolved {
		t.Fatalf("status %v (%v), want resolved", rec.Status, err)
	}
	entries, _ := h.store.Audit(context.Background(), id)
	count := map[string]int{}
	for _, e := range entries {
		count[e.Event]++
	}
	if count["resolved"] != 1 || count["answered"] != 1 || count["click_refused"] != 99 {
		t.Errorf("audit counts %v, want 1 resolved, 1 answered, 99 refused", count)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data struct {
					Responses []struct{ Approved bool }
				}
			}
		}
	}
	_ = json.Unmarshal(rec.Response, &resp)
	if len(resp.Content.Body.Data.Responses) != 1 || resp.Content.Body.Data.Responses[0].Approved != rec.Answers["d1"].Value {
		t.Errorf("response %s disagrees with the recorded answer %v", rec.Response, rec.Answers["d1"].Value)
	}
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return s.CountCalls("chat.postEphemeral") >= 99
	}); err != nil {
		t.Errorf("the refused reviewers were not all told: %v", err)
	}
}

// Clicking a withdrawn request changes nothing and says why, privately.
func TestClickOnAClosedRequestIsExplained(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	block := h.blockID(id, "d1") // the button as the reviewer still sees it
	h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil)
	channel, ts := h.messageOf(id)
	ok(t, h.sendInteraction(map[string]any{"type": "block_actions", "user": map[string]any{"id": alice.id},
		"channel": map[string]any{"id": channel}, "container": map[string]any{"message_ts": ts},
		"actions": []any{action{"action_id": blocks.ActionApprove, "block_id": block, "type": "button", "value": "true"}}}))
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals(channel, alice.id)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if e := h.emu.Ephemerals(channel, alice.id)[0]; !strings.Contains(e.Text, "withdrew") {
		t.Errorf("ephemeral = %q", e.Text)
	}
	if rec, _ := h.store.Get(context.Background(), id); len(rec.Answers) != 0 || rec.Status != aah.StatusWithdrawn {
		t.Errorf("the click changed a withdrawn request: %v %v", rec.Status, rec.Answers)
	}
}

// "Approve all" answers every approval decision in one click, and Submit is
// refused while a required decision is open.
func TestBatchApproveAndSubmitRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals("C0APPROVALS", alice.id)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	// d3's menu shows its default preselected, so only the approvals are open.
	if e := h.emu.Ephemerals("C0APPROVALS", alice.id)[0].Text; !strings.Contains(e, "Approve target audience segments?") ||
		strings.Contains(e, "Select launch timing") {
		t.Errorf("refused submit should name the open decisions, and only them: %q", e)
	}
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
	rec, _ := h.store.Get(context.Background(), id)
	for _, d := range []string{"d1", "d2", "d4"} {
		if rec.Answers[d].Value != true {
			t.Errorf("%s = %v after approve all", d, rec.Answers[d].Value)
		}
	}
	if _, answered := rec.Answers["d3"]; answered {
		t.Error("approve all answered the choice decision")
	}
	// Choosing d3 leaves nothing required open; optional d4 keeps Alice's answer.
	ok(t, h.click(bob, id, "d3", staticSelect("immediate")))
	ok(t, h.click(bob, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	rec, _ = h.store.Get(context.Background(), id)
	if rec.Status != aah.StatusResolved || !strings.Contains(string(rec.Response), `"all_approved"`) {
		t.Errorf("after submit: %v %s", rec.Status, rec.Response)
	}
}

// Text answers come from a modal that enforces the constraints: a bad value
// keeps the modal open with an error on the field; a good one is recorded.
func TestInputModalValidatesAgainstConstraints(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	body := exampleWith(t, "tagline", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = []any{map[string]any{"id": "tag", "type": "text", "prompt": "Tagline?", "required": true,
			"constraints": map[string]any{"min": 5, "max": 40, "pattern": "^[A-Z]"}}}
	})
	id := h.postAndWait(body)
	ok(t, h.click(alice, id, "tag", button(blocks.ActionOpenInput, "tag")))
	calls, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "views.open", 1)
	if err != nil {
		t.Fatal(err)
	}
	view := calls[0].Params["view"]
	for _, want := range []string{`"callback_id":"ab_input"`, `"min_length":5`, `"max_length":40`, `"block_id":"value"`} {
		if !strings.Contains(view, want) {
			t.Errorf("input modal lacks %s: %s", want, view)
		}
	}
	ref := blocks.ModalRef{RequestID: id, DecisionID: "tag", Channel: "C0APPROVALS"}
	r := h.submitModal(alice, blocks.ModalInput, ref, map[string]map[string]any{"value": {"value": textInput("lowercase start")}})
	if !strings.Contains(string(r.Body), `"response_action":"errors"`) || !strings.Contains(string(r.Body), `"value"`) {
		t.Errorf("invalid answer: %d %s, want response_action errors on value", r.Status, r.Body)
	}
	ok(t, h.submitModal(alice, blocks.ModalInput, ref, map[string]map[string]any{
		"value": {"value": textInput("Plan less, celebrate more")}, "comment": {"text": textInput("Short and warm")}}))
	rec, _ := h.store.Get(context.Background(), id)
	if rec.Status != aah.StatusResolved || rec.Answers["tag"].Value != "Plan less, celebrate more" || !hasComment(rec.Answers["tag"], alice.id, "Short and warm") {
		t.Errorf("after a valid answer: %v %+v", rec.Status, rec.Answers["tag"])
	}
}

// Only the reviewers a request names may answer it, and when none of them
// can be found in Slack nobody may (the rule fails closed, not open).
func TestOnlyNamedReviewersMayAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	reviewers := func(list ...any) func(map[string]any) {
		return func(doc map[string]any) {
			doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": list}}
		}
	}
	named := h.postAndWait(exampleWith(t, "named", reviewers("U0ALICE", "bob@example.com", "ghost@example.com")))
	unresolvable := h.postAndWait(exampleWith(t, "unresolvable", reviewers("ghost@example.com")))

	ok(t, h.click(mallory, named, "d1", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, named, "d1", button(blocks.ActionApprove, "true"))) // named by id
	ok(t, h.click(bob, named, "d2", button(blocks.ActionApprove, "true")))   // named by email
	ok(t, h.click(alice, unresolvable, "d1", button(blocks.ActionApprove, "true")))
	rec, _ := h.store.Get(context.Background(), named)
	if _, ok := rec.Answers["d1"]; !ok || rec.Answers["d1"].By.ID != alice.id || rec.Answers["d2"].By.ID != bob.id {
		t.Errorf("named reviewers' answers: %+v", rec.Answers)
	}
	if rec, _ := h.store.Get(context.Background(), unresolvable); len(rec.Answers) != 0 {
		t.Errorf("with no resolvable reviewer someone could answer: %+v", rec.Answers)
	}
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals("C0APPROVALS", mallory.id)) == 1 && len(s.Ephemerals("C0APPROVALS", alice.id)) == 1
	}); err != nil {
		t.Errorf("refused reviewers were not told: %v", err)
	}
}

// A comment stays with its author: when another reviewer changes the
// answer, the first reviewer's rationale does not become theirs, and it is
// not lost either.
func TestCommentsStayWithTheirAuthor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(example(t))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "d4", Channel: "C0APPROVALS"}
	ok(t, h.click(alice, id, "d4", button(blocks.ActionReject, "false")))
	ok(t, h.submitModal(alice, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput("Spam risk")}}))
	ok(t, h.click(bob, id, "d4", button(blocks.ActionApprove, "true")))
	rec, _ := h.store.Get(context.Background(), id)
	if a := rec.Answers["d4"]; a.Value != true || a.By.ID != bob.id || !hasComment(a, alice.id, "Spam risk") {
		t.Errorf("after Bob's answer: %+v", a)
	} else if r, ok := a.Rationale(); ok {
		t.Errorf("Bob's answer carries %q by %s as its rationale", r.Text, r.By.ID)
	}
	ok(t, h.submitModal(bob, blocks.ModalComment, ref, map[string]map[string]any{"comment": {"text": textInput("Trial drives signups")}}))
	ok(t, h.click(bob, id, "d4", button(blocks.ActionApprove, "true"))) // a double click keeps it
	rec, _ = h.store.Get(context.Background(), id)
	if a := rec.Answers["d4"]; !hasComment(a, bob.id, "Trial drives signups") || !hasComment(a, alice.id, "Spam risk") {
		t.Errorf("Bob's own comment: %+v", a)
	} else if r, _ := a.Rationale(); r.By.ID != bob.id {
		t.Errorf("the rationale of Bob's answer is %+v", r)
	}
	entries, _ := h.store.Audit(context.Background(), id)
	found := false
	for _, e := range entries {
		found = found || (e.Event == "commented" && e.Data["comment"] == "Spam risk")
	}
	if !found {
		t.Error("Alice's comment is not in the audit trail")
	}
}

// hasComment reports whether the person left exactly this comment.
func hasComment(a aah.Answer, personID, text string) bool {
	c, ok := a.CommentOf(personID)
	return ok && c.Text == text
}
