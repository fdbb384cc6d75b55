package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/prometheus/client_golang/prometheus"
)

// reviewedSeed is seed 000's request with extensions.slack and, on d1, the
// review extension: a proposed scale_service action whose replicas may be
// edited, the verbs given and two reasons to reject.
func reviewedSeed(t *testing.T, id string, slack map[string]any, verbs ...string) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/seed000_request.json")
	mustNil(t, err)
	var doc map[string]any
	mustNil(t, json.Unmarshal(raw, &doc))
	doc["artifact"].(map[string]any)["id"] = id
	doc["extensions"] = map[string]any{"slack": slack, "decisions": map[string]any{"d1": map[string]any{
		"proposed_action": map[string]any{"tool_name": "scale_service", "parameters": map[string]any{"service": "api", "replicas": 6}},
		"responses":       verbs,
		"editable":        map[string]any{"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}},
		"reject_reasons":  []any{"Too expensive", "Wrong service"},
	}}}
	out, err := json.Marshal(doc)
	mustNil(t, err)
	return out
}

// apiError is a refused or invalid call's body.
type apiError struct {
	Error   string           `json:"error"`
	Rule    string           `json:"rule"`
	Details []aah.FieldError `json:"details"`
}

// Every verb through the API, with the same authorization and error mapping
// as the other decision endpoints, audited "via": "api".
func TestVerbsThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var decided []string
	a := e.decisionAPI(&decided, prometheus.NewRegistry())
	slack := map[string]any{"reviewers": []any{"U0ALICE", "U0BOB", "U0RILEY"}, "requested_by": "U0RILEY"}
	all := []string{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"}
	if r := a.submit(tokenPM, reviewedSeed(t, "verbs-1", slack, all...)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	if r := a.submit(tokenPM, reviewedSeed(t, "verbs-2", slack, "approve", "reject")); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		rule, field             string
	}{
		{"modify: not a reviewer", "verbs-1/modify", tokenCarol, `{"decision_id": "d1", "parameters": {"replicas": 4}}`, 403, approval.RuleReviewer, ""},
		{"modify: the requester", "verbs-1/modify", tokenRiley, `{"decision_id": "d1", "parameters": {"replicas": 4}}`, 403, approval.RuleSelfApproval, ""},
		{"modify: no decision", "verbs-1/modify", tokenAlice, `{"parameters": {"replicas": 4}}`, 400, "", "decision_id"},
		{"modify: no parameters", "verbs-1/modify", tokenAlice, `{"decision_id": "d1"}`, 400, "", "parameters"},
		{"modify: out of bounds", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 40}}`, 400, approval.RuleInvalid, "parameters.replicas"},
		{"modify: not editable", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"service": "db"}}`, 400, approval.RuleInvalid, "parameters.service"},
		{"modify: a decision without it", "verbs-1/modify", tokenAlice, `{"decision_id": "d2", "parameters": {"replicas": 4}}`, 409, approval.RuleVerb, ""},
		{"modify: an unknown decision", "verbs-1/modify", tokenAlice, `{"decision_id": "d9", "parameters": {"replicas": 4}}`, 404, approval.RuleInvalid, "decision_id"},
		{"modify: not offered", "verbs-2/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 4}}`, 409, approval.RuleVerb, ""},
		{"reject: a reason not offered", "verbs-1/reject", tokenAlice, `{"reject_reason": "Bad vibes", "decision_ids": ["d1"]}`, 400, approval.RuleInvalid, "reject_reason"},
		{"defer: no guidance", "verbs-1/defer", tokenAlice, `{}`, 400, "", "guidance"},
		{"defer: blank guidance", "verbs-1/defer", tokenAlice, `{"guidance": "  "}`, 400, "", "guidance"},
		{"defer: another field", "verbs-1/defer", tokenAlice, `{"reason": "x"}`, 400, "", "reason"},
		{"change_plan: not a string", "verbs-1/change_plan", tokenAlice, `{"requirement": 5}`, 400, "", "requirement"},
		{"abort: the requester", "verbs-1/abort", tokenRiley, `{"reason": "stop"}`, 403, approval.RuleSelfApproval, ""},
		{"abort: the agent that sent it", "verbs-1/abort", tokenPM, `{"reason": "stop"}`, 403, approval.RuleSelfApproval, ""},
		{"abort: not offered", "verbs-2/abort", tokenAlice, `{"reason": "stop"}`, 409, approval.RuleVerb, ""},
		{"escalate: nobody", "verbs-1/escalate", tokenAlice, `{"note": "x"}`, 400, "", "to"},
		{"escalate: to yourself", "verbs-1/escalate", tokenAlice, `{"to": "U0ALICE"}`, 400, approval.RuleInvalid, "to"},
		{"escalate: not a target", "verbs-1/escalate", tokenAlice, `{"to": "the boss"}`, 400, approval.RuleInvalid, "to"},
		{"escalate: not a reviewer", "verbs-1/escalate", tokenCarol, `{"to": "U0MORGAN"}`, 403, approval.RuleReviewer, ""},
		{"escalate: an unknown request", "nope/escalate", tokenAlice, `{"to": "U0MORGAN"}`, 404, "", ""},
		{"modify: an integer given as 3.5", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 3.5}}`, 400, approval.RuleInvalid, "parameters.replicas"},
		{"modify: a number given as a string", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": "4"}}`, 400, approval.RuleInvalid, "parameters.replicas"},
		{"modify: null", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": null}}`, 400, approval.RuleInvalid, "parameters.replicas"},
		{"modify: a huge number", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 1e400}}`, 400, "", "body"},
		{"modify: an unknown parameter", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"zone": "eu"}}`, 400, approval.RuleInvalid, "parameters.zone"},
		{"modify: parameters not an object", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": [4]}`, 400, "", "body"},
		{"modify: an unknown field", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 4}, "why": 1}`, 400, "", "body"},
		{"modify: a comment too long", "verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 4}, "comment": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, 400, approval.RuleInvalid, "comment"},
		{"defer: guidance not UTF-8", "verbs-1/defer", tokenAlice, "{\"guidance\": \"try \xff\xfe smaller\"}", 400, "", "guidance"},
		{"defer: a lone surrogate", "verbs-1/defer", tokenAlice, `{"guidance": "try \ud800 smaller"}`, 400, "", "guidance"},
		{"modify: a comment not UTF-8", "verbs-1/modify", tokenAlice, "{\"decision_id\": \"d1\", \"parameters\": {\"replicas\": 4}, \"comment\": \"\xc3\"}", 400, "", "comment"},
		{"reject: a reason not UTF-8", "verbs-1/reject", tokenAlice, "{\"reason\": \"no \xff\", \"decision_ids\": [\"d1\"]}", 400, "", "reason"},
		{"escalate: a note not UTF-8", "verbs-1/escalate", tokenAlice, "{\"to\": \"U0MORGAN\", \"note\": \"\xff\"}", 400, "", "note"},
		{"defer: guidance too long", "verbs-1/defer", tokenAlice, `{"guidance": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, 400, approval.RuleInvalid, "guidance"},
		{"escalate: a note too long", "verbs-1/escalate", tokenAlice, `{"to": "U0MORGAN", "note": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, 400, approval.RuleInvalid, "note"},
		{"reject: a reason too long", "verbs-1/reject", tokenAlice, `{"reject_reason": "Too expensive", "reason": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "decision_ids": ["d1"]}`, 400, approval.RuleInvalid, "reason"},
	} {
		r := a.send("/v1/requests/"+tc.path, tc.token, tc.body)
		var body apiError
		mustNil(t, json.Unmarshal(r.Body, &body))
		if r.Status != tc.status || body.Rule != tc.rule || body.Error == "" {
			t.Errorf("%s: %d %s, want %d rule %q", tc.name, r.Status, r.Body, tc.status, tc.rule)
		}
		if tc.field != "" && (len(body.Details) != 1 || body.Details[0].Field != tc.field) {
			t.Errorf("%s: details %+v, want field %q", tc.name, body.Details, tc.field)
		}
	}
	if rec, err := e.st.Get(context.Background(), "verbs-1"); err != nil || rec.Status != aah.StatusPending || len(rec.Answers) != 0 {
		t.Fatalf("the refusals changed the request: %+v %v", rec, err)
	}

	// Modify, then escalate by hand to morgan, who defers it.
	r := a.send("/v1/requests/verbs-1/modify", tokenAlice, `{"decision_id": "d1", "parameters": {"replicas": 4}, "comment": "4 is plenty"}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"changed":true`) {
		t.Fatalf("modify: %d %s", r.Status, r.Body)
	}
	r = a.send("/v1/requests/verbs-1/escalate", tokenBob, `{"to": "U0MORGAN", "note": "you own the budget"}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"escalated"`) {
		t.Fatalf("escalate: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/verbs-1/escalate", tokenBob, `{"to": "U0MORGAN", "note": "you own the budget"}`); r.Status != 200 ||
		!strings.Contains(string(r.Body), `"changed":false`) {
		t.Errorf("the same escalation again: %d %s", r.Status, r.Body)
	}
	r = a.send("/v1/requests/verbs-1/defer", tokenBob, `{"guidance": "try a smaller batch"}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"resolved":true`) {
		t.Fatalf("defer: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/verbs-1/abort", tokenAlice, `{"reason": "stop"}`); r.Status != http.StatusConflict {
		t.Errorf("abort after the close: %d %s", r.Status, r.Body)
	}
	rec, err := e.st.Get(context.Background(), "verbs-1")
	mustNil(t, err)
	a1 := rec.Answers["d1"]
	if rec.Status != aah.StatusResolved || rec.Directive == nil || rec.Directive.Verb != aah.VerbDefer || rec.Directive.By.ID != "U0BOB" ||
		len(rec.Reassignments) != 1 || rec.Reassignments[0].To != "U0MORGAN" || a1.Verb != aah.VerbModify || a1.Parameters["replicas"] != 4.0 {
		t.Fatalf("record: %+v", rec)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data aah.ResponseData `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	mustNil(t, json.Unmarshal(rec.Response, &resp))
	data := resp.Content.Body.Data
	if data.Directive == nil || data.Directive.Guidance != "try a smaller batch" || data.Directive.DecidedBy.ID != "U0BOB" {
		t.Errorf("response directive %+v", data.Directive)
	}
	entries, _, err := e.st.VerifiedAudit(context.Background(), "verbs-1")
	mustNil(t, err)
	seen := map[string]bool{}
	for _, en := range entries {
		switch en.Event {
		case "answered", "escalated", "deferred":
			seen[en.Event] = true
			if en.Data["via"] != aah.ViaAPI {
				t.Errorf("%s without via=api: %+v", en.Event, en)
			}
			if en.Event == "escalated" && (en.Data["manual"] != true || en.Data["note"] != "you own the budget") {
				t.Errorf("escalated: %+v", en)
			}
			if en.Event == "answered" && en.Data["verb"] != "modify" {
				t.Errorf("answered: %+v", en)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("audited %v", seen)
	}

	// Reject with a picked reason, and a change of plan on a third request.
	if r := a.send("/v1/requests/verbs-2/reject", tokenAlice, `{"reject_reason": "Too expensive", "decision_ids": ["d1"]}`); r.Status != 200 {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
	if rec, _ := e.st.Get(context.Background(), "verbs-2"); rec.Answers["d1"].RejectReason != "Too expensive" || rec.Answers["d1"].Value != false {
		t.Errorf("verbs-2 d1 = %+v", rec.Answers["d1"])
	}
	if r := a.submit(tokenPM, reviewedSeed(t, "verbs-3", slack, "approve", "reject", "change_plan")); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/verbs-3/change_plan", tokenOther, `{"requirement": "ask finance first"}`); r.Status != 403 {
		t.Errorf("an approver the request does not name: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/verbs-3/change_plan", tokenAlice, `{"requirement": "ask finance first"}`); r.Status != 200 {
		t.Fatalf("change_plan: %d %s", r.Status, r.Body)
	}
	want := "modify human:U0ALICE partial|escalate human:U0BOB escalated|defer human:U0BOB resolved|reject human:U0ALICE partial|change_plan human:U0ALICE resolved"
	if got := strings.Join(decided, "|"); got != want {
		t.Errorf("Decided was told %q, want %q", got, want)
	}
}
