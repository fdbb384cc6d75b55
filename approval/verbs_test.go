package approval

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// allVerbs is every response the review extension offers.
var allVerbs = []any{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"}

// scaleReview is extensions.decisions.<id> of a decision proposing to scale
// a service, accepting the verbs (allVerbs for nil).
func scaleReview(verbs []any) map[string]any {
	if verbs == nil {
		verbs = allVerbs
	}
	r := map[string]any{
		"proposed_action": map[string]any{"action_type": "tool_call", "tool_name": "scale_service",
			"parameters": map[string]any{"service": "api", "replicas": 6}},
		"responses":      verbs,
		"reject_reasons": []any{"Too expensive", "Wrong service"},
	}
	if slices.Contains(verbs, any("modify")) {
		r["editable"] = map[string]any{"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}}
	}
	return r
}

// reviewed is a pending request whose decisions are dec (shipDecision when
// none), with extensions.slack and the review extension on "ship".
func reviewed(t *testing.T, slack, review map[string]any, decs ...any) store.Record {
	t.Helper()
	if len(decs) == 0 {
		decs = []any{shipDecision}
	}
	raw := requestDoc(t, decs, slack, "")
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["extensions"].(map[string]any)["decisions"] = map[string]any{"ship": review}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	req, err := aah.Parse(out, aah.ParseOptions{Stored: true})
	if err != nil {
		t.Fatalf("reviewed document does not parse: %v", err)
	}
	if d, _ := req.Decision("ship"); d.Review == nil {
		t.Fatal("the parser dropped extensions.decisions")
	}
	return pending(out)
}

// refusalOf is the *Refusal of err (nil for none; another error fails).
func refusalOf(t *testing.T, err error) *Refusal {
	t.Helper()
	if err == nil {
		return nil
	}
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v", err)
	}
	return r
}

// Modify approves with the edited parameters, through the answer path; each
// refusal says why and changes nothing.
func TestModify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	self := map[string]any{"requested_by": "U0RILEY"}
	for _, tc := range []struct {
		name   string
		rec    func(t *testing.T) store.Record
		by     aah.Person
		edits  map[string]any
		rule   string // the refusal's rule, "" when accepted
		field  string // the refusal's field
		closed bool   // close the request first
	}{
		{"accepted", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, map[string]any{"replicas": 4.0}, "", "", false},
		{"the verb is not accepted", func(t *testing.T) store.Record {
			return reviewed(t, reviewers(nil, alice), scaleReview([]any{"approve", "reject", "defer"}))
		}, alice, map[string]any{"replicas": 4.0}, RuleVerb, "", false},
		{"no review extension", func(t *testing.T) store.Record {
			return pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
		},
			alice, map[string]any{"replicas": 4.0}, RuleVerb, "", false},
		{"gated by a quorum", func(t *testing.T) store.Record {
			return reviewed(t, reviewers(map[string]any{"quorum": 2}, alice, bob), scaleReview(nil))
		}, alice, map[string]any{"replicas": 4.0}, RuleVerb, "", false},
		{"out of bounds", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, map[string]any{"replicas": 20.0}, RuleInvalid, "param:replicas", false},
		{"not an integer", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, map[string]any{"replicas": 2.5}, RuleInvalid, "param:replicas", false},
		{"not editable", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, map[string]any{"service": "db"}, RuleInvalid, "param:service", false},
		{"not a reviewer", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			carol, map[string]any{"replicas": 4.0}, RuleReviewer, "", false},
		{"the requester", func(t *testing.T) store.Record { return reviewed(t, reviewers(self, alice, riley), scaleReview(nil)) },
			riley, map[string]any{"replicas": 4.0}, RuleSelfApproval, "", false},
		{"closed", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice, bob), scaleReview(nil)) },
			alice, map[string]any{"replicas": 4.0}, RuleClosed, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st := newCore(tc.rec(t), Policy{})
			if tc.closed {
				if _, err := c.Answer(ctx, "req-1", bob, map[string]any{"ship": true}); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := st.Get(ctx, "req-1")
			out, err := c.Modify(ctx, "req-1", "ship", tc.by, tc.edits, "four is plenty")
			r := refusalOf(t, err)
			if tc.rule != "" {
				if r == nil || r.Rule != tc.rule || r.Field != tc.field || r.Reason == "" {
					t.Fatalf("refusal %+v, want rule %q field %q", r, tc.rule, tc.field)
				}
				if after, _ := st.Get(ctx, "req-1"); !reflect.DeepEqual(after.Answers, before.Answers) || after.Status != before.Status {
					t.Errorf("a refusal changed the request: %+v", after)
				}
				return
			}
			if r != nil {
				t.Fatalf("refused: %v", r)
			}
			a := out.Record.Answers["ship"]
			want := map[string]any{"service": "api", "replicas": 4.0}
			if !out.Changed || !out.Resolved || a.Value != true || a.Verb != aah.VerbModify || !reflect.DeepEqual(a.Parameters, want) ||
				rationale(a) != "four is plenty" {
				t.Fatalf("outcome %+v answer %+v", out, a)
			}
			ans := st.events("answered")
			if len(ans) != 1 || ans[0].Data["verb"] != "modify" {
				t.Fatalf("audit %+v", ans)
			}
			changes, _ := ans[0].Data["changes"].([]map[string]any)
			if len(changes) != 1 || changes[0]["name"] != "replicas" || changes[0]["to"] != 4.0 {
				t.Errorf("audited changes %+v", ans[0].Data["changes"])
			}
			entry := response(t, out.Record).Responses[0]
			if entry.Action != aah.VerbModify || !entry.Modified || !reflect.DeepEqual(entry.Parameters, want) ||
				entry.OriginalParameters["replicas"] != 6.0 {
				t.Errorf("response entry %+v", entry)
			}
		})
	}
}

