package approval

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
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

// rationale is the text of the answer's rationale, "" for none.
func rationale(a aah.Answer) string { c, _ := a.Rationale(); return c.Text }
