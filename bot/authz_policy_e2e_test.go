package bot_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// refusedAtIntake checks that POSTing body as the pm agent is refused with
// 400, each of fields named in the details (their messages containing the
// matching want), nothing stored, and the refusal audited under rule.
func refusedAtIntake(t *testing.T, h *harness, body []byte, id, rule string, fields map[string]string) {
	t.Helper()
	r := h.post(body)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("POST: %d %s, want 400", r.Status, r.Body)
	}
	details, _ := r.json(t)["details"].([]any)
	for field, want := range fields {
		found := false
		for _, d := range details {
			d := d.(map[string]any)
			found = found || d["field"] == field && strings.Contains(d["message"].(string), want)
		}
		if !found {
			t.Errorf("the 400 does not name %s with %q: %s", field, want, r.Body)
		}
	}
	if _, err := h.store.Get(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused request was stored (%v)", err)
	}
	refusals, err := h.store.IntakeRefusals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(refusals, func(e store.AuditEntry) bool {
		return e.RequestID == id && e.Actor == "agent:pm" && e.Data["rule"] == rule
	}) {
		t.Errorf("no intake_refused audit entry for %s with rule %s: %+v", id, rule, refusals)
	}
	if rep, err := h.store.VerifyAll(context.Background()); err != nil || len(rep.Problems) > 0 {
		t.Errorf("audit does not verify with the refusal in it: %+v %v", rep, err)
	}
}

// The attack: under APPROVAL_QUORUM=2 and no self-approval, an
// agent asks for quorum 1, self-approval and the requester as the only
// reviewer, so the supervised side picks its own supervisor. Refused at
// intake for an agent without the grant; allowed for the granted agent.
func TestRequestCannotLowerTheWorkspacesBar(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) {
		c.ApprovalQuorum, c.AllowSelfApproval, c.RequireReason = 2, false, true
		c.PolicyOverrideAgents = []string{"other"}
	})
	h.startJobs()
	attack := map[string]any{"reviewers": []any{requester.id}, "requested_by": requester.id,
		"quorum": 1, "allow_self_approval": true, "require_reason": false}
	refusedAtIntake(t, h, approvalRequest(t, "attack", attack), "attack", approval.RulePolicyFloor, map[string]string{
		"extensions.slack.quorum":              "1 is below the workspace's APPROVAL_QUORUM=2",
		"extensions.slack.allow_self_approval": "ALLOW_SELF_APPROVAL=false",
		"extensions.slack.require_reason":      "REQUIRE_REASON=true",
	})
	if v := metricValue(t, h.reg, "approvalbot_intake_requests_total", map[string]string{"outcome": "refused"}); v != 1 {
		t.Errorf("refused intakes = %v, want 1", v)
	}

	// Tightening is always allowed.
	tighter := h.postAndWait(approvalRequest(t, "tighter", map[string]any{
		"reviewers": []any{alice.id, bob.id, morgan.id}, "quorum": 3, "require_reason": true}))
	for _, u := range []slackUser{alice, bob} {
		ok(t, h.click(u, tighter, "ship", button(blocks.ActionApprove, "true")))
	}
	if rec := answersOf(t, h, tighter); !rec.Status.Open() {
		t.Errorf("2 of 3 approvals resolved the request: %s", rec.Status)
	}

	// The granted agent may loosen the rules: its requester approves alone.
	r := h.do(http.MethodPost, "/v1/requests", tokenOther, "application/json", approvalRequest(t, "granted", attack))
	if r.Status != http.StatusAccepted {
		t.Fatalf("granted agent: POST %d %s", r.Status, r.Body)
	}
	waitPosted(t, h, "granted")
	ok(t, h.click(requester, "granted", "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, h, "granted"); rec.Status != "resolved" || rec.Answers["ship"].By.ID != requester.id {
		t.Errorf("granted self-approval: %s %+v", rec.Status, rec.Answers["ship"])
	}
}

// The effective rules are worked out when a person acts, from the settings
// in force then: a request accepted under looser settings gains nothing
// from them once the workspace tightens.
func TestWorkspaceFloorAppliesAtDecisionTime(t *testing.T) {
	t.Parallel()
	before := newHarness(t, func(c *configT, _ *depsT) { c.AllowSelfApproval = true })
	stop := before.startJobs()
	id := before.postAndWait(approvalRequest(t, "accepted-lax", map[string]any{
		"reviewers": []any{requester.id, alice.id, bob.id}, "requested_by": requester.id, "allow_self_approval": true}))
	stop()

	after := newHarnessOn(t, before.rdb, before.prefix, before.emu, func(c *configT, _ *depsT) {
		c.ApprovalQuorum, c.AllowSelfApproval = 2, false
	})
	after.startJobs()
	ok(t, after.click(requester, id, "ship", button(blocks.ActionApprove, "true")))
	refusedWith(t, after, id, requester, "someone else has to make it", "self_approval")
	ok(t, after.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, after, id); !rec.Status.Open() {
		t.Fatalf("one approval under APPROVAL_QUORUM=2 closed the request: %s", rec.Status)
	}
	ok(t, after.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, after, id); rec.Status != "resolved" || len(rec.Answers["ship"].Signoffs) != 2 {
		t.Errorf("after two approvals: %s %+v", rec.Status, rec.Answers["ship"])
	}
}