// Editing to the proposed values is a plain approval; repeating a modify
// changes nothing; a modify after it with other values replaces it.
func TestModifyRepeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(reviewed(t, reviewers(nil, alice), scaleReview(nil), shipDecision, budgetDecision), Policy{})
	out, err := c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 6.0}, "")
	if a := out.Record.Answers["ship"]; err != nil || a.Value != true || a.Verb != "" || a.Parameters != nil {
		t.Fatalf("identical values: %+v %v", a, err)
	}
	if _, err := c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 3.0}, ""); err != nil {
		t.Fatal(err)
	}
	commits := st.commits
	again, err := c.Modify(ctx, "req-1", "ship", alice, map[string]any{"replicas": 3.0}, "")
	if err != nil || again.Changed || st.commits != commits {
		t.Fatalf("double click: %+v %v (commits %d → %d)", again, err, commits, st.commits)
	}
	if a := again.Record.Answers["ship"]; a.Verb != aah.VerbModify || a.Parameters["replicas"] != 3.0 || again.Record.Status != aah.StatusPartial {
		t.Errorf("after the double click: %+v", again.Record)
	}
	// A plain approval afterwards is a change: the edited version is gone.
	plain, err := c.Answer(ctx, "req-1", alice, map[string]any{"ship": true})
	if a := plain.Record.Answers["ship"]; err != nil || !plain.Changed || a.Verb != "" || a.Parameters != nil {
		t.Errorf("approve after modify: %+v %v", a, err)
	}
}

