package aah_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

const slackPath = "extensions.slack"

func TestAuthorizationFieldsParse(t *testing.T) {
	t.Parallel()
	raw := mutated(t, set(slackPath, js(`{
		"reviewers": ["U0ALICE", "bob@example.com"],
		"reviewer_groups": ["S0LEADS"],
		"required_roles": [
			{"role": "legal", "members": ["U0LEGAL", "S0LAWYERS"]},
			{"role": "marketing", "members": ["mia@example.com"]}
		],
		"quorum": 2,
		"allow_self_approval": true,
		"require_reason": true,
		"requested_by": "riley@example.com"
	}`)))
	req := mustParse(t, raw, aah.ParseOptions{Now: seedNow})
	h := req.Slack
	if !reflect.DeepEqual(h.ReviewerGroups, []string{"S0LEADS"}) || h.Quorum != 2 || h.RequestedBy != "riley@example.com" {
		t.Errorf("hints = %+v", h)
	}
	want := []aah.Role{{Name: "legal", Members: []string{"U0LEGAL", "S0LAWYERS"}}, {Name: "marketing", Members: []string{"mia@example.com"}}}
	if !reflect.DeepEqual(h.RequiredRoles, want) {
		t.Errorf("roles = %+v, want %+v", h.RequiredRoles, want)
	}
	rules := req.Rules(aah.Defaults{AllowSelfApproval: true})
	if rules.Quorum != 2 || !rules.AllowSelfApproval || !rules.RequireReason || !rules.Gated() {
		t.Errorf("rules = %+v", rules)
	}
}

func TestAuthorizationFieldsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		slack string
		want  []problem
	}{
		{"group id", `{"reviewer_groups": ["leads", "S0A", "S0A"]}`, []problem{
			{slackPath + ".reviewer_groups[0]", "user group id (S…)"},
			{slackPath + ".reviewer_groups[2]", "twice"}}},
		{"quorum range", `{"quorum": 0}`, []problem{{slackPath + ".quorum", "from 1 to 20"}}},
		{"quorum fraction", `{"quorum": 1.5}`, []problem{{slackPath + ".quorum", "whole number"}}},
		{"quorum above named people", `{"reviewers": ["U0ALICE", "U0BOB"], "quorum": 4}`, []problem{
			{slackPath + ".quorum", "needs 4 approvers, but the request names only 3"}}}, // + manager@example.com (escalation)
		{"role shape", `{"required_roles": [{"role": "", "members": []}, {"role": "legal"}, "x"]}`, []problem{
			{slackPath + ".required_roles[0].role", "must not be empty"},
			{slackPath + ".required_roles[0].members", "at least one member"},
			{slackPath + ".required_roles[1].members", "is required"},
			{slackPath + ".required_roles[2]", "must be an object"}}},
		{"role members", `{"required_roles": [{"role": "legal", "members": ["legal-team", "U0A", "U0A"]}, {"role": "legal", "members": ["U0B"]}]}`, []problem{
			{slackPath + ".required_roles[0].members[0]", "user group id (S…)"},
			{slackPath + ".required_roles[0].members[2]", "twice"},
			{slackPath + ".required_roles[1].role", "twice"}}},
		{"flags", `{"allow_self_approval": "no", "require_reason": 1, "requested_by": "riley"}`, []problem{
			{slackPath + ".allow_self_approval", "true or false"},
			{slackPath + ".require_reason", "true or false"},
			{slackPath + ".requested_by", "user id"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := mutated(t, set(slackPath, js(tc.slack)))
			matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}), tc.want)
		})
	}
}

// Quorum and roles gate approval decisions; a request without one cannot
// use them.
func TestQuorumNeedsAnApprovalDecision(t *testing.T) {
	t.Parallel()
	raw := mutated(t,
		set(dataPath+".decisions", js(`[{"id":"d1","type":"text","prompt":"Why?","required":true}]`)),
		set(slackPath, js(`{"quorum": 2, "reviewer_groups": ["S0LEADS"]}`)))
	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}),
		[]problem{{slackPath + ".quorum", "applies to approval decisions"}})
}