// Nobody named never means anyone. With nobody configured for requests
// that name nobody, they are refused at intake; with admins only, only the
// admins decide them; named requests are unaffected.
func TestUnnamedRequestNeedsSomeoneToDecide(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) { c.DefaultReviewers = nil })
	h.startJobs()
	refusedAtIntake(t, h, approvalRequest(t, "unnamed", map[string]any{}), "unnamed", approval.RuleNoDeciders, map[string]string{
		"extensions.slack.reviewers": "ask the operator to set DEFAULT_REVIEWERS"})
	h.postAndWait(approvalRequest(t, "named", map[string]any{"reviewers": []any{alice.id}}))

	admins := newHarness(t, func(c *configT, _ *depsT) { c.DefaultReviewers, c.AdminUsers = nil, []string{morgan.id} })
	admins.startJobs()
	id := admins.postAndWait(approvalRequest(t, "unnamed-admins", map[string]any{}))
	for _, u := range []slackUser{mallory, alice} {
		ok(t, admins.click(u, id, "ship", button(blocks.ActionApprove, "true")))
		refusedWith(t, admins, id, u, "This request names no reviewers", "reviewer")
	}
	ok(t, admins.click(morgan, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, admins, id); rec.Status != "resolved" || rec.Answers["ship"].By.ID != morgan.id {
		t.Errorf("admin's approval: %s %+v", rec.Status, rec.Answers["ship"])
	}
}

// Local mode (no configuration) gives requests that name nobody to the
// sandbox workspace's reviewers, Alice and Bob: the README's example works,
// and Mallory and the requester are refused there as in production.
func TestLocalModeUnnamedRequestsGoToTheSandboxReviewers(t *testing.T) {
	clearEnv(t)
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.DefaultReviewers, []string{slackemu.UserAlice, slackemu.UserBob}) || !cfg.Policy().DecidesUnnamed() {
		t.Fatalf("local mode DEFAULT_REVIEWERS = %v, want Alice and Bob", cfg.DefaultReviewers)
	}
	h := newHarness(t, func(c *configT, _ *depsT) {
		c.DefaultReviewers, c.DefaultReviewerGroups, c.AdminUsers = cfg.DefaultReviewers, cfg.DefaultReviewerGroups, cfg.AdminUsers
	})
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "local-unnamed", map[string]any{"requested_by": requester.id}))
	for _, u := range []slackUser{mallory, requester} {
		ok(t, h.click(u, id, "ship", button(blocks.ActionApprove, "true")))
	}
	refusedWith(t, h, id, mallory, "This request names no reviewers", "reviewer")
	refusedWith(t, h, id, requester, "This request names no reviewers", "reviewer")
	ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, h, id); rec.Status != "resolved" || rec.Answers["ship"].By.ID != bob.id {
		t.Errorf("Bob's approval: %s %+v", rec.Status, rec.Answers["ship"])
	}

	// A sandbox workspace of one's own assumes nobody; DEFAULT_REVIEWERS set
	// by the operator is kept as it is.
	clearEnv(t)
	t.Setenv("SANDBOX_WORKSPACE", "workspace.json")
	if cfg, err := bot.LoadConfig(); err != nil || len(cfg.DefaultReviewers) != 0 {
		t.Errorf("with SANDBOX_WORKSPACE: DEFAULT_REVIEWERS = %v (%v), want none", cfg.DefaultReviewers, err)
	}
	clearEnv(t)
	t.Setenv("DEFAULT_REVIEWER_GROUPS", slackemu.UserGroupLeads)
	if cfg, err := bot.LoadConfig(); err != nil || len(cfg.DefaultReviewers) != 0 {
		t.Errorf("with DEFAULT_REVIEWER_GROUPS: DEFAULT_REVIEWERS = %v (%v), want none", cfg.DefaultReviewers, err)
	}
}

// POLICY_OVERRIDE_AGENTS names agents that exist: a typo must not silently
// grant nobody (or, worse, be read as someone else).
func TestPolicyOverrideAgentsMustBeKnown(t *testing.T) {
	clearEnv(t)
	t.Setenv("POLICY_OVERRIDE_AGENTS", "planer")
	t.Setenv("INTAKE_TOKENS", "planner:0123456789abcdef0123")
	if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), `POLICY_OVERRIDE_AGENTS must list agents named in INTAKE_TOKENS, got "planer"`) {
		t.Errorf("unknown override agent: %v", err)
	}
	t.Setenv("POLICY_OVERRIDE_AGENTS", "planner")
	if cfg, err := bot.LoadConfig(); err != nil || !slices.Equal(cfg.Policy().Defaults.OverrideAgents, []string{"planner"}) {
		t.Errorf("known override agent: %v %v", cfg.Policy().Defaults, err)
	}
	// Local mode without tokens: the anonymous agent may be granted.
	clearEnv(t)
	t.Setenv("POLICY_OVERRIDE_AGENTS", webhook.AnonymousAgent)
	if _, err := bot.LoadConfig(); err != nil {
		t.Errorf("anonymous agent in local mode: %v", err)
	}
}

// waitPosted waits (polling the store, as postAndWait does) until the
// request's message is posted.
func waitPosted(t *testing.T, h *harness, id string) {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for {
		if rec, err := h.store.Get(ctx, id); err == nil && rec.Posted() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("request %s was not posted", id)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