// Reject with a reason picked from the agent's list: stored and audited;
// a reason not offered is refused; a picked reason satisfies require_reason.
func TestRejectWithPickedReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	required := map[string]any{"require_reason": true}
	for _, tc := range []struct {
		name    string
		slack   map[string]any
		r       Rejection
		rule    string
		field   string
		picked  string
		comment string
	}{
		{"picked and own words", reviewers(nil, alice), Rejection{Picked: "Too expensive", Comment: "try 3"}, "", "", "Too expensive", "try 3"},
		{"picked only, reason required", reviewers(required, alice), Rejection{Picked: "Wrong service"}, "", "", "Wrong service", ""},
		{"own words only, reason required", reviewers(required, alice), Rejection{Comment: "no"}, "", "", "", "no"},
		{"neither, reason optional", reviewers(nil, alice), Rejection{}, "", "", "", ""},
		{"neither, reason required", reviewers(required, alice), Rejection{}, RuleRequireReason, "comment", "", ""},
		{"a reason not offered", reviewers(nil, alice), Rejection{Picked: "Bad vibes"}, RuleInvalid, FieldRejectReason, "", ""},
		{"not a reviewer", reviewers(nil, bob), Rejection{Picked: "Too expensive"}, RuleReviewer, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st := newCore(reviewed(t, tc.slack, scaleReview(nil)), Policy{})
			out, err := c.RejectWith(ctx, "req-1", []string{"ship"}, alice, tc.r)
			if r := refusalOf(t, err); tc.rule != "" || r != nil {
				if r == nil || r.Rule != tc.rule || r.Field != tc.field {
					t.Fatalf("refusal %+v, want %q on %q", r, tc.rule, tc.field)
				}
				return
			}
			a := out.Record.Answers["ship"]
			if a.Value != false || a.RejectReason != tc.picked || rationale(a) != tc.comment || out.Record.Status != aah.StatusResolved {
				t.Fatalf("answer %+v status %s", a, out.Record.Status)
			}
			if ans := st.events("answered"); len(ans) != 1 || tc.picked != "" && ans[0].Data["reject_reason"] != tc.picked {
				t.Errorf("audit %+v", ans)
			}
			if entry := response(t, out.Record).Responses[0]; entry.RejectReason != tc.picked {
				t.Errorf("response entry %+v", entry)
			}
		})
	}
	// Reject all: the picked reason must be offered on every decision rejected.
	c, _ := newCore(reviewed(t, reviewers(nil, alice), scaleReview(nil), shipDecision, budgetDecision), Policy{})
	if _, err := c.RejectWith(ctx, "req-1", nil, alice, Rejection{Picked: "Too expensive"}); refusalOf(t, err) == nil ||
		refusalOf(t, err).Field != FieldRejectReason {
		t.Errorf("budget offers no reasons: %v", err)
	}
}

// Defer, change_plan and abort close the request with the directive.
func TestDirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for verb, event := range directiveEvents {
		t.Run(string(verb), func(t *testing.T) {
			t.Parallel()
			// A quorum of two: one directive still suffices (nothing is approved).
			c, st := newCore(reviewed(t, reviewers(map[string]any{"quorum": 2}, alice, bob), scaleReview(nil), shipDecision, budgetDecision), Policy{})
			if _, err := c.Answer(ctx, "req-1", bob, map[string]any{"budget": true}); err != nil {
				t.Fatal(err)
			}
			out, err := c.Direct(ctx, "req-1", alice, verb, "  try a smaller batch ")
			if err != nil || !out.Changed || !out.Resolved {
				t.Fatalf("%+v %v", out, err)
			}
			rec := out.Record
			d := rec.Directive
			if rec.Status != aah.StatusResolved || d == nil || d.Verb != verb || d.Text != "try a smaller batch" || d.By.ID != alice.ID || !d.At.Equal(t0) {
				t.Fatalf("record %+v directive %+v", rec, d)
			}
			if ev := st.events(event); len(ev) != 1 || ev[0].Actor != "human:U0ALICE" || ev[0].Data["text"] != "try a smaller batch" {
				t.Errorf("audit %s: %+v", event, ev)
			}
			if len(st.events("resolved")) != 1 || rec.Delivery.State != store.DeliveryPending {
				t.Errorf("closed without its response or delivery: %+v", rec.Delivery)
			}
			data := response(t, rec)
			if data.Directive == nil || data.Directive.Action != verb || data.Directive.DecidedBy.ID != alice.ID || data.OverallStatus != "pending" {
				t.Errorf("response %+v", data)
			}
			text := map[aah.Verb]string{aah.VerbDefer: data.Directive.Guidance, aah.VerbChangePlan: data.Directive.Requirement, aah.VerbAbort: data.Directive.Reason}[verb]
			if text != "try a smaller batch" {
				t.Errorf("the directive's text is %q", text)
			}
			// The same click again changes nothing; another verb finds it closed.
			commits := st.commits
			if again, err := c.Direct(ctx, "req-1", alice, verb, "try a smaller batch"); err != nil || again.Changed || st.commits != commits {
				t.Errorf("double click: %+v %v", again, err)
			}
			if _, err := c.Direct(ctx, "req-1", bob, verb, "other"); refusedBy(t, err) != RuleClosed {
				t.Errorf("after the close: %v", err)
			}
		})
	}
}

