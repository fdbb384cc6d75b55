package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

const tokenAdmin = "admin-token-0123456789abcdef"

// grantAPI is an API whose core grants standing approvals (up to an hour)
// and whose agents may hold maxOpen open requests each (0: no cap). Its
// matching of new requests against them has a minute, not the default
// half second after which a request is posted as usual: the tests expect
// every match to finish, on however busy a machine.
func (e *env) grantAPI(maxOpen int) *api {
	e.t.Helper()
	reviewers, err := webhook.ParseReviewerTokens("U0ALICE:" + tokenAlice + ",U0BOB:" + tokenBob +
		",U0CAROL:" + tokenCarol + ",U0ADMIN:" + tokenAdmin)
	mustNil(e.t, err)
	approvers, err := webhook.ParseAgentApprovers([]string{"other:U0ALICE"})
	mustNil(e.t, err)
	core := approval.New(e.st, approval.Options{Now: e.now, Policy: approval.Policy{Admins: []string{"U0ADMIN"}},
		Grants: approval.StandingApprovals{Store: e.st, Max: time.Hour, LookupBudget: time.Minute}})
	return e.api(func(o *webhook.Options) {
		o.Lifecycle, o.Decisions, o.Reviewers, o.AgentApprovers = core, core, reviewers, approvers
		o.Limits = webhook.Limits{MaxOpen: maxOpen}
	})
}

// scaleRequest is a request of one approval decision "scale" whose action
// is scale_service, reviewed by Alice and Bob.
func scaleRequest(t *testing.T, id string) []byte {
	t.Helper()
	doc := map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": id, "type": "decision/request", "title": "Scale " + id, "created_at": "2026-02-16T09:00:00Z"},
		"source":      map[string]any{"agent_id": "deployer"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"decisions": []any{map[string]any{"id": "scale", "type": "approval", "prompt": "Scale api to 6?", "required": true}}}}},
		"handoff": map[string]any{"expects_response": false},
		"extensions": map[string]any{"slack": map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}},
			"decisions": map[string]any{"scale": map[string]any{"proposed_action": map[string]any{
				"tool_name": "scale_service", "parameters": map[string]any{"replicas": 6}, "reversible": true}}}},
	}
	out, err := json.Marshal(doc)
	mustNil(t, err)
	return out
}

func (a *api) statusOf(id string) string {
	a.t.Helper()
	r := a.do(http.MethodGet, "/v1/requests/"+id, tokenPM)
	if r.Status != http.StatusOK {
		a.t.Fatalf("GET %s = %d %s", id, r.Status, r.Body)
	}
	return r.json(a.t)["status"].(string)
}

