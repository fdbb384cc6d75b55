package approval

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// fakeDirectory resolves the few emails and groups the table uses.
type fakeDirectory struct{}

func (fakeDirectory) UserIDByEmail(_ context.Context, email string) (string, error) {
	return map[string]string{"riley@example.com": "U0RILEY", "alice@example.com": "U0ALICE"}[email], nil
}

func (fakeDirectory) GroupMembers(_ context.Context, group string) ([]string, error) {
	return map[string][]string{"S0LEADS": {"U0MORGAN", "U0ALICE"}}[group], nil
}

// approvalRequest is a request with one approval decision and slack as its
// extensions.slack, parsed as a stored request is.
func approvalRequest(t *testing.T, slack map[string]any) *aah.Request {
	t.Helper()
	doc := map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": "req-1", "type": "decision/request", "title": "Ship release 2.4", "created_at": "2026-02-16T10:00:00Z"},
		"source":      map[string]any{"agent_id": "release-bot"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"title": "Ship", "decisions": []any{map[string]any{"id": "ship", "type": "approval", "prompt": "Ship it?", "required": true}},
		}}},
		"handoff":    map[string]any{"expects_response": true},
		"extensions": map[string]any{"slack": slack},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	req, err := aah.Parse(raw, aah.ParseOptions{Stored: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return req
}

// Who may decide, and whether the request's own rules can lower the
// workspace's: each case is one person clicking Approve.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	strict := Policy{Defaults: aah.Defaults{Quorum: 2, OverrideAgents: []string{"trusted"}}, Admins: []string{"U0ADMIN"}}
	withDefaults := strict
	withDefaults.Reviewers, withDefaults.ReviewerGroups = []string{"alice@example.com"}, []string{"S0LEADS"}
	attack := map[string]any{"reviewers": []any{"U0RILEY"}, "requested_by": "U0RILEY", "quorum": 1, "allow_self_approval": true}
	for _, tc := range []struct {
		name   string
		policy Policy
		slack  map[string]any
		agent  string
		user   string
		want   string // "" allowed; else the refusing rule
		quorum int    // the effective quorum, when not 0
	}{
		{"unnamed, nobody configured: a stranger", strict, map[string]any{}, "pm", "U0MALLORY", RuleReviewer, 0},
		{"unnamed, nobody configured: admin", strict, map[string]any{}, "pm", "U0ADMIN", "", 0},
		{"unnamed: default reviewer by email", withDefaults, map[string]any{}, "pm", "U0ALICE", "", 0},
		{"unnamed: default group member", withDefaults, map[string]any{}, "pm", "U0MORGAN", "", 0},
		{"unnamed: outside the defaults", withDefaults, map[string]any{}, "pm", "U0MALLORY", RuleReviewer, 0},
		{"named: the defaults do not add to it", withDefaults, map[string]any{"reviewers": []any{"U0BOB"}}, "pm", "U0ALICE", RuleReviewer, 0},
		{"named: the reviewer", withDefaults, map[string]any{"reviewers": []any{"U0BOB"}}, "pm", "U0BOB", "", 0},
		{"attack: requester-only reviewer asks for self-approval", strict, attack, "pm", "U0RILEY", RuleSelfApproval, 2},
		{"attack from the granted agent", strict, attack, "trusted", "U0RILEY", "", 1},
		{"requester by email, named", strict, map[string]any{"reviewers": []any{"U0RILEY", "U0BOB"}, "requested_by": "riley@example.com"},
			"pm", "U0RILEY", RuleSelfApproval, 2},
		{"higher quorum than the workspace's", strict, map[string]any{"reviewer_groups": []any{"S0LEADS"}, "quorum": 5}, "pm", "U0MORGAN", "", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &Core{dir: fakeDirectory{}, policy: tc.policy}
			req := approvalRequest(t, tc.slack)
			auth, err := d.authorize(context.Background(), req, aah.Person{ID: tc.user})
			if err != nil {
				t.Fatal(err)
			}
			g := grant{auth: auth, rules: req.Rules(d.policy.Defaults.For(tc.agent))}
			var got string
			if !auth.allowed(nil, nil, tc.user) {
				got = RuleReviewer
			} else if err := g.mayDecide(); err != nil {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("mayDecide: %v", err)
				}
				got = r.Rule
			}
			if got != tc.want {
				t.Errorf("refused by %q, want %q", got, tc.want)
			}
			if tc.quorum != 0 && g.rules.Quorum != tc.quorum {
				t.Errorf("effective quorum %d, want %d", g.rules.Quorum, tc.quorum)
			}
		})
	}
}