// Each refusal of a directive, and what it leaves.
func TestDirectRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	self := map[string]any{"requested_by": "U0RILEY"}
	for _, tc := range []struct {
		name  string
		rec   func(t *testing.T) store.Record
		by    aah.Person
		verb  aah.Verb
		text  string
		rule  string
		field string
	}{
		{"not accepted", func(t *testing.T) store.Record {
			return reviewed(t, reviewers(nil, alice), scaleReview([]any{"approve", "reject", "defer"}))
		}, alice, aah.VerbAbort, "stop", RuleVerb, ""},
		{"no review extension", func(t *testing.T) store.Record {
			return pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
		},
			alice, aah.VerbDefer, "later", RuleVerb, ""},
		{"not a directive", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, aah.VerbModify, "x", RuleInvalid, ""},
		{"no text", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, aah.VerbChangePlan, "   ", RuleInvalid, FieldText},
		{"too long", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, aah.VerbDefer, string(make([]byte, 3001)), RuleInvalid, FieldText},
		{"not a reviewer", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			carol, aah.VerbDefer, "later", RuleReviewer, ""},
		{"the requester", func(t *testing.T) store.Record { return reviewed(t, reviewers(self, alice, riley), scaleReview(nil)) },
			riley, aah.VerbAbort, "stop", RuleSelfApproval, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := tc.text
			if tc.name == "too long" {
				text = string(slices.Repeat([]rune{'x'}, 3001))
			}
			c, st := newCore(tc.rec(t), Policy{})
			_, err := c.Direct(ctx, "req-1", tc.by, tc.verb, text)
			r := refusalOf(t, err)
			if r == nil || r.Rule != tc.rule || r.Field != tc.field {
				t.Fatalf("refusal %+v, want %q on %q", r, tc.rule, tc.field)
			}
			if rec, _ := st.Get(ctx, "req-1"); rec.Status != aah.StatusPending || rec.Directive != nil {
				t.Errorf("a refusal changed the request: %+v", rec)
			}
		})
	}
}

// Two reviewers deferring at once: one directive wins, the other is told
// the request is closed.
func TestDirectRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(reviewed(t, reviewers(nil, alice, bob), scaleReview(nil)), Policy{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []aah.Person{alice, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Direct(ctx, "req-1", p, aah.VerbDefer, "from "+p.Name)
		}()
	}
	wg.Wait()
	rules := []string{refusedBy(t, errs[0]), refusedBy(t, errs[1])}
	slices.Sort(rules)
	if !slices.Equal(rules, []string{"", RuleClosed}) {
		t.Fatalf("rules %v", rules)
	}
	rec, _ := st.Get(ctx, "req-1")
	winner := alice
	if errs[0] != nil {
		winner = bob
	}
	if rec.Directive == nil || rec.Directive.By.ID != winner.ID || len(st.events("deferred")) != 1 || len(st.events("resolved")) != 1 {
		t.Errorf("directive %+v, deferred %d", rec.Directive, len(st.events("deferred")))
	}
}

