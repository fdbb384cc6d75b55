package bot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/examples"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// renderScaleExample is examples/scale-service.json as the README's recipe
// sends it, with its own id and, when given, the requests it follows up.
func renderScaleExample(t *testing.T, id string, parents ...string) []byte {
	t.Helper()
	raw, err := examples.Request(exampleNow, examples.Options{Example: examples.ExampleScale, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(parents) == 0 {
		return raw
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["handoff"].(map[string]any)["parent_artifact_ids"] = parents
	raw, _ = json.Marshal(doc)
	return raw
}

// postAndWaitWithToken submits a request with an agent's token and waits for its message.
func (h *harness) postAndWaitWithToken(token string, body []byte) string {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/requests", token, "application/json", body)
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

// The scale example, submitted through intake, is shown as the review
// extension asks: proposed actions with their parameters, risk badges, the
// irreversible migration flagged and confirmed before approval, reasons to
// reject, the request menu of verbs, and a date-and-time picker whose
// answer is an RFC 3339 UTC moment.
func TestReviewExtensionMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(renderScaleExample(t, "render-scale"))
	h.waitIdle()
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	text := slackemu.RenderText(m.Blocks)
	for _, want := range []string{
		"*Proposed action*: `scale_service`", "• *replicas:* 12", "*Estimated cost:* 420 USD/day",
		":large_yellow_circle: *Medium risk* · fully reversible · agent's confidence 80%",
		"*Proposed action*: `run_migration`  :warning: *Irreversible*", ":red_circle: *Critical risk*",
		"*Risk factors:* Drops a production table",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q:\n%s", want, text)
		}
	}
	var list []map[string]any
	if err := json.Unmarshal(m.Blocks, &list); err != nil {
		t.Fatal(err)
	}
	elements := map[string][]map[string]any{} // by decision id
	for _, b := range list {
		if b["type"] != "actions" {
			continue
		}
		_, decision, _, _ := blocks.ParseBlockID(b["block_id"].(string))
		for _, e := range b["elements"].([]any) {
			elements[decision] = append(elements[decision], e.(map[string]any))
		}
	}
	find := func(decision, actionID string) map[string]any {
		for _, e := range elements[decision] {
			if e["action_id"] == actionID {
				return e
			}
		}
		return nil
	}
	if c, _ := find("migrate", blocks.ActionApprove)["confirm"].(map[string]any); c == nil || c["style"] != "danger" {
		t.Errorf("the migration's Approve does not ask to confirm: %v", find("migrate", blocks.ActionApprove))
	}
	if find("scale", blocks.ActionApprove)["confirm"] != nil {
		t.Errorf("the reversible scale-up asks to confirm")
	}
	if find("scale", blocks.ActionModify) == nil || find("migrate", blocks.ActionModify) != nil {
		t.Errorf("Modify belongs to the scale decision only: %v", elements)
	}
	if find("migrate", blocks.ActionRejectReason) == nil {
		t.Errorf("the migration's Reject does not open the reasons: %v", elements["migrate"])
	}
	if c, _ := find(blocks.RequestScope, blocks.ActionApproveAll)["confirm"].(map[string]any); c == nil || c["style"] != "danger" {
		t.Errorf("Approve all over the migration does not warn: %v", find(blocks.RequestScope, blocks.ActionApproveAll))
	}
	menu := find(blocks.RequestScope, blocks.ActionVerbs)
	var verbs []string
	for _, o := range menu["options"].([]any) {
		verbs = append(verbs, o.(map[string]any)["value"].(string))
	}
	if strings.Join(verbs, ",") != "defer,change_plan,escalate,abort" {
		t.Errorf("request menu = %v", verbs)
	}
	picker := find("window", blocks.ActionDate)
	if picker == nil || picker["type"] != "datetimepicker" {
		t.Fatalf("the migration window has no datetimepicker: %v", elements["window"])
	}

	// Pick 10 hours after the request was made: within its window.
	moment := exampleNow.UTC().Truncate(time.Second).Add(10 * time.Hour)
	ok(t, h.click(alice, id, "window", action{"action_id": blocks.ActionDate, "type": "datetimepicker",
		"selected_date_time": moment.Unix(), "action_ts": "1700000000.000003"}))
	rec, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Answers["window"].Value; got != moment.Format(time.RFC3339) {
		t.Errorf("window answered %v, want %s", got, moment.Format(time.RFC3339))
	}
}

// A request naming its agent's earlier request in parent_artifact_ids is
// shown as its follow-up, linked to it; naming another agent's request
// shows nothing of it.
func TestFollowUpMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	first := h.postAndWait(renderScaleExample(t, "render-first"))
	h.waitIdle()
	firstRec, err := h.store.Get(context.Background(), first)
	if err != nil || firstRec.Slack.Permalink == "" {
		t.Fatalf("the first request has no permalink (%v)", err)
	}
	again := h.postAndWait(renderScaleExample(t, "render-again", first))
	foreign := h.postAndWaitWithToken(tokenOther, renderScaleExample(t, "render-foreign", first))
	h.waitIdle()
	text := func(id string) string {
		channel, ts := h.messageOf(id)
		m, _ := h.emu.Message(channel, ts)
		return string(m.Blocks)
	}
	if want := "Follow-up of \\u003c" + firstRec.Slack.Permalink + "|Scale the checkout API for the launch\\u003e"; !strings.Contains(text(again), want) {
		t.Errorf("the follow-up lacks %s:\n%s", want, text(again))
	}
	if strings.Contains(text(foreign), "Follow-up") {
		t.Errorf("another agent's request is shown as the parent:\n%s", text(foreign))
	}
}
