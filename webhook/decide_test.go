package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/prometheus/client_golang/prometheus"
)

// Reviewer tokens of the decision tests.
const (
	tokenAlice = "alice-token-0123456789abcdef"
	tokenBob   = "bob-token-0123456789abcdef"
	tokenCarol = "carol-token-0123456789abcdef" // named by no request
	tokenRiley = "riley-token-0123456789abcdef" // the requester
)

// decisionAPI is an API over a Core whose decision endpoints accept the
// reviewer tokens; agent "other" may decide as U0CHECK, and "pm" (which
// sends the requests) as U0ALICE.
func (e *env) decisionAPI(decided *[]string, reg *prometheus.Registry) *api {
	e.t.Helper()
	reviewers, err := webhook.ParseReviewerTokens("U0ALICE:" + tokenAlice + ",U0BOB:" + tokenBob +
		",U0CAROL:" + tokenCarol + ",U0RILEY:" + tokenRiley)
	mustNil(e.t, err)
	approvers, err := webhook.ParseAgentApprovers([]string{"other:U0CHECK", "pm:U0ALICE"})
	mustNil(e.t, err)
	core := approval.New(e.st, approval.Options{Now: e.now})
	return e.api(func(o *webhook.Options) {
		o.Lifecycle, o.Decisions, o.Reviewers, o.AgentApprovers = core, core, reviewers, approvers
		o.Names = names{}
		o.Metrics = webhook.NewMetrics(reg)
		o.Now = func() time.Time { return seedAt }
		o.Decided = func(action string, by aah.Person, rec store.Record) {
			*decided = append(*decided, action+" "+by.AgentID()+" "+string(rec.Status))
		}
	})
}

// names knows Alice's name and fails for everyone else.
type names struct{}

func (names) UserName(_ context.Context, id string) (string, error) {
	if id == "U0ALICE" {
		return "Alice Reviewer", nil
	}
	return "", errors.New("users.info: user_not_found")
}

