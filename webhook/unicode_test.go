package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// Text that is not well-formed Unicode is refused at intake with a 400
// naming the field, instead of being stored as sent (and echoed back by
// GET) while encoding/json reads it as U+FFFD: bytes that are not UTF-8,
// and \u escapes of half a surrogate pair.
func TestIntakeRefusesTextThatIsNotUnicode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.api(func(o *webhook.Options) { o.Now = func() time.Time { return seedAt } })
	for _, tc := range []struct {
		name, id, marker, replacement, field string
	}{
		{"invalid byte in the title", "utf8-title", `"MARK"`, "\"Launch \xff plan\"", "artifact.title"},
		{"truncated sequence in a prompt", "utf8-prompt", `"MARK"`, "\"Approve \xe2\x82?\"", "content.body.data.decisions[1].prompt"},
		{"lone surrogate escape", "utf8-surrogate", `"MARK"`, `"x \ud800 y"`, "content.body.data.decisions[1].prompt"},
		{"lone low surrogate escape", "utf8-low", `"MARK"`, `"x \udc00"`, "artifact.title"},
		{"invalid key", "utf8-key", `"mark_key":1`, "\"bad\xc0key\":1", "extensions.slack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			mustNil(t, json.Unmarshal(seedWith(t, tc.id, map[string]any{"mark_key": 1, "reviewers": []any{"U0ALICE"}}), &doc))
			if tc.field == "artifact.title" {
				doc["artifact"].(map[string]any)["title"] = "MARK"
			} else {
				data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
				data["decisions"].([]any)[1].(map[string]any)["prompt"] = "MARK"
			}
			raw, err := json.Marshal(doc)
			mustNil(t, err)
			body := bytes.Replace(raw, []byte(tc.marker), []byte(tc.replacement), 1)
			r := a.submit(tokenPM, body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", r.Status, r.Body)
			}
			details, _ := r.json(t)["details"].([]any)
			if len(details) != 1 || details[0].(map[string]any)["field"] != tc.field {
				t.Errorf("details %v, want one naming %s", details, tc.field)
			}
			if _, err := e.st.Get(context.Background(), tc.id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused request was stored (%v)", err)
			}
		})
	}
	// Well-formed text, surrogate pairs and escaped backslashes included,
	// is accepted.
	var doc map[string]any
	mustNil(t, json.Unmarshal(seedWith(t, "utf8-ok", map[string]any{"reviewers": []any{"U0ALICE"}}), &doc))
	doc["artifact"].(map[string]any)["title"] = "MARK"
	raw, _ := json.Marshal(doc)
	body := bytes.Replace(raw, []byte(`"MARK"`), []byte(`"Launch \ud83d\ude80 ü \\ud800 plan"`), 1)
	if r := a.submit(tokenPM, body); r.Status != http.StatusAccepted {
		t.Errorf("well-formed text: %d %s, want 202", r.Status, r.Body)
	}
}

// An artifact.id naming one of the store's own keys ("head": the request's
// audit chain would be the shard chain's head) is refused with a 400 naming
// artifact.id; nothing is stored and the audit still verifies.
func TestIntakeRefusesAReservedID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.api(func(o *webhook.Options) { o.Now = func() time.Time { return seedAt } })
	r := a.submit(tokenPM, seedWith(t, "head", map[string]any{"reviewers": []any{"U0ALICE"}}))
	if r.Status != http.StatusBadRequest {
		t.Fatalf("%d %s, want 400", r.Status, r.Body)
	}
	details, _ := r.json(t)["details"].([]any)
	if len(details) != 1 || details[0].(map[string]any)["field"] != "artifact.id" {
		t.Errorf("details %v, want one naming artifact.id", details)
	}
	if _, err := e.st.Get(context.Background(), "head"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused request was stored (%v)", err)
	}
	if r := a.submit(tokenPM, seedWith(t, "not-head", map[string]any{"reviewers": []any{"U0ALICE"}})); r.Status != http.StatusAccepted {
		t.Fatalf("another id: %d %s, want 202", r.Status, r.Body)
	}
	if rep, err := e.st.VerifyAll(context.Background()); err != nil || len(rep.Problems) != 0 {
		t.Errorf("VerifyAll = %+v, %v", rep, err)
	}
}
