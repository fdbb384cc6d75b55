package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/webhook"
)

// GET /v1/requests/{id} shows the answers given so far while the request is
// open, in the response's shape, each naming who gave it and when; once it
// is resolved the response holds them instead.
func TestGetShowsAnswersSoFar(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	core := approval.New(e.st, approval.Options{Now: e.now})
	a := e.api(func(o *webhook.Options) {
		o.Lifecycle = core
		o.Now = func() time.Time { return seedAt }
	})
	slack := map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}, "quorum": 2}
	if r := a.submit(tokenPM, seedWith(t, "prog-1", slack)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	alice := aah.Person{ID: "U0ALICE", Name: "alice"}
	bob := aah.Person{ID: "U0BOB", Name: "bob"}
	_, err := core.Answer(ctx, "prog-1", alice, map[string]any{"d1": true, "d3": "immediate"})
	mustNil(t, err)
	_, err = core.Comment(ctx, "prog-1", "d3", bob, "Agreed")
	mustNil(t, err)

	status, answers := a.progress("prog-1")
	d1, d2, d3 := answers["d1"], answers["d2"], answers["d3"]
	switch {
	case status != aah.StatusPartial || len(answers) != 4:
		t.Errorf("status %s, %d answers", status, len(answers))
	case d1.Approved != nil || len(d1.Signoffs) != 1 || d1.Signoffs[0].AgentID != "human:U0ALICE" ||
		d1.Signoffs[0].AgentName != "alice" || !d1.Signoffs[0].Approved || d1.Signoffs[0].At.IsZero():
		// Quorum 2: alice's sign-off is recorded; the decision waits for a second.
		t.Errorf("d1 = %+v", d1)
	case d2.Answered == nil || *d2.Answered:
		t.Errorf("d2 = %+v", d2)
	case d3.Selected != "immediate" || d3.DecidedBy == nil || *d3.DecidedBy != alice || d3.DecidedAt.IsZero() ||
		len(d3.Comments) != 1 || d3.Comments[0].ByName != "bob" || d3.Comments[0].Text != "Agreed":
		t.Errorf("d3 = %+v", d3)
	}

	// A list shows no answers (one parse per request is GET's alone).
	r := a.do(http.MethodGet, "/v1/requests", tokenPM)
	var list struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	mustNil(t, json.Unmarshal(r.Body, &list))
	if len(list.Items) != 1 || list.Items[0]["answers"] != nil {
		t.Errorf("list: %s", r.Body)
	}

	_, err = core.Answer(ctx, "prog-1", bob, map[string]any{"d1": true, "d2": true})
	mustNil(t, err)
	_, err = core.Answer(ctx, "prog-1", alice, map[string]any{"d2": true})
	mustNil(t, err)
	_, err = core.Submit(ctx, "prog-1", alice)
	mustNil(t, err)
	r = a.do(http.MethodGet, "/v1/requests/prog-1", tokenPM)
	var closed map[string]json.RawMessage
	mustNil(t, json.Unmarshal(r.Body, &closed))
	if closed["answers"] != nil || closed["response"] == nil {
		t.Errorf("resolved: %s", r.Body)
	}
}

// progress is GET's answers so far, by decision id.
func (a *api) progress(id string) (aah.Status, map[string]aah.DecisionAnswer) {
	a.t.Helper()
	r := a.do(http.MethodGet, "/v1/requests/"+id, tokenPM)
	if r.Status != http.StatusOK {
		a.t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	var v struct {
		Status  aah.Status           `json:"status"`
		Answers []aah.DecisionAnswer `json:"answers"`
	}
	mustNil(a.t, json.Unmarshal(r.Body, &v))
	out := map[string]aah.DecisionAnswer{}
	for _, d := range v.Answers {
		out[d.DecisionID] = d
	}
	return v.Status, out
}
