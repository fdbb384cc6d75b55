package approval

import (
	"context"
	"errors"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// refusedBy is the rule of a *Refusal, "" for nil; another error fails.
func refusedBy(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v", err)
	}
	return r.Rule
}

// The sign-off rules, each case a sequence of clicks on one approval
// decision ("ship") and the request's state after them.
func TestSignoffRules(t *testing.T) {
	t.Parallel()
	legal := []any{map[string]any{"role": "legal", "members": []any{"alice@example.com"}}}
	type click struct {
		by      aah.Person
		approve bool
		reason  string // Reject with this reason instead of a click
		refused string // the rule refusing it, "" when accepted
	}
	for _, tc := range []struct {
		name   string
		slack  map[string]any
		policy Policy
		clicks []click
		status aah.Status
		value  any // the decision's value after the clicks; nil for none
	}{
		// A recorded sign-off that does not settle the decision still moves
		// the request from pending to partial.
		{"one reviewer resolves", reviewers(nil, alice, bob), Policy{},
			[]click{{by: alice, approve: true}}, aah.StatusResolved, true},
		{"quorum 2: one approval waits", reviewers(map[string]any{"quorum": 2}, alice, bob, carol), Policy{},
			[]click{{by: alice, approve: true}}, aah.StatusPartial, nil},
		{"quorum 2: the same person twice counts once", reviewers(map[string]any{"quorum": 2}, alice, bob, carol), Policy{},
			[]click{{by: alice, approve: true}, {by: alice, approve: true}}, aah.StatusPartial, nil},
		{"quorum 2: two approvals resolve", reviewers(map[string]any{"quorum": 2}, alice, bob, carol), Policy{},
			[]click{{by: alice, approve: true}, {by: bob, approve: true}}, aah.StatusResolved, true},
		{"workspace quorum applies to a request that sets none", reviewers(nil, alice, bob), Policy{Defaults: aah.Defaults{Quorum: 2}},
			[]click{{by: alice, approve: true}}, aah.StatusPartial, nil},
		{"veto: one rejection settles a quorum decision", reviewers(map[string]any{"quorum": 2}, alice, bob, carol), Policy{},
			[]click{{by: alice, approve: true}, {by: bob, approve: false}}, aah.StatusResolved, false},
		{"required role: approvals without it wait", reviewers(map[string]any{"required_roles": legal}, bob, carol), Policy{},
			[]click{{by: bob, approve: true}, {by: carol, approve: true}}, aah.StatusPartial, nil},
		{"required role: its member's approval resolves", reviewers(map[string]any{"required_roles": legal}, bob), Policy{},
			[]click{{by: bob, approve: true}, {by: alice, approve: true}}, aah.StatusResolved, true},
		{"self-approval refused", reviewers(map[string]any{"requested_by": "U0RILEY"}, riley, bob), Policy{},
			[]click{{by: riley, approve: true, refused: RuleSelfApproval}}, aah.StatusPending, nil},
		{"self-approval refused for a requester named by email", reviewers(map[string]any{"requested_by": "riley@example.com"}, riley, bob), Policy{},
			[]click{{by: riley, approve: true, refused: RuleSelfApproval}}, aah.StatusPending, nil},
		{"self-approval allowed by the workspace", reviewers(map[string]any{"requested_by": "U0RILEY"}, riley, bob),
			Policy{Defaults: aah.Defaults{AllowSelfApproval: true}},
			[]click{{by: riley, approve: true}}, aah.StatusResolved, true},
		{"a stranger is refused", reviewers(nil, alice), Policy{},
			[]click{{by: carol, approve: true, refused: RuleReviewer}}, aah.StatusPending, nil},
		{"require reason: a bare rejection is refused", reviewers(map[string]any{"require_reason": true}, alice), Policy{},
			[]click{{by: alice, approve: false, refused: RuleRequireReason}}, aah.StatusPending, nil},
		{"require reason: a rejection with its reason resolves", reviewers(map[string]any{"require_reason": true}, alice), Policy{},
			[]click{{by: alice, reason: "too risky"}}, aah.StatusResolved, false},
		{"require reason from the workspace", reviewers(nil, alice), Policy{Defaults: aah.Defaults{RequireReason: true}},
			[]click{{by: alice, approve: false, refused: RuleRequireReason}}, aah.StatusPending, nil},
		{"a blank reason is refused", reviewers(nil, alice), Policy{},
			[]click{{by: alice, reason: "  ", refused: RuleRequireReason}}, aah.StatusPending, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st := newCore(pending(requestDoc(t, []any{shipDecision}, tc.slack, "")), tc.policy)
			ctx := context.Background()
			for i, cl := range tc.clicks {
				var err error
				if cl.reason != "" {
					_, err = c.Reject(ctx, "req-1", []string{"ship"}, cl.by, cl.reason)
				} else {
					_, err = c.Answer(ctx, "req-1", cl.by, map[string]any{"ship": cl.approve})
				}
				if got := refusedBy(t, err); got != cl.refused {
					t.Fatalf("click %d: refused by %q, want %q", i, got, cl.refused)
				}
			}
			rec, _ := st.Get(ctx, "req-1")
			if rec.Status != tc.status {
				t.Errorf("status %s, want %s", rec.Status, tc.status)
			}
			a := rec.Answers["ship"]
			if got := a.Value; (tc.value == nil) != !a.Answered() || tc.value != nil && got != tc.value {
				t.Errorf("value %v (answered %v), want %v", got, a.Answered(), tc.value)
			}
			if tc.status == aah.StatusResolved {
				if len(rec.Response) == 0 || rec.Delivery.State != store.DeliveryPending || rec.ResolvedAt.IsZero() {
					t.Errorf("resolved without its response or delivery: %+v", rec.Delivery)
				}
				if n := len(st.events("resolved")); n != 1 {
					t.Errorf("%d resolved entries, want 1", n)
				}
			}
		})
	}
}

