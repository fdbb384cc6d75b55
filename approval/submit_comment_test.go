package approval

import (
	"context"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah/schema"
)

// Whoever submits may add an overall comment: the response carries it as
// data.comment next to the machine summary, named by their display name,
// the audit records it with "submitted" and "resolved", and the response
// stays valid under the schema. A comment too long is refused (audited),
// nothing changed; a blank one is none.
func TestSubmitWithComment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{shipDecision, budgetDecision}, reviewers(nil, alice, bob), ""))
	c, st := newCore(rec, Policy{})
	if _, err := c.Answer(ctx, "req-1", bob, map[string]any{"ship": true, "budget": false}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", MaxSubmitComment+1)
	if _, err := c.SubmitWithComment(ctx, "req-1", alice, long); refusedBy(t, err) != RuleInvalid {
		t.Fatalf("a %d-character comment: %v", len(long), err)
	}
	out, err := c.SubmitWithComment(ctx, "req-1", alice, "  Ship now; the budget waits for Q3.  ")
	if err != nil || !out.Resolved {
		t.Fatalf("submit: %v %+v", err, out)
	}
	if err := schema.ValidateResponse(out.Record.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	d := response(t, out.Record)
	if c := d.Comment; c == nil || c.Text != "Ship now; the budget waits for Q3." || c.By != "human:U0ALICE" || c.ByName != "alice" ||
		c.At.IsZero() || d.Summary == "" {
		t.Errorf("data.comment = %+v, summary %q", c, d.Summary)
	}
	if ev := st.events("submitted"); len(ev) != 1 || ev[0].Data["comment"] != "Ship now; the budget waits for Q3." {
		t.Errorf("submitted audit: %+v", ev)
	}
	if ev := st.events("resolved"); len(ev) != 1 || ev[0].Data["comment"] != "Ship now; the budget waits for Q3." {
		t.Errorf("resolved audit: %+v", ev)
	}

	// A blank comment is none.
	rec2 := pending(requestDoc(t, []any{shipDecision, budgetDecision}, reviewers(nil, alice), ""))
	c2, _ := newCore(rec2, Policy{})
	if _, err := c2.Answer(ctx, "req-1", alice, map[string]any{"ship": true, "budget": true}); err != nil {
		t.Fatal(err)
	}
	out, err = c2.SubmitWithComment(ctx, "req-1", alice, "   ")
	if err != nil || response(t, out.Record).Comment != nil {
		t.Errorf("blank comment: %v %+v", err, response(t, out.Record).Comment)
	}
}

// When a single answer resolves the request, the comment given with it is
// the resolver's overall comment too.
func TestSingleAnswerCommentIsTheOverallComment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
	c, _ := newCore(rec, Policy{})
	out, err := c.AnswerWithComment(ctx, "req-1", "ship", alice, true, "Tested on staging")
	if err != nil || !out.Resolved {
		t.Fatalf("answer: %v %+v", err, out)
	}
	d := response(t, out.Record)
	if d.Comment == nil || d.Comment.Text != "Tested on staging" || d.Comment.ByName != "alice" {
		t.Errorf("data.comment = %+v", d.Comment)
	}
	if err := schema.ValidateResponse(out.Record.Response); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	// Without a comment there is none.
	rec = pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
	c, _ = newCore(rec, Policy{})
	out, err = c.Answer(ctx, "req-1", alice, map[string]any{"ship": true})
	if err != nil || response(t, out.Record).Comment != nil {
		t.Errorf("no comment: %v %+v", err, response(t, out.Record).Comment)
	}
}
