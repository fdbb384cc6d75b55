package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// A submission becomes pending only within the workspace's policy: its
// sign-off rules are a floor (unless the agent may loosen them), and a
// request naming nobody needs someone configured to decide it. A refusal
// stores nothing; an accepted one is stored with its timers and the user
// ids it names.
func TestCreate(t *testing.T) {
	t.Parallel()
	strict := aah.Defaults{Quorum: 2, RequireReason: true, OverrideAgents: []string{"trusted"}}
	deciders := Policy{Reviewers: []string{"U0LEAD"}}
	named := map[string]any{"reviewers": []any{"U0ALICE", "riley@example.com"},
		"required_roles": []any{map[string]any{"role": "legal", "members": []any{"U0LEGAL", "U0ALICE"}}}}
	loose := map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}, "quorum": 1, "require_reason": false}
	for _, tc := range []struct {
		name   string
		policy Policy
		agent  string
		slack  map[string]any
		rule   string   // "" accepted
		fields []string // the refusal's problems, in order
	}{
		{"named reviewers, no workspace deciders", Policy{}, "pm", named, "", nil},
		{"unnamed, the workspace names deciders", deciders, "pm", nil, "", nil},
		{"unnamed, admins decide", Policy{Admins: []string{"U0ADMIN"}}, "pm", nil, "", nil},
		{"unnamed, nobody configured", Policy{}, "pm", nil, RuleNoDeciders, []string{"extensions.slack.reviewers"}},
		{"looser than the floor", Policy{Defaults: strict}, "pm", loose, RulePolicyFloor,
			[]string{"extensions.slack.quorum", "extensions.slack.require_reason"}},
		{"an agent granted the right may loosen", Policy{Defaults: strict}, "trusted", loose, "", nil},
		{"looser and unnamed: both problems, the floor's rule", Policy{Defaults: aah.Defaults{RequireReason: true}}, "pm",
			map[string]any{"require_reason": false}, RulePolicyFloor,
			[]string{"extensions.slack.require_reason", "extensions.slack.reviewers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore()
			c := New(st, Options{Now: func() time.Time { return t0 }, Policy: tc.policy,
				Reminders: aah.ReminderPlan{Every: time.Hour, Max: 2}, TimerKinds: map[string]bool{store.JobExpire: true, store.JobRemind: true}})
			doc := requestDoc(t, []any{shipDecision}, tc.slack, "")
			req, err := aah.Parse(doc, aah.ParseOptions{Stored: true})
			if err != nil {
				t.Fatal(err)
			}
			rec, created, err := c.Create(context.Background(), Submission{Request: req, Agent: tc.agent, Document: doc,
				BodyHash: "h1", Channel: "C0APPROVALS"})
			if tc.rule != "" {
				var refused *PolicyRefusal
				if !errors.As(err, &refused) || refused.Rule != tc.rule {
					t.Fatalf("Create = %v, want a %s refusal", err, tc.rule)
				}
				var fields []string
				for _, p := range refused.Problems {
					fields = append(fields, p.Field)
				}
				if !slices.Equal(fields, tc.fields) {
					t.Errorf("problems on %v, want %v", fields, tc.fields)
				}
				if len(st.created) != 0 {
					t.Errorf("a refused request was stored: %+v", st.created)
				}
				return
			}
			if err != nil || !created || rec.Status != aah.StatusPending {
				t.Fatalf("Create = %+v, %v, %v; want a new pending request", rec, created, err)
			}
			n := st.created[0]
			wantTimers := []string{"expire:req-1", "remind:req-1:1"}
			if got := jobIDs(n.Timers); !slices.Equal(got, wantTimers) {
				t.Errorf("timers %v, want %v", got, wantTimers)
			}
			if n.ResponseURL != "https://agent.example/cb" || !n.Deadline.Equal(time.Date(2027, 2, 17, 17, 0, 0, 0, time.UTC)) ||
				n.Agent != tc.agent || n.Channel != "C0APPROVALS" {
				t.Errorf("stored %+v", n)
			}
			if tc.slack != nil && tc.slack["required_roles"] != nil && !slices.Equal(n.Reviewers, []string{"U0ALICE", "U0LEGAL"}) {
				t.Errorf("indexed under %v, want the named user ids once each (emails resolve when posted)", n.Reviewers)
			}
		})
	}
}

// An agent's retry of the identical body is not created twice; another
// body under the same id is a conflict.
func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	st := newFakeStore()
	c := New(st, Options{Now: func() time.Time { return t0 }})
	doc := requestDoc(t, []any{shipDecision}, map[string]any{"reviewers": []any{"U0ALICE"}}, "")
	req, err := aah.Parse(doc, aah.ParseOptions{Stored: true})
	if err != nil {
		t.Fatal(err)
	}
	sub := Submission{Request: req, Agent: "pm", Document: doc, BodyHash: "h1", Channel: "C0APPROVALS"}
	if _, created, err := c.Create(context.Background(), sub); err != nil || !created {
		t.Fatalf("first Create: %v, %v", created, err)
	}
	if _, created, err := c.Create(context.Background(), sub); err != nil || created {
		t.Fatalf("retry: created %v, %v; want the stored request", created, err)
	}
	sub.BodyHash = "h2"
	if _, _, err := c.Create(context.Background(), sub); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another body: %v, want store.ErrConflict", err)
	}
	if refusal := (&PolicyRefusal{Rule: RuleNoDeciders, Problems: []aah.FieldError{{Field: "f", Message: "m"}}}).Error(); !strings.Contains(refusal, "no_deciders") {
		t.Errorf("PolicyRefusal.Error() = %q", refusal)
	}
}

func jobIDs(js []store.JobAt) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}