// Every refusal is audited with the action, the rule and the status, and
// changes nothing else.
func TestRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{shipDecision}, reviewers(map[string]any{"requested_by": "U0RILEY"}, alice, riley), ""))
	c, st := newCore(rec, Policy{})
	_, err := c.Answer(ctx, "req-1", carol, map[string]any{"ship": true})
	if refusedBy(t, err) != RuleReviewer {
		t.Fatalf("stranger: %v", err)
	}
	if err := c.Check(ctx, "req-1", riley, "answer"); refusedBy(t, err) != RuleSelfApproval {
		t.Fatalf("requester's check: %v", err)
	}
	if err := c.Check(ctx, "req-1", riley, "comment"); err != nil {
		t.Fatalf("the requester may comment: %v", err)
	}
	if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"nope": true}); refusedBy(t, err) != RuleInvalid {
		t.Fatalf("unknown decision: %v", err)
	}
	refused := st.events("click_refused")
	if len(refused) != 3 {
		t.Fatalf("%d click_refused entries, want 3: %+v", len(refused), refused)
	}
	for i, want := range []struct{ actor, rule string }{{"human:U0CAROL", RuleReviewer}, {"human:U0RILEY", RuleSelfApproval}, {"human:U0ALICE", RuleInvalid}} {
		e := refused[i]
		if e.Actor != want.actor || e.Data["rule"] != want.rule || e.Data["action"] != "answer" || e.Data["status"] != "pending" || e.Data["reason"] == "" {
			t.Errorf("refusal %d audited as %+v, want %v", i, e, want)
		}
	}
	got, _ := st.Get(ctx, "req-1")
	if got.Version != 1 || len(got.Answers) != 0 || got.Status != aah.StatusPending {
		t.Errorf("a refusal changed the request: %+v", got)
	}
	// A closed request refuses everyone, and says why.
	if _, err := c.Withdraw(ctx, "req-1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Comment(ctx, "req-1", "ship", alice, "late")
	var r *Refusal
	if !errors.As(err, &r) || r.Rule != RuleClosed || r.Reason != "The agent withdrew this request; nothing was changed." {
		t.Errorf("comment on a withdrawn request: %v", err)
	}
	if e := st.events("click_refused"); len(e) != 4 || e[3].Data["action"] != "comment" || e[3].Data["status"] != "withdrawn" {
		t.Errorf("the closed refusal was not audited: %+v", e)
	}
}

