package webhook_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/prometheus/client_golang/prometheus"
)

// POST /v1/requests/{id}/submit {"comment": "..."} submits with the
// submitter's overall comment, which the response carries as data.comment
// named by the reviewer's directory name (Bob's lookup fails: his id). A
// comment too long is a 400 on field comment; an unknown field still is a
// 400 on the body.
func TestSubmitCommentThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var decided []string
	a := e.decisionAPI(&decided, prometheus.NewRegistry())
	if r := a.submit(tokenPM, seedWith(t, "sub-1", map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}})); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/sub-1/answers", tokenBob, `{"answers":{"d1":true,"d2":true,"d3":"next_week"}}`); r.Status != http.StatusOK {
		t.Fatalf("answers: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/sub-1/answers", tokenAlice, `{"answers":{"d4":false},"comment":"CC required"}`); r.Status != http.StatusOK {
		t.Fatalf("answers: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/sub-1/submit", tokenAlice, `{"comment":"`+strings.Repeat("x", 3001)+`"}`); r.Status != http.StatusBadRequest ||
		!strings.Contains(string(r.Body), `"field":"comment"`) {
		t.Errorf("too long: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/sub-1/submit", tokenAlice, `{"summary":"no"}`); r.Status != http.StatusBadRequest {
		t.Errorf("unknown field: %d %s", r.Status, r.Body)
	}
	r := a.send("/v1/requests/sub-1/submit", tokenAlice, `{"comment":"Go, with CC required for the trial"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	var out struct {
		Resolved bool `json:"resolved"`
		Request  struct {
			Response json.RawMessage `json:"response"`
		} `json:"request"`
	}
	mustNil(t, json.Unmarshal(r.Body, &out))
	if err := schema.ValidateResponse(out.Request.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	var resp aah.Response
	mustNil(t, json.Unmarshal(out.Request.Response, &resp))
	d := resp.Content.Body.Data
	if !out.Resolved || d.Comment == nil || d.Comment.Text != "Go, with CC required for the trial" ||
		d.Comment.By != "human:U0ALICE" || d.Comment.ByName != "Alice Reviewer" || d.Summary == "" {
		t.Errorf("resolved %v, data.comment %+v, summary %q", out.Resolved, d.Comment, d.Summary)
	}
	if resp.Source.AgentName != "Alice Reviewer" || resp.Source.AgentID != "human:U0ALICE" {
		t.Errorf("source %+v", resp.Source)
	}
	// Two people answered, so each answer names who gave it: Alice by her
	// directory name, Bob (whose lookup failed) by his id; her comment
	// by her name.
	want := map[string]string{"d1": "U0BOB", "d2": "U0BOB", "d3": "U0BOB", "d4": "Alice Reviewer"}
	for _, ans := range d.Responses {
		if ans.DecidedBy == nil || ans.DecidedBy.Name != want[ans.DecisionID] {
			t.Errorf("%s decided by %+v, want %q", ans.DecisionID, ans.DecidedBy, want[ans.DecisionID])
		}
		if ans.DecisionID == "d4" && (len(ans.Comments) != 1 || ans.Comments[0].ByName != "Alice Reviewer") {
			t.Errorf("d4 comments %+v", ans.Comments)
		}
	}
}
