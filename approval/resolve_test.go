package approval

import (
	"context"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Submit: a preselected default becomes the submitter's answer
// (default_accepted), an optional decision takes its default (defaulted),
// a gated approval is never approved by its default, and a required
// decision left open refuses the submission.
func TestDefaultsOnSubmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		slack    map[string]any
		answers  map[string]any // bob's answers before alice submits
		refused  string
		accepted []string // decisions answered by default_accepted
		default_ []string // decisions defaulted
		open     []string // decisions left unanswered
	}{
		{"required approvals open", reviewers(nil, alice, bob), nil, RuleInvalid, nil, nil, nil},
		{"menu default accepted, optional approval defaulted", reviewers(nil, alice, bob),
			map[string]any{"ship": true, "budget": true}, "", []string{"timing"}, []string{"trial"}, nil},
		{"an answered menu keeps its answer", reviewers(nil, alice, bob),
			map[string]any{"ship": true, "budget": true, "timing": "now"}, "", nil, []string{"trial"}, nil},
		{"a gated approval is not approved by its default", reviewers(map[string]any{"quorum": 2}, alice, bob, carol),
			map[string]any{"ship": true, "budget": true}, RuleInvalid, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := pending(requestDoc(t, []any{shipDecision, budgetDecision, timingDecision, trialDecision}, tc.slack, ""))
			c, st := newCore(rec, Policy{})
			if len(tc.answers) > 0 {
				if _, err := c.Answer(ctx, "req-1", bob, tc.answers); err != nil {
					t.Fatal(err)
				}
			}
			out, err := c.Submit(ctx, "req-1", alice)
			if got := refusedBy(t, err); got != tc.refused {
				t.Fatalf("refused by %q, want %q (%v)", got, tc.refused, err)
			}
			if tc.refused != "" {
				if !strings.Contains(err.Error(), "Still open") || out.Record.Status.Open() != true {
					t.Errorf("refusal %v, status %s", err, out.Record.Status)
				}
				return
			}
			got := out.Record
			if got.Status != aah.StatusResolved || !out.Resolved || len(st.events("submitted")) != 1 {
				t.Fatalf("not resolved: %+v", out)
			}
			for _, id := range tc.accepted {
				if a := got.Answers[id]; !a.DefaultAccepted || a.By != alice || a.Value != "monday" {
					t.Errorf("%s: %+v, want accepted by alice", id, a)
				}
			}
			for _, id := range tc.default_ {
				if a := got.Answers[id]; !a.Defaulted || a.Value != true || a.By.ID != "" {
					t.Errorf("%s: %+v, want defaulted", id, a)
				}
			}
			resp := response(t, got)
			for _, r := range resp.Responses {
				a := got.Answers[r.DecisionID]
				if r.DefaultAccepted != a.DefaultAccepted || r.Defaulted != a.Defaulted {
					t.Errorf("response of %s: %+v, answer %+v", r.DecisionID, r, a)
				}
			}
		})
	}
}

// A request whose agent expects no response resolves without a delivery.
func TestResolveWithoutDelivery(t *testing.T) {
	t.Parallel()
	rec := pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
	rec.ResponseURL = ""
	c, st := newCore(rec, Policy{})
	out, err := c.Answer(context.Background(), "req-1", alice, map[string]any{"ship": true})
	if err != nil || !out.Resolved {
		t.Fatal(out, err)
	}
	if out.Record.Delivery.State != "" || out.Record.Delivery.WebhookID != "" || len(out.Record.Response) == 0 {
		t.Errorf("delivery %+v", out.Record.Delivery)
	}
	for _, j := range st.jobs {
		if j.ID == store.JobID(store.JobDeliver, "req-1") {
			t.Errorf("a delivery was scheduled: %+v", st.jobs)
		}
	}
	if out.Record.ResolvedBy != alice {
		t.Errorf("resolved by %+v", out.Record.ResolvedBy)
	}
}