// Answers to several decisions: the first moves the request to partial;
// repeating an answer changes nothing; "approve all" answers only the
// approval decisions, in one update.
func TestAnswersAndApproveAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{shipDecision, timingDecision, budgetDecision}, reviewers(nil, alice, bob), ""))
	c, st := newCore(rec, Policy{})
	out, err := c.Answer(ctx, "req-1", alice, map[string]any{"timing": "now"})
	if err != nil || !out.Changed || out.Resolved || out.Record.Status != aah.StatusPartial {
		t.Fatalf("first answer: %+v %v", out, err)
	}
	out, err = c.Answer(ctx, "req-1", alice, map[string]any{"timing": "now"})
	if err != nil || out.Changed || out.Record.Version != 2 {
		t.Fatalf("a double click changed something: %+v %v", out, err)
	}
	if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"timing": "someday"}); refusedBy(t, err) != RuleInvalid {
		t.Fatalf("an invalid option: %v", err)
	}
	commits := st.commits
	out, err = c.AnswerAll(ctx, "req-1", bob, true)
	if err != nil || !out.Changed || out.Resolved {
		t.Fatalf("approve all: %+v %v", out, err)
	}
	if st.commits != commits+1 {
		t.Errorf("approve all took %d updates, want 1", st.commits-commits)
	}
	got := out.Record
	if got.Answers["ship"].Value != true || got.Answers["budget"].Value != true || got.Answers["timing"].Value != "now" ||
		got.Answers["ship"].By != bob || got.Answers["timing"].By != alice {
		t.Errorf("after approve all: %+v", got.Answers)
	}
	// Reject all, with a reason: each approval decision carries it.
	out, err = c.RejectAll(ctx, "req-1", alice, "not this quarter")
	if err != nil || !out.Changed {
		t.Fatalf("reject all: %+v %v", out, err)
	}
	for _, id := range []string{"ship", "budget"} {
		a := out.Record.Answers[id]
		if cm, _ := a.CommentOf(alice.ID); a.Value != false || cm.Text != "not this quarter" {
			t.Errorf("%s after reject all: %+v", id, a)
		}
	}
	if out.Record.Answers["timing"].Value != "now" {
		t.Errorf("reject all touched a choice: %+v", out.Record.Answers["timing"])
	}
}

// An input dialog's comment and answer are one update: the response of
// the request it resolves carries the comment, and a refused answer leaves
// no comment behind.
func TestAnswerWithCommentIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{tagDecision}, reviewers(map[string]any{"requested_by": "U0RILEY"}, alice, riley), ""))

	c, st := newCore(rec, Policy{})
	out, err := c.AnswerWithComment(ctx, "req-1", "tag", alice, "Plan less, celebrate more", "Short and warm")
	if err != nil || !out.Resolved || st.commits != 1 {
		t.Fatalf("answer with comment: %+v %v (%d updates)", out, err, st.commits)
	}
	if resp := response(t, out.Record); len(resp.Responses) != 1 || resp.Responses[0].Comment == nil || *resp.Responses[0].Comment != "Short and warm" {
		t.Errorf("the response lacks the comment: %+v", resp.Responses)
	}
	if len(st.events("commented")) != 1 || len(st.events("answered")) != 1 {
		t.Errorf("audit: %+v", st.audit)
	}

	for _, tc := range []struct {
		name  string
		by    aah.Person
		value any
		rule  string
	}{
		{"the requester may comment but not answer", riley, "mine", RuleSelfApproval},
		{"an invalid value", alice, 42, RuleInvalid},
	} {
		c, st := newCore(rec, Policy{})
		_, err := c.AnswerWithComment(ctx, "req-1", "tag", tc.by, tc.value, "a comment")
		if refusedBy(t, err) != tc.rule {
			t.Errorf("%s: %v, want refused by %s", tc.name, err, tc.rule)
		}
		got, _ := st.Get(ctx, "req-1")
		if len(got.Answers) != 0 || got.Version != 1 || len(st.events("commented")) != 0 {
			t.Errorf("%s: the refused answer left %+v", tc.name, got.Answers)
		}
	}
}

// Comments: one per person per decision; the requester may comment; a
// required reason cannot be removed from the rejection it explains.
func TestComments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pending(requestDoc(t, []any{shipDecision, budgetDecision},
		reviewers(map[string]any{"requested_by": "U0RILEY", "require_reason": true}, alice, riley), ""))
	c, _ := newCore(rec, Policy{})
	if out, err := c.Comment(ctx, "req-1", "ship", riley, "please hurry"); err != nil || !out.Changed {
		t.Fatalf("requester's comment: %+v %v", out, err)
	}
	if out, err := c.Comment(ctx, "req-1", "ship", riley, " please hurry "); err != nil || out.Changed {
		t.Fatalf("the same comment again: %+v %v", out, err)
	}
	if _, err := c.Reject(ctx, "req-1", []string{"ship"}, alice, "not yet"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Comment(ctx, "req-1", "ship", alice, ""); refusedBy(t, err) != RuleRequireReason {
		t.Fatalf("removing a required reason: %v", err)
	}
	out, err := c.Comment(ctx, "req-1", "ship", alice, "not before the audit")
	if err != nil {
		t.Fatal(err)
	}
	a := out.Record.Answers["ship"]
	mine, _ := a.CommentOf(alice.ID)
	theirs, _ := a.CommentOf(riley.ID)
	if mine.Text != "not before the audit" || theirs.Text != "please hurry" || a.Value != false {
		t.Errorf("comments %+v, value %v", a.Comments, a.Value)
	}
}
