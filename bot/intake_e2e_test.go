package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// The seed 000 example goes in through the webhook and comes out as exactly
// one Slack message, rendered as blocks.Render renders it, and GET reports
// where it was posted.
func TestSeedExampleIsPostedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()

	r := h.post(example(t))
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	body := r.json(t)
	if body["id"] != "aah_decision_abc123" || body["status"] != "pending" ||
		body["links"].(map[string]any)["self"] != "/v1/requests/aah_decision_abc123" {
		t.Errorf("unexpected 202 body: %s", r.Body)
	}
	calls, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "chat.postMessage", 1)
	if err != nil {
		t.Fatal(err)
	}
	h.waitIdle()

	msgs := h.emu.Messages("C0APPROVALS")
	if len(msgs) != 1 || len(h.emu.CallsTo("chat.postMessage")) != 1 {
		t.Fatalf("want exactly one message and one post, got %d messages, %d posts", len(msgs), len(calls))
	}
	req, err := aah.Parse(example(t), aah.ParseOptions{Stored: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.store.Get(context.Background(), "aah_decision_abc123")
	if err != nil {
		t.Fatal(err)
	}
	want := blocks.Render(req, blocks.State{Status: aah.StatusPending, Version: 1, ReceivedAt: rec.ReceivedAt, Mentions: []string{}})
	wantJSON, _ := json.Marshal(want.Blocks)
	if string(msgs[0].Blocks) != string(wantJSON) {
		t.Errorf("posted blocks differ from the renderer's:\n got %s\nwant %s", msgs[0].Blocks, wantJSON)
	}
	if msgs[0].Text != want.Text {
		t.Errorf("fallback text = %q, want %q", msgs[0].Text, want.Text)
	}

	got := h.get("aah_decision_abc123")
	sl := got["slack"].(map[string]any)
	if sl["state"] != "posted" || sl["channel"] != "C0APPROVALS" || sl["ts"] != msgs[0].TS ||
		!strings.Contains(fmt.Sprint(sl["permalink"]), "/archives/C0APPROVALS/p") {
		t.Errorf("GET slack section = %v", sl)
	}
	if got["agent"] != "pm" || got["status"] != "pending" {
		t.Errorf("GET = %v", got)
	}
	// The stored document is the one sent, unknown fields and all.
	var sent, stored map[string]any
	_ = json.Unmarshal(example(t), &sent)
	raw, _ := json.Marshal(got["request"])
	_ = json.Unmarshal(raw, &stored)
	if fmt.Sprint(sent) != fmt.Sprint(stored) {
		t.Errorf("stored request differs from the one sent:\n%v\n%v", stored, sent)
	}
	if v := metricValue(t, h.reg, "approvalbot_slack_posts_total", map[string]string{"outcome": "posted"}); v != 1 {
		t.Errorf("posts{posted} = %v, want 1", v)
	}
	if v := metricValue(t, h.reg, "approvalbot_intake_requests_total", map[string]string{"outcome": "accepted"}); v != 1 {
		t.Errorf("intake{accepted} = %v, want 1", v)
	}
}

func TestUnknownFieldsAreKeptVerbatim(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := exampleWith(t, "keep-unknown", func(doc map[string]any) {
		doc["x_future"] = map[string]any{"nested": []any{1, "two"}}
		doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)["x_hint"] = "kept"
	})
	if r := h.post(body); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	raw, _ := json.Marshal(h.get("keep-unknown")["request"])
	for _, want := range []string{`"x_future":{"nested":[1,"two"]}`, `"x_hint":"kept"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("stored request lost %s: %s", want, raw)
		}
	}
}

func TestMissingIDIsGenerated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := exampleWith(t, "", func(doc map[string]any) { delete(doc["artifact"].(map[string]any), "id") })
	r := h.post(body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	if len(id) != 36 {
		t.Fatalf("generated id %q is not a UUID", id)
	}
	got := h.get(id)
	if got["request"].(map[string]any)["artifact"].(map[string]any)["id"] != id {
		t.Errorf("stored document does not carry the generated id: %v", got["request"])
	}
}

// Resubmitting the identical body (even re-serialized) returns the stored
// record without a second post; a different body under the same id is a 409.
func TestIdempotentResubmission(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	if r := h.post(example(t)); r.Status != http.StatusAccepted {
		t.Fatalf("first POST: %d %s", r.Status, r.Body)
	}
	var doc any
	_ = json.Unmarshal(example(t), &doc)
	reserialized, _ := json.MarshalIndent(doc, "", "    ")
	r := h.post(reserialized)
	if r.Status != http.StatusOK {
		t.Fatalf("identical resubmission: %d %s", r.Status, r.Body)
	}
	if got := r.json(t); got["id"] != "aah_decision_abc123" || got["request"] == nil {
		t.Errorf("resubmission should return the stored record, got %s", r.Body)
	}
	changed := exampleWith(t, "aah_decision_abc123", func(doc map[string]any) {
		doc["artifact"].(map[string]any)["title"] = "Something else"
	})
	if r := h.post(changed); r.Status != http.StatusConflict {
		t.Errorf("different body, same id: %d %s, want 409", r.Status, r.Body)
	}
	// Another agent reusing the id is a conflict too, not a read of pm's request.
	if r := h.do(http.MethodPost, "/v1/requests", tokenOther, "application/json", example(t)); r.Status != http.StatusConflict {
		t.Errorf("same body from another agent: %d, want 409", r.Status)
	}
	h.waitIdle()
	if ok, _ := postCalls(h.emu); ok != 1 {
		t.Errorf("%d posts, want 1", ok)
	}
	if got := h.get("aah_decision_abc123"); got["request"].(map[string]any)["artifact"].(map[string]any)["title"] != "Approve Marketing Strategy" {
		t.Errorf("the conflicting body changed the stored request")
	}
}

func TestFiftyConcurrentDuplicatesMakeOneRecordAndOnePost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	statuses := make(chan int, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { statuses <- h.post(example(t)).Status })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusAccepted] != 1 || count[http.StatusOK] != 49 {
		t.Fatalf("statuses = %v, want one 202 and 49 200", count)
	}
	h.waitIdle()
	if ok, failed := postCalls(h.emu); ok != 1 || failed != 0 {
		t.Errorf("posts ok=%d failed=%d, want exactly one", ok, failed)
	}
	page, err := h.store.List(context.Background(), store.ListQuery{Agent: "pm"})
	if err != nil || len(page.Items) != 1 {
		t.Errorf("records = %d (%v), want 1", len(page.Items), err)
	}
}
