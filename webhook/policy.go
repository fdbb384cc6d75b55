package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// refuseByPolicy answers a request the policy refuses (approval.Core.Create)
// with 400, after
// auditing the refusal (without storing the request). When the audit
// cannot be written the answer is 500, so the agent retries and the
// refusal it then gets is audited: no refusal goes unrecorded.
func (a *API) refuseByPolicy(ctx context.Context, w http.ResponseWriter, r *http.Request, raw []byte, agent string, refused *approval.PolicyRefusal) {
	rule, probs := refused.Rule, refused.Problems
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
		a.failed(w, r, "audit a refused request", err)
		return
	}
	a.opts.Metrics.intake("refused")
	a.log.WarnContext(ctx, "intake: request refused by the workspace's policy", "agent", agent,
		"artifact_id", sent.Artifact.ID, "rule", rule, "first_field", probs[0].Field)
	msg := "decision request refused by the workspace's authorization policy: 1 problem"
	if len(probs) > 1 {
		msg = fmt.Sprintf("decision request refused by the workspace's authorization policy: %d problems", len(probs))
	}
	writeProblem(w, r, http.StatusBadRequest, "policy", problem{Error: msg, Details: probs})
}
