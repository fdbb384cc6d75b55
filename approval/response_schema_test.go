package approval

import (
	"context"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/store"
)

// Every response the review verbs produce, built through the core's own
// paths (not by hand), is valid under the response schema and carries what
// docs/review.md promises: modify's parameters and original_parameters,
// the picked reject_reason, a directive's data.directive with
// overall_status "pending".
func TestReviewResponsesMatchTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	two := []any{shipDecision, budgetDecision}
	for _, tc := range []struct {
		name  string
		rec   func(t *testing.T) store.Record
		act   func(c *Core) (Outcome, error)
		check func(t *testing.T, d aah.ResponseData)
	}{
		{"modify", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			func(c *Core) (Outcome, error) {
				return c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 8}, "fewer is enough")
			},
			func(t *testing.T, d aah.ResponseData) {
				r := d.Responses[0]
				if r.Action != aah.VerbModify || !r.Modified || r.Parameters["replicas"] != 8.0 || r.OriginalParameters["replicas"] != 6.0 ||
					r.Parameters["service"] != "api" || d.OverallStatus != aah.OverallAllApproved {
					t.Errorf("modify entry %+v, overall %q", r, d.OverallStatus)
				}
			}},
		{"modify to the same values", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			func(c *Core) (Outcome, error) {
				return c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 6}, "")
			},
			func(t *testing.T, d aah.ResponseData) {
				if r := d.Responses[0]; r.Action != aah.VerbApprove || r.Modified || r.Parameters != nil {
					t.Errorf("a modify that changed nothing: %+v", r)
				}
			}},
		{"reject with a picked reason", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			func(c *Core) (Outcome, error) {
				return c.RejectWith(ctx, "req-1", nil, alice, Rejection{Picked: "Too expensive", Comment: "try 4"})
			},
			func(t *testing.T, d aah.ResponseData) {
				if r := d.Responses[0]; r.Action != aah.VerbReject || r.RejectReason != "Too expensive" || d.OverallStatus != aah.OverallAllRejected {
					t.Errorf("reject entry %+v, overall %q", r, d.OverallStatus)
				}
			}},
		{"reject under a quorum", func(t *testing.T) store.Record {
			return reviewed(t, reviewers(map[string]any{"quorum": 2}, alice, bob), scaleReview(nil))
		},
			func(c *Core) (Outcome, error) {
				return c.RejectWith(ctx, "req-1", []string{"ship"}, bob, Rejection{Picked: "Wrong service"})
			},
			func(t *testing.T, d aah.ResponseData) {
				if r := d.Responses[0]; r.RejectReason != "Wrong service" || len(r.Signoffs) != 1 {
					t.Errorf("gated reject entry %+v", r)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newCore(tc.rec(t), Policy{})
			out, err := tc.act(c)
			if err != nil || !out.Resolved {
				t.Fatalf("%+v, %v; want resolved", out, err)
			}
			valid(t, out.Record)
			tc.check(t, response(t, out.Record))
		})
	}
	for verb := range directiveEvents {
		t.Run(string(verb), func(t *testing.T) {
			t.Parallel()
			c, _ := newCore(reviewed(t, reviewers(nil, alice, bob), scaleReview(nil), two...), Policy{})
			if _, err := c.Modify(ctx, "req-1", "ship", bob, map[string]any{"replicas": 3}, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"budget": false}); err != nil {
				t.Fatal(err)
			}
			out, err := c.Direct(ctx, "req-1", alice, verb, "try a smaller batch")
			if err != nil || !out.Resolved {
				t.Fatalf("%+v, %v", out, err)
			}
			valid(t, out.Record)
			d := response(t, out.Record)
			if d.OverallStatus != aah.OverallPending || d.Directive == nil || d.Directive.Action != verb ||
				d.Directive.DecidedBy.ID != alice.ID || len(d.Responses) != 2 || !d.Responses[0].Modified {
				t.Errorf("directive response %+v", d)
			}
		})
	}
}

// A directive on a request collecting sign-offs lists the sign-offs so far.
func TestDirectiveResponseWithSignoffsMatchesTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newCore(reviewed(t, reviewers(map[string]any{"quorum": 2}, alice, bob), scaleReview(nil)), Policy{})
	if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"ship": true}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Direct(ctx, "req-1", bob, aah.VerbChangePlan, "ask finance first")
	if err != nil || !out.Resolved {
		t.Fatalf("%+v, %v", out, err)
	}
	valid(t, out.Record)
	d := response(t, out.Record)
	if d.OverallStatus != aah.OverallPending || len(d.Responses) != 1 || len(d.Responses[0].Signoffs) != 1 ||
		d.Directive == nil || d.Directive.Requirement != "ask finance first" {
		t.Errorf("response %+v", d)
	}
}

// valid fails the test when the record's response artifact breaks the
// response schema.
func valid(t *testing.T, rec store.Record) {
	t.Helper()
	if len(rec.Response) == 0 {
		t.Fatal("no response")
	}
	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("%v\n%s", err, rec.Response)
	}
}