// Escalating by hand: the target may answer, gets its copies job, and is
// recorded; the refusals say why.
func TestReassign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(reviewed(t, reviewers(nil, alice), scaleReview(nil)), Policy{})
	if _, err := c.Answer(ctx, "req-1", morgan, map[string]any{"ship": true}); refusedBy(t, err) != RuleReviewer {
		t.Fatalf("before: %v", err)
	}
	out, err := c.Reassign(ctx, "req-1", alice, " U0MORGAN ", "you own billing")
	if err != nil || !out.Changed {
		t.Fatalf("%+v %v", out, err)
	}
	rec := out.Record
	want := []aah.Reassignment{{By: alice, To: "U0MORGAN", At: t0, Note: "you own billing"}}
	if rec.Status != aah.StatusEscalated || !slices.Equal(rec.EscalatedTo, []string{"U0MORGAN"}) || !reflect.DeepEqual(rec.Reassignments, want) ||
		!slices.Contains(rec.IndexedReviewers, "U0MORGAN") || len(rec.EscalatedSteps) != 0 {
		t.Fatalf("record %+v", rec)
	}
	if !slices.ContainsFunc(st.jobs, func(j store.JobAt) bool { return j.ID == "escalate:req-1:-1" && j.At.Equal(t0) }) {
		t.Errorf("no copies job for step -1: %+v", st.jobs)
	}
	esc := st.events("escalated")
	if len(esc) != 1 || esc[0].Actor != "human:U0ALICE" || esc[0].Data["manual"] != true || esc[0].Data["to"] != "U0MORGAN" ||
		esc[0].Data["note"] != "you own billing" || esc[0].Data["by"] != "U0ALICE" {
		t.Errorf("audit %+v", esc)
	}
	// A double click changes nothing.
	commits := st.commits
	if again, err := c.Reassign(ctx, "req-1", alice, "U0MORGAN", "you own billing"); err != nil || again.Changed || st.commits != commits {
		t.Errorf("double click: %+v %v", again, err)
	}
	// To a group, by the new target: the next hand-made step.
	out, err = c.Reassign(ctx, "req-1", morgan, "S0LEADS", "")
	if err != nil || len(out.Record.Reassignments) != 2 || !slices.Contains(out.Record.EscalatedTo, "U0ALICE") {
		t.Fatalf("second: %+v %v", out.Record, err)
	}
	if !slices.ContainsFunc(st.jobs, func(j store.JobAt) bool { return j.ID == "escalate:req-1:-2" }) {
		t.Errorf("no copies job for step -2: %+v", st.jobs)
	}
	// The target decides, like a reviewer.
	if out, err := c.Answer(ctx, "req-1", morgan, map[string]any{"ship": true}); err != nil || out.Record.Status != aah.StatusResolved {
		t.Fatalf("morgan's answer: %+v %v", out, err)
	}
}

func TestReassignRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	self := map[string]any{"requested_by": "U0RILEY"}
	for _, tc := range []struct {
		name  string
		rec   func(t *testing.T) store.Record
		by    aah.Person
		to    string
		rule  string
		field string
	}{
		{"to yourself", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, "U0ALICE", RuleInvalid, FieldTo},
		{"to your own email", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, "alice@example.com", RuleInvalid, FieldTo},
		{"to nobody known", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, "ghost@example.com", RuleInvalid, FieldTo},
		{"to nothing", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			alice, " ", RuleInvalid, FieldTo},
		{"not accepted", func(t *testing.T) store.Record {
			return reviewed(t, reviewers(nil, alice), scaleReview([]any{"approve", "reject", "defer"}))
		}, alice, "U0MORGAN", RuleVerb, ""},
		{"not a reviewer", func(t *testing.T) store.Record { return reviewed(t, reviewers(nil, alice), scaleReview(nil)) },
			carol, "U0MORGAN", RuleReviewer, ""},
		{"the requester", func(t *testing.T) store.Record { return reviewed(t, reviewers(self, alice, riley), scaleReview(nil)) },
			riley, "U0MORGAN", RuleSelfApproval, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st := newCore(tc.rec(t), Policy{})
			_, err := c.Reassign(ctx, "req-1", tc.by, tc.to, "")
			r := refusalOf(t, err)
			if r == nil || r.Rule != tc.rule || r.Field != tc.field || r.Reason == "" {
				t.Fatalf("refusal %+v, want %q on %q", r, tc.rule, tc.field)
			}
			if rec, _ := st.Get(ctx, "req-1"); rec.Status != aah.StatusPending || rec.Reassignments != nil {
				t.Errorf("a refusal changed the request: %+v", rec)
			}
		})
	}
	// A closed request.
	c, _ := newCore(reviewed(t, reviewers(nil, alice), scaleReview(nil)), Policy{})
	if _, err := c.Answer(ctx, "req-1", alice, map[string]any{"ship": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reassign(ctx, "req-1", alice, "U0MORGAN", ""); refusedBy(t, err) != RuleClosed {
		t.Errorf("closed: %v", err)
	}
}

// rationale is the text of the answer's rationale, "" for none.
func rationale(a aah.Answer) string { c, _ := a.Rationale(); return c.Text }

// CheckVerb, before a verb's modal opens: the same refusals as the verb
// itself, audited; nothing else changes.
func TestCheckVerb(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	self := map[string]any{"requested_by": "U0RILEY"}
	c, st := newCore(reviewed(t, reviewers(self, alice, riley), scaleReview([]any{"approve", "reject", "modify", "defer"}), shipDecision, budgetDecision), Policy{})
	const scope = "_request" // blocks.RequestScope: a request-level verb's modal
	gated, _ := newCore(reviewed(t, reviewers(map[string]any{"quorum": 2}, alice, bob), scaleReview(nil)), Policy{})
	for _, tc := range []struct {
		name     string
		c        *Core
		by       aah.Person
		decision string
		verb     aah.Verb
		rule     string
	}{
		{"modify", c, alice, "ship", aah.VerbModify, ""},
		{"defer", c, alice, scope, aah.VerbDefer, ""},
		{"modify a decision without it", c, alice, "budget", aah.VerbModify, RuleVerb},
		{"modify a gated decision", gated, alice, "ship", aah.VerbModify, RuleVerb},
		{"a verb not offered", c, alice, scope, aah.VerbAbort, RuleVerb},
		{"not a verb", c, alice, scope, "dance", RuleInvalid},
		{"approve is no modal's", c, alice, scope, aah.VerbApprove, RuleInvalid},
		{"not a reviewer", c, carol, scope, aah.VerbDefer, RuleReviewer},
		{"the requester", c, riley, "ship", aah.VerbModify, RuleSelfApproval},
	} {
		if got := refusedBy(t, tc.c.CheckVerb(ctx, "req-1", tc.decision, tc.by, tc.verb)); got != tc.rule {
			t.Errorf("%s: refused by %q, want %q", tc.name, got, tc.rule)
		}
	}
	if rec, _ := st.Get(ctx, "req-1"); rec.Status != aah.StatusPending || rec.Version != 1 || len(st.events("click_refused")) != 6 {
		t.Errorf("checks changed the request: %+v, %d refusals audited", rec, len(st.events("click_refused")))
	}
}

// A directive's close is counted once, under its verb's outcome.
func TestDirectiveMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	st := newFakeStore(reviewed(t, reviewers(nil, alice), scaleReview(nil)))
	c := New(st, Options{Now: func() time.Time { return t0 }, Directory: fakeDirectory{}, Metrics: m})
	for range 2 {
		if _, err := c.Direct(ctx, "req-1", alice, aah.VerbAbort, "stop the run"); err != nil {
			t.Fatal(err)
		}
	}
	for outcome, want := range map[string]float64{OutcomeAborted: 1, OutcomeDeferred: 0, OutcomeResolved: 0} {
		if got, _, _ := sample(t, reg, "approvalbot_decisions_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("decisions{%s} = %v, want %v", outcome, got, want)
		}
	}
}
