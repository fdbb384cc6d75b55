package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/webhook"
)

// An escalated request keeps the status escalated however many answers
// follow (seed 000 §6); GET and the list show that it was escalated, when,
// and how many decisions are answered, and once it resolves its status is
// resolved while escalated stays true, in the response too.
func TestEscalatedRequestShowsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	core := approval.New(e.st, approval.Options{Now: e.now})
	a := e.api(func(o *webhook.Options) {
		o.Lifecycle = core
		o.Now = func() time.Time { return seedAt }
	})
	if r := a.submit(tokenPM, seedWith(t, "esc-1", map[string]any{"reviewers": []any{"U0ALICE"}})); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	alice := aah.Person{ID: "U0ALICE", Name: "Alice Liddell"}
	_, err := core.Escalate(ctx, "esc-1", 0, approval.Target{Users: []string{"U0MANAGER"}})
	mustNil(t, err)
	_, err = core.Answer(ctx, "esc-1", alice, map[string]any{"d1": true, "d2": false})
	mustNil(t, err)

	type view struct {
		Status      aah.Status          `json:"status"`
		Escalated   bool                `json:"escalated"`
		EscalatedAt *time.Time          `json:"escalated_at"`
		Progress    *aah.AnswerProgress `json:"progress"`
		Response    json.RawMessage     `json:"response"`
	}
	var one view
	r := a.do(http.MethodGet, "/v1/requests/esc-1", tokenPM)
	mustNil(t, json.Unmarshal(r.Body, &one))
	want := aah.AnswerProgress{Answered: 2, Total: 4, Required: 3, RequiredAnswered: 2}
	if one.Status != aah.StatusEscalated || !one.Escalated || one.EscalatedAt == nil || one.Progress == nil || *one.Progress != want {
		t.Errorf("GET: %s", r.Body)
	}
	var list struct {
		Items []view `json:"items"`
	}
	r = a.do(http.MethodGet, "/v1/requests?status=escalated", tokenPM)
	mustNil(t, json.Unmarshal(r.Body, &list))
	if len(list.Items) != 1 || !list.Items[0].Escalated || list.Items[0].EscalatedAt == nil ||
		!list.Items[0].EscalatedAt.Equal(*one.EscalatedAt) || list.Items[0].Progress == nil || *list.Items[0].Progress != want {
		t.Errorf("list: %s", r.Body)
	}

	_, err = core.Answer(ctx, "esc-1", alice, map[string]any{"d3": "next_week"})
	mustNil(t, err)
	_, err = core.Submit(ctx, "esc-1", alice)
	mustNil(t, err)
	var closed view
	r = a.do(http.MethodGet, "/v1/requests/esc-1", tokenPM)
	mustNil(t, json.Unmarshal(r.Body, &closed))
	if closed.Status != aah.StatusResolved || !closed.Escalated || closed.EscalatedAt == nil {
		t.Errorf("resolved: %s", r.Body)
	}
	if err := schema.ValidateResponse(closed.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	var resp aah.Response
	mustNil(t, json.Unmarshal(closed.Response, &resp))
	if d := resp.Content.Body.Data; !d.Escalated || !d.EscalatedAt.Equal(one.EscalatedAt.Truncate(time.Second)) {
		t.Errorf("response data: escalated %v at %v", d.Escalated, d.EscalatedAt)
	}
}
