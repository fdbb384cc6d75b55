package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Rules of intake's policy refusals, recorded in the audit
// (store.IntakeRefusal.Rule).
const (
	// RulePolicyFloor: the request sets a sign-off rule looser than the
	// workspace's, and its agent may not.
	RulePolicyFloor = "policy_floor"
	// RuleNoDeciders: the request names nobody who may decide it, and
	// neither does the workspace.
	RuleNoDeciders = "no_deciders"
)

// settingOf names the workspace setting behind each sign-off field.
var settingOf = map[string]string{
	"extensions.slack.quorum":              "APPROVAL_QUORUM",
	"extensions.slack.allow_self_approval": "ALLOW_SELF_APPROVAL",
	"extensions.slack.require_reason":      "REQUIRE_REASON",
}

// policyProblems are the ways a valid request from agent breaks the
// workspace's authorization policy: sign-off rules it would loosen (the
// workspace's are a floor), and naming nobody where the workspace names
// nobody for such requests either. rule is the first problem's rule.
func (a *API) policyProblems(req *aah.Request, agent string) (rule string, probs []aah.FieldError) {
	for _, l := range req.Loosenings(a.opts.Defaults.For(agent)) {
		setting := settingOf[l.Field]
		verb := "is looser than"
		if l.Field == "extensions.slack.quorum" {
			verb = "is below"
		}
		probs = append(probs, aah.FieldError{Field: l.Field, Message: fmt.Sprintf(
			"%s %s the workspace's %s=%s: a request may tighten the workspace's rules, not loosen them "+
				"(unless the operator lists agent %q in POLICY_OVERRIDE_AGENTS)", l.Asked, verb, setting, l.Floor, agent)})
	}
	if len(probs) > 0 {
		rule = RulePolicyFloor
	}
	if !req.NamesDeciders() && !a.opts.DecidesUnnamed {
		probs = append(probs, aah.FieldError{Field: "extensions.slack.reviewers", Message: "is required: this request " +
			"names nobody who may decide it, and the workspace names nobody for such requests. Name " +
			"extensions.slack.reviewers, reviewer_groups or required_roles, or ask the operator to set " +
			"DEFAULT_REVIEWERS (or DEFAULT_REVIEWER_GROUPS)"})
		if rule == "" {
			rule = RuleNoDeciders
		}
	}
	return rule, probs
}

// refuseByPolicy answers a request the policy refuses with 400, after
// auditing the refusal (without storing the request). When the audit
// cannot be written the answer is 500, so the agent retries and the
// refusal it then gets is audited: no refusal goes unrecorded.
func (a *API) refuseByPolicy(ctx context.Context, w http.ResponseWriter, r *http.Request, raw []byte, agent, rule string, probs []aah.FieldError) {
	// The id as sent (validate generates one when there is none) and the
	// body's hash as received: what the agent can match its copy against.
	var sent struct {
		Artifact struct {
			ID string `json:"id"`
		} `json:"artifact"`
	}
	_ = json.Unmarshal(raw, &sent) // raw is valid JSON: it passed validate
	sum := sha256.Sum256(raw)
	refusal := store.IntakeRefusal{ArtifactID: sent.Artifact.ID, Agent: agent, BodyHash: hex.EncodeToString(sum[:]), Rule: rule}
	for _, p := range probs {
		refusal.Problems = append(refusal.Problems, p.Field+": "+p.Message)
	}
	if err := a.opts.Store.AuditIntakeRefusal(ctx, refusal); err != nil {
		a.opts.Metrics.intake("error")
		a.internal(w, r, "audit a refused request", err)
		return
	}
	a.opts.Metrics.intake("refused")
	a.log.WarnContext(ctx, "intake: request refused by the workspace's policy", "agent", agent,
		"artifact_id", sent.Artifact.ID, "rule", rule, "first_field", probs[0].Field)
	msg := "decision request refused by the workspace's authorization policy: 1 problem"
	if len(probs) > 1 {
		msg = fmt.Sprintf("decision request refused by the workspace's authorization policy: %d problems", len(probs))
	}
	writeError(w, http.StatusBadRequest, msg, probs...)
}
