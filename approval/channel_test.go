package approval

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// Actions taken through the decision API, by a reviewer or by an agent with
// a reviewer's authority, go through the same rules as clicks; the audit
// records the channel and the agent beside the person; an agent never
// decides a request it sent itself.
func TestActionsThroughTheAPI(t *testing.T) {
	t.Parallel()
	aliceAPI := aah.Person{ID: alice.ID, Name: alice.Name, Via: aah.ViaAPI}
	// The agent "checker" acting with Bob's authority; "pm" is the agent
	// that sent the requests (pending's Agent).
	checker := aah.Person{ID: bob.ID, Name: "checker", Agent: "checker", Via: aah.ViaAPI}
	ownAgent := aah.Person{ID: bob.ID, Name: "pm", Agent: "pm", Via: aah.ViaAPI}
	carolAPI := aah.Person{ID: carol.ID, Via: aah.ViaAPI}
	rileyAPI := aah.Person{ID: riley.ID, Via: aah.ViaAPI}
	for _, tc := range []struct {
		name  string
		by    aah.Person
		slack map[string]any
		act   func(c *Core, by aah.Person) (Outcome, error)
		rule  string // the refusal's rule, "" when accepted
		field string // the refusal's field
	}{
		{"a reviewer answers", aliceAPI, reviewers(nil, alice, bob), answerShip(true), "", ""},
		{"an agent approver answers with its reviewer's authority", checker, reviewers(nil, alice, bob), answerShip(true), "", ""},
		{"an agent never decides its own request", ownAgent, reviewers(nil, alice, bob), answerShip(true), RuleSelfApproval, ""},
		{"... not even with self-approval allowed", ownAgent, reviewers(map[string]any{"allow_self_approval": true}, alice, bob),
			answerShip(true), RuleSelfApproval, ""},
		{"... nor submits it", ownAgent, reviewers(nil, alice, bob),
			func(c *Core, by aah.Person) (Outcome, error) { return c.Submit(context.Background(), "req-1", by) }, RuleSelfApproval, ""},
		{"... but may comment", ownAgent, reviewers(nil, alice, bob),
			func(c *Core, by aah.Person) (Outcome, error) {
				return c.Comment(context.Background(), "req-1", "ship", by, "context")
			}, "", ""},
		{"someone not named is refused", carolAPI, reviewers(nil, alice, bob), answerShip(true), RuleReviewer, ""},
		{"the requester is refused", rileyAPI, reviewers(map[string]any{"requested_by": riley.ID}, alice, riley), answerShip(true), RuleSelfApproval, ""},
		{"a rejection needs its reason", aliceAPI, reviewers(map[string]any{"require_reason": true}, alice, bob), answerShip(false),
			RuleRequireReason, "comment"},
		{"an unknown decision names the field", aliceAPI, reviewers(nil, alice, bob),
			func(c *Core, by aah.Person) (Outcome, error) {
				return c.Answer(context.Background(), "req-1", by, map[string]any{"nope": true})
			}, RuleInvalid, FieldDecision},
		{"an invalid value names the field", aliceAPI, reviewers(nil, alice, bob),
			func(c *Core, by aah.Person) (Outcome, error) {
				return c.Answer(context.Background(), "req-1", by, map[string]any{"ship": "yes"})
			}, RuleInvalid, "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, st := newCore(pending(requestDoc(t, []any{shipDecision}, tc.slack, "")), Policy{})
			_, err := tc.act(c, tc.by)
			if got := refusedBy(t, err); got != tc.rule {
				t.Fatalf("refused by %q, want %q (%v)", got, tc.rule, err)
			}
			var r *Refusal
			if errors.As(err, &r) && r.Field != tc.field {
				t.Errorf("refusal field %q, want %q", r.Field, tc.field)
			}
			// Every entry of the person's carries the channel (and the agent).
			entries := 0
			for _, e := range st.audit {
				if e.Actor != tc.by.AgentID() {
					continue
				}
				entries++
				if e.Data["via"] != aah.ViaAPI {
					t.Errorf("%s entry without via=api: %+v", e.Event, e)
				}
				if tc.by.Agent != "" && (e.Data["agent"] != tc.by.Agent || e.Data["user"] != tc.by.ID) {
					t.Errorf("%s entry of an agent without agent and user: %+v", e.Event, e)
				}
			}
			if entries == 0 {
				t.Errorf("nothing audited as %s: %+v", tc.by.AgentID(), st.audit)
			}
			got, _ := st.Get(context.Background(), "req-1")
			if tc.rule != "" && (got.Version != 1 || len(got.Answers) != 0) {
				t.Errorf("a refusal changed the request: %+v", got)
			}
		})
	}
}

func answerShip(v bool) func(c *Core, by aah.Person) (Outcome, error) {
	return func(c *Core, by aah.Person) (Outcome, error) {
		return c.Answer(context.Background(), "req-1", by, map[string]any{"ship": v})
	}
}

// An agent approver's resolution names the agent as the response's source,
// and the answer keeps who it acted as.
func TestAgentApproverResolves(t *testing.T) {
	t.Parallel()
	c, st := newCore(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice, bob), "")), Policy{})
	checker := aah.Person{ID: bob.ID, Name: "checker", Agent: "checker", Via: aah.ViaAPI}
	out, err := c.Answer(context.Background(), "req-1", checker, map[string]any{"ship": true})
	if err != nil || !out.Resolved {
		t.Fatalf("answer: %+v %v", out, err)
	}
	if a := out.Record.Answers["ship"]; a.By != checker {
		t.Errorf("answer by %+v, want %+v", a.By, checker)
	}
	resolved := st.events("resolved")
	if len(resolved) != 1 || resolved[0].Actor != "agent:checker" || resolved[0].Data["via"] != aah.ViaAPI {
		t.Errorf("resolved entries: %+v", resolved)
	}
	if got := string(out.Record.Response); !strings.Contains(got, `"agent_id":"agent:checker"`) {
		t.Errorf("response source is not the agent: %s", got)
	}
}
