package approval

import (
	"context"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// The deadline's action, on a request where the choice was answered and
// the approvals were not. Under a workspace quorum (gated approvals) the
// deadline never approves: not by on_deadline approve, not by a default.
func TestDeadlineActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quorum2 := Policy{Defaults: aah.Defaults{Quorum: 2}}
	for _, tc := range []struct {
		onDeadline string
		decisions  []any
		status     aah.Status
		ship       any  // ship's value after the deadline, nil for none
		timedOut   bool // ship marked timed_out
		trial      any  // trial's value, nil for none
		overall    string
		policy     Policy
	}{
		{"", []any{shipDecision, timingDecision, trialDecision}, aah.StatusExpired, nil, false, nil, aah.OverallPending, Policy{}},
		{"expire", []any{shipDecision, timingDecision, trialDecision}, aah.StatusExpired, nil, false, nil, aah.OverallPending, Policy{}},
		{"approve", []any{shipDecision, timingDecision, trialDecision}, aah.StatusResolved, true, true, true, aah.OverallAllApproved, Policy{}},
		{"reject", []any{shipDecision, timingDecision, trialDecision}, aah.StatusResolved, false, true, false, aah.OverallAllRejected, Policy{}},
		// apply_defaults cannot answer a required approval without a default.
		{"apply_defaults", []any{shipDecision, timingDecision, trialDecision}, aah.StatusExpired, nil, false, nil, aah.OverallPending, Policy{}},
		{"apply_defaults", []any{timingDecision, trialDecision}, aah.StatusResolved, nil, false, true, aah.OverallAllApproved, Policy{}},
		// Gated: ship stays unanswered, so the request expires.
		{"approve", []any{shipDecision, timingDecision, trialDecision}, aah.StatusExpired, nil, false, nil, aah.OverallPending, quorum2},
		{"reject", []any{shipDecision, timingDecision, trialDecision}, aah.StatusResolved, false, true, false, aah.OverallAllRejected, quorum2},
		// trial's default (true) does not approve a gated approval.
		{"apply_defaults", []any{timingDecision, trialDecision}, aah.StatusResolved, nil, false, nil, "", quorum2},
		{"approve", []any{timingDecision, trialDecision}, aah.StatusResolved, nil, false, nil, "", quorum2},
	} {
		name := tc.onDeadline + "/" + string(tc.status)
		if tc.policy.Defaults.Quorum > 1 {
			name += "/quorum 2"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := pending(requestDoc(t, tc.decisions, reviewers(nil, alice), tc.onDeadline))
			c, st := newCore(rec, tc.policy)
			if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"timing": "now"}); err != nil {
				t.Fatal(err)
			}
			out, err := c.Deadline(ctx, "req-1")
			if err != nil || !out.Changed {
				t.Fatalf("deadline: %+v %v", out, err)
			}
			got := out.Record
			if got.Status != tc.status || out.Resolved != (tc.status == aah.StatusResolved) {
				t.Errorf("status %s (resolved %v), want %s", got.Status, out.Resolved, tc.status)
			}
			if a := got.Answers["ship"]; a.Answered() != (tc.ship != nil) || tc.ship != nil && (a.Value != tc.ship || a.TimedOut != tc.timedOut) {
				t.Errorf("ship: %+v, want %v timed out %v", a, tc.ship, tc.timedOut)
			}
			if a := got.Answers["trial"]; a.Answered() != (tc.trial != nil) || tc.trial != nil && (a.Value != tc.trial || a.TimedOut == a.Defaulted) {
				t.Errorf("trial: %+v, want %v", a, tc.trial)
			}
			if got.Answers["timing"].Value != "now" || got.Answers["timing"].By != alice {
				t.Errorf("the deadline changed an answer: %+v", got.Answers["timing"])
			}
			if resp := response(t, got); tc.overall != "" && resp.OverallStatus != tc.overall {
				t.Errorf("overall_status %q, want %q", resp.OverallStatus, tc.overall)
			}
			if got.ResolvedBy.ID != "" || len(st.events("deadline_passed")) != 1 || got.Delivery.State != store.DeliveryPending {
				t.Errorf("resolved by %+v, audit %+v, delivery %+v", got.ResolvedBy, st.audit, got.Delivery)
			}
			closing := st.events(string(tc.status))
			if len(closing) != 1 || closing[0].Actor != "system" {
				t.Errorf("%s audit: %+v", tc.status, closing)
			}
			// Firing again, or late, is harmless.
			again, err := c.Deadline(ctx, "req-1")
			if err != nil || again.Changed || again.Record.Version != got.Version {
				t.Errorf("second deadline: %+v %v", again, err)
			}
		})
	}
}