func TestRequester(t *testing.T) {
	t.Parallel()
	req := mustParse(t, mutated(t, set("source.agent_id", "human:U0RILEY"),
		set(slackPath, js(`{"requested_by": "riley@example.com"}`))), aah.ParseOptions{Now: seedNow})
	if got := req.Requester(); !reflect.DeepEqual(got, []string{"riley@example.com", "U0RILEY"}) {
		t.Errorf("Requester() = %v", got)
	}
	req = mustParse(t, seedBytes(t), aah.ParseOptions{Now: seedNow})
	if got := req.Requester(); len(got) != 0 {
		t.Errorf("seed example Requester() = %v, want none (its source is an agent)", got)
	}
}

func TestDefaultsApplyWhenRequestIsSilent(t *testing.T) {
	t.Parallel()
	req := mustParse(t, seedBytes(t), aah.ParseOptions{Now: seedNow})
	if r := req.Rules(aah.Defaults{}); r.Quorum != 1 || r.Gated() || r.AllowSelfApproval || r.RequireReason {
		t.Errorf("zero defaults: %+v", r)
	}
	if r := req.Rules(aah.Defaults{Quorum: 3, AllowSelfApproval: true, RequireReason: true}); r.Quorum != 3 || !r.Gated() || !r.AllowSelfApproval || !r.RequireReason {
		t.Errorf("workspace defaults not applied: %+v", r)
	}
}

// The workspace's rules are a floor: a request may tighten them, never
// loosen them, unless its agent is granted the right (Defaults.For).
func TestWorkspaceRulesAreAFloor(t *testing.T) {
	t.Parallel()
	strict := aah.Defaults{Quorum: 2, RequireReason: true, OverrideAgents: []string{"trusted"}}
	lax := aah.Defaults{Quorum: 1, AllowSelfApproval: true, OverrideAgents: []string{"trusted"}}
	loosen := `{"reviewer_groups": ["S0LEADS"], "quorum": 1, "allow_self_approval": true, "require_reason": false}`
	tighten := `{"reviewer_groups": ["S0LEADS"], "quorum": 3, "allow_self_approval": false, "require_reason": true}`
	for _, tc := range []struct {
		name   string
		slack  string
		def    aah.Defaults
		agent  string
		want   aah.Rules
		loosen []string // fields Loosenings names
	}{
		{"loosening ignored", loosen, strict, "planner", aah.Rules{Quorum: 2, RequireReason: true},
			[]string{slackPath + ".quorum", slackPath + ".allow_self_approval", slackPath + ".require_reason"}},
		{"loosening granted", loosen, strict, "trusted", aah.Rules{Quorum: 1, AllowSelfApproval: true}, nil},
		{"tightening applies", tighten, lax, "planner", aah.Rules{Quorum: 3, RequireReason: true}, nil},
		{"tightening applies to the granted too", tighten, lax, "trusted", aah.Rules{Quorum: 3, RequireReason: true}, nil},
		{"same as the workspace", `{"reviewer_groups": ["S0LEADS"], "quorum": 2, "require_reason": true, "allow_self_approval": false}`, strict, "planner",
			aah.Rules{Quorum: 2, RequireReason: true}, nil},
		{"no agent is never granted", loosen, aah.Defaults{Quorum: 2, OverrideAgents: []string{""}}, "", aah.Rules{Quorum: 2},
			[]string{slackPath + ".quorum", slackPath + ".allow_self_approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := mustParse(t, mutated(t, set(slackPath, js(tc.slack))), aah.ParseOptions{Now: seedNow, Stored: true})
			def := tc.def.For(tc.agent)
			got := req.Rules(def)
			got.Roles = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Rules = %+v, want %+v", got, tc.want)
			}
			var fields []string
			for _, l := range req.Loosenings(def) {
				fields = append(fields, l.Field)
			}
			if !reflect.DeepEqual(fields, tc.loosen) {
				t.Errorf("Loosenings fields = %v, want %v", fields, tc.loosen)
			}
		})
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 2, 16, 12, 0, 0, 0, time.UTC)
	alice, bob, carol := aah.Person{ID: "U0ALICE"}, aah.Person{ID: "U0BOB"}, aah.Person{ID: "U0CAROL"}
	sign := func(p aah.Person, ok bool, roles ...string) aah.Signoff {
		at = at.Add(time.Minute)
		return aah.Signoff{By: p, Approved: ok, Roles: roles, At: at}
	}
	rules := aah.Rules{Quorum: 2, Roles: []aah.Role{{Name: "legal"}, {Name: "marketing"}}}

	var a aah.Answer
	a.Signoffs = aah.WithSignoff(a.Signoffs, sign(alice, true, "legal"))
	if s := rules.Settle(a); s.Answered() || s.By != alice {
		t.Fatalf("one approval settled: %+v", s)
	}
	a.Signoffs = aah.WithSignoff(a.Signoffs, sign(carol, true))
	if s := rules.Settle(a); s.Answered() {
		t.Fatalf("quorum met but marketing missing, settled: %+v", s)
	}
	p := rules.Tally(a.Signoffs)
	if len(p.Approvals) != 2 || len(p.Roles[0].By) != 1 || len(p.Roles[1].By) != 0 || p.Done() {
		t.Fatalf("progress = %+v", p)
	}
	last := sign(bob, true, "marketing")
	a.Signoffs = aah.WithSignoff(a.Signoffs, last)
	if s := rules.Settle(a); s.Value != true || s.By != bob || !s.At.Equal(last.At) {
		t.Fatalf("every role and the quorum approved, settled: %+v", s)
	}
	// Alice changes her mind: one rejection decides.
	rej := sign(alice, false, "legal")
	rej.Reason = "clause 4"
	a.Signoffs = aah.WithSignoff(a.Signoffs, rej)
	if len(a.Signoffs) != 3 || a.Signoffs[2].By != alice {
		t.Fatalf("WithSignoff did not replace Alice's verdict: %+v", a.Signoffs)
	}
	if s := rules.Settle(a); s.Value != false || s.By != alice {
		t.Fatalf("a rejection settled as %+v", s)
	}
	// And back: approvals count again.
	a.Signoffs = aah.WithSignoff(a.Signoffs, sign(alice, true, "legal"))
	if s := rules.Settle(a); s.Value != true {
		t.Fatalf("after Alice approves again: %+v", s)
	}
}