// Granting through the API: every bad body is a 400 naming the field,
// who may not grant is a 403; a grant answers with the approval and the
// grant; GET /v1/grants shows it to its agent and to reviewers; the
// agent's next requests resolve at once (and free their open slot, or the
// cap of 2 would refuse the third); DELETE revokes it for its granter or
// an admin only, and later requests are pending.
func TestGrantsThroughTheAPI(t *testing.T) {
	t.Parallel()
	a := newEnv(t).grantAPI(2)
	if r := a.submit(tokenPM, scaleRequest(t, "origin-1")); r.Status != http.StatusAccepted {
		t.Fatalf("intake = %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name, token, body string
		status            int
		field, rule       string
	}{
		{"no duration", tokenAlice, `{"decision_id":"scale"}`, 400, "duration", ""},
		{"not a duration", tokenAlice, `{"decision_id":"scale","duration":"soon"}`, 400, "duration", ""},
		{"over the maximum", tokenAlice, `{"decision_id":"scale","duration":"2h"}`, 400, "duration", approval.RuleInvalid},
		{"negative", tokenAlice, `{"decision_id":"scale","duration":"-5m"}`, 400, "duration", approval.RuleInvalid},
		{"zero", tokenAlice, `{"decision_id":"scale","duration":"0s"}`, 400, "duration", approval.RuleInvalid},
		{"under a millisecond", tokenAlice, `{"decision_id":"scale","duration":"500us"}`, 400, "duration", approval.RuleInvalid},
		{"a second", tokenAlice, `{"decision_id":"scale","duration":"1s"}`, 400, "duration", approval.RuleInvalid},
		{"no decision", tokenAlice, `{"duration":"1h"}`, 400, "decision_id", ""},
		{"an unknown field", tokenAlice, `{"decision_id":"scale","duration":"1h","forever":true}`, 400, "", ""},
		{"an unknown decision", tokenAlice, `{"decision_id":"nope","duration":"1h"}`, 404, "", approval.RuleInvalid},
		{"not a reviewer of it", tokenCarol, `{"decision_id":"scale","duration":"1h"}`, 403, "", approval.RuleReviewer},
		{"an agent approver", tokenOther, `{"decision_id":"scale","duration":"1h"}`, 403, "", approval.RuleGranter},
		{"no token", "", `{"decision_id":"scale","duration":"1h"}`, 401, "", ""},
	} {
		r := a.send("/v1/requests/origin-1/grant", tc.token, tc.body)
		body := r.json(t)
		if r.Status != tc.status || (tc.rule != "" && body["rule"] != tc.rule) {
			t.Errorf("%s: %d %s; want %d rule %q", tc.name, r.Status, r.Body, tc.status, tc.rule)
			continue
		}
		if tc.field != "" {
			if details, _ := body["details"].([]any); len(details) == 0 || details[0].(map[string]any)["field"] != tc.field {
				t.Errorf("%s: details %v; want field %s", tc.name, body["details"], tc.field)
			}
		}
	}
	if got := a.statusOf("origin-1"); got != "pending" {
		t.Fatalf("origin after refusals: %s", got)
	}

	r := a.send("/v1/requests/origin-1/grant", tokenAlice, `{"decision_id":"scale","duration":"30m","comment":"launch day"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("grant = %d %s", r.Status, r.Body)
	}
	var granted struct {
		Changed, Resolved bool
		Request           struct{ Status string }
		Grant             struct {
			ID, Agent string
			ActionKey string `json:"action_key"`
			By        struct{ ID string }
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	mustNil(t, json.Unmarshal(r.Body, &granted))
	g := granted.Grant
	if !granted.Resolved || granted.Request.Status != "resolved" || g.ID == "" || g.By.ID != "U0ALICE" || g.ExpiresAt.IsZero() ||
		g.Agent != "pm" || g.ActionKey != "scale_service" {
		t.Fatalf("grant answer = %s", r.Body)
	}

	listed := func(token string) []string {
		t.Helper()
		r := a.do(http.MethodGet, "/v1/grants", token)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/grants = %d %s", r.Status, r.Body)
		}
		var v struct{ Grants []struct{ ID string } }
		mustNil(t, json.Unmarshal(r.Body, &v))
		var ids []string
		for _, g := range v.Grants {
			ids = append(ids, g.ID)
		}
		return ids
	}
	if got := listed(tokenPM); fmt.Sprint(got) != fmt.Sprint([]string{g.ID}) {
		t.Errorf("the agent's grants = %v", got)
	}
	if got := listed(tokenOther); len(got) != 0 {
		t.Errorf("another agent's grants = %v; want none", got)
	}
	if got := listed(tokenBob); fmt.Sprint(got) != fmt.Sprint([]string{g.ID}) {
		t.Errorf("a reviewer's view = %v", got)
	}
	if r := a.do(http.MethodGet, "/v1/grants", "nobody-token-0123456789"); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /v1/grants with a bad token = %d", r.Status)
	}

	// Five requests in a row under a cap of 2 open: each resolved at once.
	for i := range 5 {
		id := fmt.Sprintf("next-%d", i)
		r := a.submit(tokenPM, scaleRequest(t, id))
		if r.Status != http.StatusAccepted || r.json(t)["status"] != "resolved" {
			t.Fatalf("intake %s = %d %s; want 202 resolved", id, r.Status, r.Body)
		}
	}

	for _, tc := range []struct {
		name, id, token string
		status          int
	}{
		{"another reviewer", g.ID, tokenBob, 403},
		{"an agent", g.ID, tokenPM, 403},
		{"an unknown grant", "grant_nope", tokenAlice, 404},
		{"no token", g.ID, "", 401},
	} {
		if r := a.do(http.MethodDelete, "/v1/grants/"+tc.id, tc.token); r.Status != tc.status {
			t.Errorf("DELETE by %s = %d %s; want %d", tc.name, r.Status, r.Body, tc.status)
		}
	}
	r = a.do(http.MethodDelete, "/v1/grants/"+g.ID, tokenAdmin)
	if r.Status != http.StatusOK || r.json(t)["revoked_at"] == nil {
		t.Fatalf("DELETE by an admin = %d %s", r.Status, r.Body)
	}
	if got := listed(tokenPM); len(got) != 0 {
		t.Errorf("grants after the revoke = %v", got)
	}
	if r := a.submit(tokenPM, scaleRequest(t, "after")); r.json(t)["status"] != "pending" {
		t.Errorf("after the revoke: %s; want pending", r.Body)
	}
}

// 30 parallel intakes race DELETE /v1/grants/{id}: what is submitted
// after the DELETE answered is pending; what was answered before it was
// sent was resolved by the grant.
func TestGrantRevokeRacesIntakesOverHTTP(t *testing.T) {
	t.Parallel()
	a := newEnv(t).grantAPI(0) // no cap: the pending ones would fill it
	a.submit(tokenPM, scaleRequest(t, "origin-1"))
	r := a.send("/v1/requests/origin-1/grant", tokenAlice, `{"decision_id":"scale","duration":"1h"}`)
	var v struct{ Grant struct{ ID string } }
	mustNil(t, json.Unmarshal(r.Body, &v))
	if v.Grant.ID == "" {
		t.Fatalf("grant = %d %s", r.Status, r.Body)
	}
	const workers, each = 30, 2
	var sent, answered atomic.Bool
	revokeNow, revoked := make(chan struct{}), make(chan struct{})
	var done atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var before, after int
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each + 1 {
				if k == each {
					<-revoked
				}
				afterRevoke := answered.Load()
				r, _ := a.post(tokenPM, scaleRequest(t, fmt.Sprintf("race-%d-%d", w, k)))
				beforeRevoke := !sent.Load()
				status, _ := r.json(t)["status"].(string)
				mu.Lock()
				switch {
				case r.Status != http.StatusAccepted:
					t.Errorf("intake = %d %s", r.Status, r.Body)
				case afterRevoke && status != "pending":
					t.Errorf("submitted after the revoke answered: %s", r.Body)
				case beforeRevoke && status != "resolved":
					t.Errorf("answered before the revoke was sent: %s", r.Body)
				}
				if afterRevoke {
					after++
				}
				if beforeRevoke {
					before++
				}
				mu.Unlock()
				if done.Add(1) == workers {
					close(revokeNow)
				}
			}
		}()
	}
	<-revokeNow
	sent.Store(true)
	rev, err := a.doErr(context.Background(), http.MethodDelete, "/v1/grants/"+v.Grant.ID, tokenAdmin)
	answered.Store(true)
	close(revoked)
	wg.Wait()
	if err != nil || rev.Status != http.StatusOK {
		t.Fatalf("DELETE = %d %s, %v", rev.Status, rev.Body, err)
	}
	if before == 0 || after == 0 {
		t.Errorf("%d intakes before the revoke, %d after; want both", before, after)
	}
}

// failingGrants is the store, whose grants cannot be created.
type failingGrants struct{ *store.Store }

func (failingGrants) CreateGrant(context.Context, store.NewGrant) (store.Grant, error) {
	return store.Grant{}, errors.New("boom")
}

// A grant that fails once the approval is recorded answers an error that
// says the decision was approved (it was), not that nothing changed.
func TestGrantFailingAfterTheApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reviewers, err := webhook.ParseReviewerTokens("U0ALICE:" + tokenAlice)
	mustNil(t, err)
	core := approval.New(e.st, approval.Options{Now: e.now,
		Grants: approval.StandingApprovals{Store: failingGrants{e.st}, Max: time.Hour}})
	a := e.api(func(o *webhook.Options) { o.Lifecycle, o.Decisions, o.Reviewers = core, core, reviewers })
	if r := a.submit(tokenPM, scaleRequest(t, "origin-1")); r.Status != http.StatusAccepted {
		t.Fatalf("intake = %d %s", r.Status, r.Body)
	}
	r := a.send("/v1/requests/origin-1/grant", tokenAlice, `{"decision_id":"scale","duration":"1h"}`)
	if r.Status != http.StatusInternalServerError || !strings.Contains(string(r.Body), "the decision was approved") {
		t.Errorf("grant = %d %s; want 500 saying the decision was approved", r.Status, r.Body)
	}
	if rec, err := e.st.Get(context.Background(), "origin-1"); err != nil || rec.Status != aah.StatusResolved {
		t.Errorf("origin: %s, %v; want resolved (the approval stands)", rec.Status, err)
	}
}
