package approval

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

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
	// Alice's first submission, retried late (after Morgan's escalation),
	// adds nothing: no new step, no second copy for Morgan.
	commits = st.commits
	if again, err := c.Reassign(ctx, "req-1", alice, "U0MORGAN", "you own billing"); err != nil || again.Changed || st.commits != commits ||
		len(again.Record.Reassignments) != 2 {
		t.Errorf("late retry: %+v %v", again.Record.Reassignments, err)
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
		{"to the requester", func(t *testing.T) store.Record { return reviewed(t, reviewers(self, alice, riley), scaleReview(nil)) },
			alice, "U0RILEY", RuleInvalid, FieldTo},
		{"to the requester's email", func(t *testing.T) store.Record { return reviewed(t, reviewers(self, alice), scaleReview(nil)) },
			alice, "riley@example.com", RuleInvalid, FieldTo},
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

// countingDirectory is fakeDirectory, counting its lookups.
type countingDirectory struct {
	fakeDirectory
	mu      sync.Mutex
	lookups []string
}

func (d *countingDirectory) UserIDByEmail(ctx context.Context, email string) (string, error) {
	d.mu.Lock()
	d.lookups = append(d.lookups, email)
	d.mu.Unlock()
	return d.fakeDirectory.UserIDByEmail(ctx, email)
}

func (d *countingDirectory) GroupMembers(ctx context.Context, group string) ([]string, error) {
	d.mu.Lock()
	d.lookups = append(d.lookups, group)
	d.mu.Unlock()
	return d.fakeDirectory.GroupMembers(ctx, group)
}

// A person who may not decide the request is refused before the target is
// looked up: they learn nothing about it (an email that resolves or not, a
// group's members), and the refusal is audited.
func TestReassignRefusesBeforeResolvingTheTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, to := range []string{"ghost@example.com", "alice@example.com", "S0LEADS", "S0NOBODY", "not a target"} {
		st := newFakeStore(reviewed(t, reviewers(nil, alice), scaleReview(nil)))
		dir := &countingDirectory{}
		c := New(st, Options{Now: func() time.Time { return t0 }, Directory: dir})
		_, err := c.Reassign(ctx, "req-1", carol, to, "")
		if r := refusalOf(t, err); r == nil || r.Rule != RuleReviewer || r.Field != "" {
			t.Errorf("to %q: refusal %+v, want the reviewer rule", to, r)
		}
		if slices.Contains(dir.lookups, strings.ToLower(to)) {
			t.Errorf("to %q: the target was looked up for a non-reviewer: %v", to, dir.lookups)
		}
		refused := st.events("click_refused")
		if len(refused) != 1 || refused[0].Data["rule"] != RuleReviewer || refused[0].Data["action"] != string(aah.VerbEscalate) {
			t.Errorf("to %q: audit %+v", to, refused)
		}
		if rec, _ := st.Get(ctx, "req-1"); rec.Status != aah.StatusPending || rec.Reassignments != nil {
			t.Errorf("to %q: the refusal changed the request: %+v", to, rec)
		}
	}
}

// Escalating to the requester hands the request to someone who may decide
// it only when self-approval is allowed.
func TestReassignToTheRequesterWithSelfApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newCore(reviewed(t, reviewers(map[string]any{"requested_by": "U0RILEY"}, alice), scaleReview(nil)),
		Policy{Defaults: aah.Defaults{AllowSelfApproval: true}})
	if out, err := c.Reassign(ctx, "req-1", alice, "U0RILEY", ""); err != nil || !out.Changed {
		t.Fatalf("%+v, %v", out, err)
	}
	if out, err := c.Answer(ctx, "req-1", riley, map[string]any{"ship": true}); err != nil || !out.Resolved {
		t.Errorf("the requester, escalated to, with self-approval: %+v, %v", out, err)
	}
}