// The quorum check counts the workspace's default quorum, and not the
// requester, who may not approve their own request.
func TestQuorumCheckUsesDefaultsAndSkipsRequester(t *testing.T) {
	t.Parallel()
	raw := mutated(t, set(slackPath, js(`{"reviewers": ["U0ALICE"]}`)), del(dataPath+".escalation"))
	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow, Defaults: aah.Defaults{Quorum: 2}}),
		[]problem{{slackPath + ".reviewers", "needs 2 approvers, but the request names only 1"}})
	// Read back from storage the settings may have changed: no such check.
	mustParse(t, raw, aah.ParseOptions{Now: seedNow, Stored: true, Defaults: aah.Defaults{Quorum: 2}})

	raw = mutated(t, set(slackPath, js(`{"reviewers": ["U0ALICE", "U0RILEY"], "quorum": 2, "requested_by": "U0RILEY"}`)), del(dataPath+".escalation"))
	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}),
		[]problem{{slackPath + ".quorum", "needs 2 approvers, but the request names only 1"}})
	// Asking for self-approval counts the requester only where the
	// workspace allows it, or the agent may loosen its rules.
	raw = mutated(t, set(slackPath, js(`{"reviewers": ["U0ALICE", "U0RILEY"], "quorum": 2, "requested_by": "U0RILEY", "allow_self_approval": true}`)), del(dataPath+".escalation"))
	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}),
		[]problem{{slackPath + ".quorum", "needs 2 approvers, but the request names only 1"}})
	mustParse(t, raw, aah.ParseOptions{Now: seedNow, Defaults: aah.Defaults{AllowSelfApproval: true}})
	mustParse(t, raw, aah.ParseOptions{Now: seedNow, Defaults: aah.Defaults{MayLoosen: true}})
	// A quorum below the workspace's is checked at the workspace's.
	raw = mutated(t, set(slackPath, js(`{"reviewers": ["U0ALICE"], "quorum": 1}`)), del(dataPath+".escalation"))
	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow, Defaults: aah.Defaults{Quorum: 2}}),
		[]problem{{slackPath + ".reviewers", "needs 2 approvers, but the request names only 1"}})
}
