package approval

import (
	"context"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// An approval decision answers only with the responses its agent accepts
// (extensions.decisions responses): a decision that lists no approve cannot
// be approved plainly (by a click, the API, "Approve all", a modify that
// changes nothing, or "Approve similar"), one that lists no reject cannot be
// rejected. The refusal changes nothing.
func TestAnswersFollowTheAcceptedResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noApprove := []any{"reject", "modify", "defer"}
	noReject := []any{"approve", "modify"}
	for _, tc := range []struct {
		name  string
		verbs []any
		act   func(c *Core) (Outcome, error)
	}{
		{"approve", noApprove, func(c *Core) (Outcome, error) {
			return c.Answer(ctx, "req-1", alice, map[string]any{"ship": true})
		}},
		{"approve with a comment", noApprove, func(c *Core) (Outcome, error) {
			return c.AnswerWithComment(ctx, "req-1", "ship", alice, true, "fine")
		}},
		{"approve all", noApprove, func(c *Core) (Outcome, error) { return c.AnswerAll(ctx, "req-1", alice, true) }},
		{"modify changing nothing", noApprove, func(c *Core) (Outcome, error) {
			return c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 6}, "")
		}},
		{"reject", noReject, func(c *Core) (Outcome, error) {
			return c.Reject(ctx, "req-1", []string{"ship"}, alice, "no")
		}},
		{"reject all", noReject, func(c *Core) (Outcome, error) { return c.AnswerAll(ctx, "req-1", alice, false) }},
		{"reject by value", noReject, func(c *Core) (Outcome, error) {
			return c.Answer(ctx, "req-1", alice, map[string]any{"ship": false})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			review := scaleReview(tc.verbs)
			if tc.verbs[0] == "approve" {
				delete(review, "reject_reasons") // they need reject
			}
			c, st := newCore(reviewed(t, reviewers(nil, alice), review), Policy{})
			_, err := tc.act(c)
			if r := refusalOf(t, err); r == nil || r.Rule != RuleVerb {
				t.Fatalf("refusal %+v, want the verb rule", r)
			}
			if rec, _ := st.Get(ctx, "req-1"); rec.Status != aah.StatusPending || len(rec.Answers) != 0 {
				t.Errorf("a refusal changed the request: %+v", rec)
			}
		})
	}
	// What it accepts still works: a modify that changes something, a
	// rejection.
	c, _ := newCore(reviewed(t, reviewers(nil, alice), scaleReview(noApprove)), Policy{})
	if out, err := c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 4}, ""); err != nil || !out.Resolved {
		t.Errorf("modify: %+v, %v", out, err)
	}
	c, _ = newCore(reviewed(t, reviewers(nil, alice), scaleReview(noApprove)), Policy{})
	if out, err := c.RejectWith(ctx, "req-1", nil, alice, Rejection{Picked: "Too expensive"}); err != nil || !out.Resolved {
		t.Errorf("reject: %+v, %v", out, err)
	}
}