// send is a POST with a JSON body as token.
func (a *api) send(path, token, body string) response {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+path, bytes.NewReader([]byte(body)))
	mustNil(a.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(req)
	mustNil(a.t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{Status: resp.StatusCode, Body: b.Bytes()}
}

// A request decided through the API: GET shows each answer while it is
// open (who, what, when, comments); every refusal is the Core's, with the
// status its kind calls for, and changes nothing but the audit.
func TestDecideThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var decided []string
	reg := prometheus.NewRegistry()
	a := e.decisionAPI(&decided, reg)
	slack := map[string]any{"reviewers": []any{"U0ALICE", "U0BOB", "U0CHECK", "U0RILEY"}, "requested_by": "U0RILEY"}
	if r := a.submit(tokenPM, seedWith(t, "dec-1", slack)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	status, answers := a.progress("dec-1")
	if status != aah.StatusPending || len(answers) != 4 || *answers["d1"].Answered {
		t.Fatalf("before any answer: %s %+v", status, answers)
	}

	r := a.send("/v1/requests/dec-1/answers", tokenAlice, `{"answers": {"d1": true}}`)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"changed":true,"resolved":false`) {
		t.Fatalf("alice's answer: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), `"callback"`) {
		t.Errorf("a reviewer sees the agent's callback: %s", r.Body)
	}
	r = a.send("/v1/requests/dec-1/comments", tokenBob, `{"decision_id": "d2", "text": "Check the LinkedIn share"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("bob's comment: %d %s", r.Status, r.Body)
	}
	r = a.send("/v1/requests/dec-1/answers", tokenOther, `{"answers": {"d3": "immediate"}, "comment": "the sooner the better"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("agent approver's answer: %d %s", r.Status, r.Body)
	}
	status, answers = a.progress("dec-1")
	d1, d2, d3 := answers["d1"], answers["d2"], answers["d3"]
	switch {
	case status != aah.StatusPartial:
		t.Errorf("status %s, want partial", status)
	case d1.Approved == nil || !*d1.Approved || d1.DecidedBy == nil || d1.DecidedBy.ID != "U0ALICE" ||
		d1.DecidedBy.Name != "Alice Reviewer" || d1.DecidedBy.Via != aah.ViaAPI || d1.DecidedAt.IsZero():
		t.Errorf("d1 = %+v", d1)
	case d2.Answered == nil || *d2.Answered || len(d2.Comments) != 1 || d2.Comments[0].By != "human:U0BOB" ||
		d2.Comments[0].ByName != "U0BOB" || // no name known: the id, as in the response
		d2.Comments[0].Text != "Check the LinkedIn share":
		t.Errorf("d2 = %+v", d2)
	case d3.Selected != "immediate" || d3.DecidedBy == nil || d3.DecidedBy.Agent != "other" || d3.DecidedBy.ID != "U0CHECK" ||
		d3.Comment == nil || *d3.Comment != "the sooner the better":
		t.Errorf("d3 = %+v", d3)
	}

	before, err := e.st.Get(context.Background(), "dec-1")
	mustNil(t, err)
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		rule, field             string
	}{
		{"no token", "answers", "", `{"answers": {"d2": true}}`, 401, "", ""},
		{"an unknown token", "answers", "not-a-token-0123456789", `{"answers": {"d2": true}}`, 401, "", ""},
		{"a token one character off", "answers", tokenAlice + "x", `{"answers": {"d2": true}}`, 401, "", ""},
		{"a reviewer the request does not name", "answers", tokenCarol, `{"answers": {"d2": true}}`, 403, approval.RuleReviewer, ""},
		{"the requester", "answers", tokenRiley, `{"answers": {"d2": true}}`, 403, approval.RuleSelfApproval, ""},
		{"the agent that sent it", "answers", tokenPM, `{"answers": {"d2": true}}`, 403, approval.RuleSelfApproval, ""},
		{"an unknown decision", "answers", tokenAlice, `{"answers": {"d9": true}}`, 404, approval.RuleInvalid, "decision_id"},
		{"a value the decision does not take", "answers", tokenAlice, `{"answers": {"d3": "never"}}`, 400, approval.RuleInvalid, "answers"},
		{"an approval that is not a boolean", "answers", tokenAlice, `{"answers": {"d2": "yes"}}`, 400, approval.RuleInvalid, "answers"},
		{"a comment on two answers", "answers", tokenAlice, `{"answers": {"d2": true, "d4": true}, "comment": "x"}`, 400, "", "comment"},
		{"no answers", "answers", tokenAlice, `{}`, 400, "", "answers"},
		{"an unknown field", "answers", tokenAlice, `{"answer": {"d2": true}}`, 400, "", "body"},
		{"a comment on an unknown decision", "comments", tokenAlice, `{"decision_id": "d9", "text": "x"}`, 404, approval.RuleInvalid, "decision_id"},
		{"a comment without its decision", "comments", tokenAlice, `{"text": "x"}`, 400, "", "decision_id"},
		{"a rejection without a reason", "reject", tokenAlice, `{"decision_ids": ["d2"]}`, 400, "", "reason"},
		{"submit before every required answer", "submit", tokenAlice, ``, 409, approval.RuleInvalid, ""},
	} {
		r := a.send("/v1/requests/dec-1/"+tc.path, tc.token, tc.body)
		var body struct {
			Error   string           `json:"error"`
			Rule    string           `json:"rule"`
			Details []aah.FieldError `json:"details"`
		}
		mustNil(t, json.Unmarshal(r.Body, &body))
		if r.Status != tc.status || body.Rule != tc.rule || body.Error == "" {
			t.Errorf("%s: %d %s, want %d rule %q", tc.name, r.Status, r.Body, tc.status, tc.rule)
		}
		if tc.field != "" && (len(body.Details) != 1 || body.Details[0].Field != tc.field) {
			t.Errorf("%s: details %+v, want field %q", tc.name, body.Details, tc.field)
		}
	}
	after, err := e.st.Get(context.Background(), "dec-1")
	mustNil(t, err)
	if after.Version != before.Version || after.Status != before.Status || len(after.Answers) != len(before.Answers) {
		t.Errorf("a refusal changed the request: version %d -> %d", before.Version, after.Version)
	}
	plain := e.api(func(o *webhook.Options) { o.Decisions = approval.New(e.st, approval.Options{Now: e.now}) })
	if r := plain.send("/v1/requests/dec-1/answers", tokenOther, `{"answers": {"d2": true}}`); r.Status != 403 ||
		!strings.Contains(string(r.Body), "AGENT_APPROVERS") {
		t.Errorf("an agent without a grant: %d %s", r.Status, r.Body)
	}
	// Local mode's anonymous agent: a token nobody has is 401, not that agent.
	anon := e.api(func(o *webhook.Options) {
		o.Tokens, o.AllowAnonymous = webhook.Tokens{}, true
		o.Decisions = approval.New(e.st, approval.Options{Now: e.now})
		rv, err := webhook.ParseReviewerTokens("U0ALICE:" + tokenAlice)
		mustNil(t, err)
		o.Reviewers = rv
	})
	if r := anon.send("/v1/requests/dec-1/answers", tokenAlice+"x", `{"answers": {"d2": true}}`); r.Status != 401 {
		t.Errorf("local mode, an unknown token: %d %s", r.Status, r.Body)
	}
	if r := anon.send("/v1/requests/dec-1/answers", "", `{"answers": {"d2": true}}`); r.Status != 403 ||
		!strings.Contains(string(r.Body), `agent \"local\" may not decide`) {
		t.Errorf("local mode, no token: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/nope/answers", tokenAlice, `{"answers": {"d1": true}}`); r.Status != 404 {
		t.Errorf("unknown request: %d %s", r.Status, r.Body)
	}

	// The same answer again changes nothing; then the request resolves.
	if r := a.send("/v1/requests/dec-1/answers", tokenAlice, `{"answers": {"d1": true}}`); !strings.Contains(string(r.Body), `"changed":false`) {
		t.Errorf("a repeated answer: %d %s", r.Status, r.Body)
	}
	if r := a.send("/v1/requests/dec-1/reject", tokenBob, `{"reason": "Too much on LinkedIn", "decision_ids": ["d2"]}`); r.Status != 200 {
		t.Fatalf("bob's rejection: %d %s", r.Status, r.Body)
	}
	r = a.send("/v1/requests/dec-1/submit", tokenAlice, `{}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"resolved":true`) {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	r = a.send("/v1/requests/dec-1/answers", tokenBob, `{"answers": {"d4": false}}`)
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "already resolved; nothing was changed") {
		t.Errorf("an answer after resolution: %d %s", r.Status, r.Body)
	}

	entries, _, err := e.st.VerifiedAudit(context.Background(), "dec-1")
	mustNil(t, err)
	refused, agentAnswered := 0, false
	for _, en := range entries {
		switch {
		case en.Event == "click_refused":
			refused++
			if en.Data["via"] != aah.ViaAPI {
				t.Errorf("a refusal without via=api: %+v", en)
			}
		case en.Event == "answered" && en.Actor == "agent:other":
			agentAnswered = en.Data["agent"] == "other" && en.Data["user"] == "U0CHECK" && en.Data["via"] == aah.ViaAPI
		}
	}
	// Refused by the Core: carol, riley, pm, d9, d3, d2, the comment on d9,
	// submit, and the answer after resolution.
	if refused != 9 {
		t.Errorf("%d click_refused entries, want 9", refused)
	}
	if !agentAnswered {
		t.Errorf("the agent's answer is not audited as the agent: %+v", entries)
	}
	for _, m := range []struct {
		action, result string
		want           float64
	}{{"answer", "recorded", 2}, {"answer", "unchanged", 1}, {"answer", "refused", 7}, {"answer", "unauthorized", 3},
		{"answer", "invalid", 3}, {"answer", "not_found", 1}, {"submit", "recorded", 1}, {"reject", "invalid", 1}} {
		if got := metricValue(t, reg, "approvalbot_api_decisions_total", map[string]string{"action": m.action, "result": m.result}); got != m.want {
			t.Errorf("api_decisions_total{%s,%s} = %v, want %v", m.action, m.result, got, m.want)
		}
	}
	want := []string{"answer human:U0ALICE partial", "comment human:U0BOB partial", "answer agent:other partial",
		"reject human:U0BOB partial", "submit human:U0ALICE resolved"}
	if strings.Join(decided, "|") != strings.Join(want, "|") {
		t.Errorf("Decided was told %q, want %q", decided, want)
	}
}

// INTAKE_TOKENS errors name the entry by its position, never quoting a part
// that may be the token: an entry missing its ':' (or with '=' instead), or
// written token:name, would have printed it into the start-up log.
func TestIntakeTokenErrorsNeverQuoteAToken(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		tokenAlice: "entry 1 is not name:token",
		"pm:" + tokenPM + ",planner=" + tokenAlice: "entry 2 is not name:token",
		tokenAlice + ":planner":                    "entry 1: its token is shorter than 16 characters",
		"pm:" + tokenPM + ",pm:" + tokenAlice:      `agent "pm" is listed twice`,
		"bad name:" + tokenAlice:                   "entry 1: the agent name must be",
	} {
		_, err := webhook.ParseTokens(spec)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), tokenAlice) {
			t.Errorf("%q: %v, want %q and no token", strings.ReplaceAll(spec, tokenAlice, "<token>"), err, want)
		}
	}
}

