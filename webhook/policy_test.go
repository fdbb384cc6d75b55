package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// seedAt is the moment of the seed example: its deadline is the next day.
var seedAt = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)

// seedWith is the seed example with artifact.id id and extensions.slack
// slack (nil: none).
func seedWith(t *testing.T, id string, slack map[string]any) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/seed000_request.json")
	mustNil(t, err)
	var doc map[string]any
	mustNil(t, json.Unmarshal(raw, &doc))
	doc["artifact"].(map[string]any)["id"] = id
	if slack != nil {
		doc["extensions"] = map[string]any{"slack": slack}
	}
	out, err := json.Marshal(doc)
	mustNil(t, err)
	return out
}

func (a *api) submit(token string, body []byte) response {
	a.t.Helper()
	r, _ := a.post(token, body)
	return r
}

// Intake refuses what the workspace's policy refuses, naming the field and
// the setting, audits the refusal and stores nothing; it accepts what the
// policy allows.
func TestIntakePolicy(t *testing.T) {
	t.Parallel()
	strict := aah.Defaults{Quorum: 2, RequireReason: true, OverrideAgents: []string{"other"}}
	named := map[string]any{"reviewer_groups": []any{"S0LEADS"}}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"reviewer_groups": []any{"S0LEADS"}}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name           string
		defaults       aah.Defaults
		decidesUnnamed bool
		token          string
		slack          map[string]any
		status         int
		rule           string            // the audited rule of a refusal
		fields         map[string]string // field -> part of its message
	}{
		{"quorum below the floor", strict, true, tokenPM, with("quorum", 1), 400, approval.RulePolicyFloor,
			map[string]string{"extensions.slack.quorum": "1 is below the workspace's APPROVAL_QUORUM=2"}},
		{"self-approval where forbidden", strict, true, tokenPM, with("allow_self_approval", true), 400, approval.RulePolicyFloor,
			map[string]string{"extensions.slack.allow_self_approval": "true is looser than the workspace's ALLOW_SELF_APPROVAL=false"}},
		{"no reason where required", strict, true, tokenPM, with("require_reason", false), 400, approval.RulePolicyFloor,
			map[string]string{"extensions.slack.require_reason": `REQUIRE_REASON=true: a request may tighten the workspace's rules, not loosen them (unless the operator lists agent "pm" in POLICY_OVERRIDE_AGENTS)`}},
		{"the granted agent may loosen", strict, true, tokenOther, with("quorum", 1, "allow_self_approval", true, "require_reason", false), 202, "", nil},
		{"tightening", aah.Defaults{}, true, tokenPM, with("quorum", 3, "require_reason", true, "allow_self_approval", false), 202, "", nil},
		{"restating the floor", strict, true, tokenPM, with("quorum", 2, "require_reason", true), 202, "", nil},
		{"self-approval where allowed", aah.Defaults{AllowSelfApproval: true}, true, tokenPM, with("allow_self_approval", true), 202, "", nil},
		{"unnamed, nobody configured", aah.Defaults{}, false, tokenPM, nil, 400, approval.RuleNoDeciders,
			map[string]string{"extensions.slack.reviewers": "ask the operator to set DEFAULT_REVIEWERS"}},
		{"unnamed, someone configured", aah.Defaults{}, true, tokenPM, nil, 202, "", nil},
		{"named, nobody configured", aah.Defaults{}, false, tokenPM, named, 202, "", nil},
		{"escalation only is not named", aah.Defaults{}, false, tokenPM, map[string]any{"channel": "#approvals"}, 400, approval.RuleNoDeciders,
			map[string]string{"extensions.slack.reviewers": "names nobody who may decide it"}},
		{"both kinds at once", aah.Defaults{RequireReason: true}, false, tokenPM, map[string]any{"require_reason": false}, 400,
			approval.RulePolicyFloor, map[string]string{"extensions.slack.require_reason": "REQUIRE_REASON=true",
				"extensions.slack.reviewers": "DEFAULT_REVIEWERS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.api(func(o *webhook.Options) {
				policy := approval.Policy{Defaults: tc.defaults}
				if tc.decidesUnnamed {
					policy.Reviewers = []string{"U0LEAD"}
				}
				o.Lifecycle = approval.New(e.st, approval.Options{Now: e.now, Policy: policy})
				o.Now = func() time.Time { return seedAt }
			})
			r := a.submit(tc.token, seedWith(t, "policy-1", tc.slack))
			if r.Status != tc.status {
				t.Fatalf("POST: %d %s, want %d", r.Status, r.Body, tc.status)
			}
			ctx := context.Background()
			refusals, err := e.st.IntakeRefusals(ctx)
			mustNil(t, err)
			if tc.status != 400 {
				if len(refusals) != 0 {
					t.Errorf("an accepted request was audited as refused: %+v", refusals)
				}
				return
			}
			var body struct {
				Details []aah.FieldError `json:"details"`
			}
			mustNil(t, json.Unmarshal(r.Body, &body))
			for field, want := range tc.fields {
				found := false
				for _, d := range body.Details {
					found = found || d.Field == field && strings.Contains(d.Message, want)
				}
				if !found {
					t.Errorf("no detail for %s containing %q: %+v", field, want, body.Details)
				}
			}
			if len(body.Details) != len(tc.fields) {
				t.Errorf("details = %+v, want %d", body.Details, len(tc.fields))
			}
			if _, err := e.st.Get(ctx, "policy-1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused request was stored: %v", err)
			}
			if len(refusals) != 1 || refusals[0].RequestID != "policy-1" || refusals[0].Actor != "agent:pm" ||
				refusals[0].Data["rule"] != tc.rule || len(refusals[0].Data["problems"].([]any)) != len(tc.fields) {
				t.Errorf("audited refusals = %+v, want one by agent pm with rule %s", refusals, tc.rule)
			}
		})
	}
}