// Configuration errors name the setting and never quote a token.
func TestReviewerTokensAndApprovers(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"U0ALICE":               "not <Slack user id>:<token>",
		"alice:" + tokenAlice:   "entry 1 does not start with a Slack user id",
		tokenAlice + ":U0ALICE": "entry 1 does not start with a Slack user id", // the other way round
		"U0ALICE=" + tokenAlice: "entry 1 is not <Slack user id>:<token>",
		"U0ALICE:short":         "shorter than 16",
		"U0ALICE:" + tokenAlice + ",U0BOB:" + tokenAlice: "listed twice",
	} {
		_, err := webhook.ParseReviewerTokens(spec)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), tokenAlice) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
	rv, err := webhook.ParseReviewerTokens(" U0ALICE:" + tokenAlice + " , W0BOB:" + tokenBob)
	if err != nil || rv.Len() != 2 {
		t.Errorf("valid spec: %d %v", rv.Len(), err)
	}
	tokens, _ := webhook.ParseTokens("pm:" + tokenAlice)
	if !rv.SharesTokenWith(tokens) {
		t.Error("a token shared with INTAKE_TOKENS is not noticed")
	}
	for _, entries := range [][]string{{"pm"}, {"pm:alice"}, {"pm:U0A", "pm:U0B"}, {"bad name:U0A"}} {
		if _, err := webhook.ParseAgentApprovers(entries); err == nil || !strings.Contains(err.Error(), "AGENT_APPROVERS") {
			t.Errorf("%q: %v", entries, err)
		}
	}
}
