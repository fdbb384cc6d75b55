package approval

import (
	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/google/uuid"
)

// closeWith closes the request with its response: resolved, or expired (the
// deadline passed; the response says nothing was decided). The response is
// built once, here, and never changes; its delivery to the agent is
// scheduled in the same change. A directive in ch (defer, change_plan,
// abort) goes into the response, which then says nothing was decided. by
// is who resolved it (zero: the system,
// whose response source is system:approvalbot); role is the required roles
// they hold. comment is the resolver's overall comment (data.comment; ""
// for none). A request escalated before it closes says so in the response
// (data.escalated, data.escalated_at): its status does not survive.
func (c *Core) closeWith(rec store.Record, req *aah.Request, answers map[string]aah.Answer, by aah.Person, role string, ch *store.Change, outcome, comment string) *store.Change {
	now := c.now().UTC()
	escalatedAt := rec.EscalatedAt
	if e := ch.Escalation; escalatedAt.IsZero() && e != nil && (len(e.To) > 0 || len(e.Channels) > 0) {
		escalatedAt = e.At
	}
	resp := aah.BuildResponse(req, answers, aah.ResponseOptions{
		ID: "aah_decision_resp_" + uuid.NewString(), CreatedAt: now, ResolvedBy: by, ResolverRole: role, Outcome: outcome,
		Directive: ch.Directive, Comment: comment, Escalated: rec.Escalated(), EscalatedAt: escalatedAt,
	})
	ch.Status = aah.StatusResolved
	event := "resolved"
	if outcome == aah.OutcomeExpired {
		ch.Status, event = aah.StatusExpired, "expired"
	}
	ch.Bump = true
	ch.Resolution = &store.Resolution{Response: resp.JSON(), At: now, By: by,
		// expects_response: false sends nothing (records stored before
		// intake dropped the URL for it too); GET and long polls still
		// serve the response.
		Deliver: rec.ResponseURL != "" && req.CallbackURL() != "", WebhookID: "msg_" + resp.Artifact.ID}
	if !ch.Resolution.Deliver {
		ch.Resolution.WebhookID = ""
	}
	actor := by.AgentID()
	if by.ID == "" {
		actor = "system"
	}
	ch.Audit = append(ch.Audit, store.AuditEvent{Event: event, Actor: actor,
		Data: map[string]any{"overall_status": resp.Content.Body.Data.OverallStatus, "response_id": resp.Artifact.ID}})
	if c := resp.Content.Body.Data.Comment; c != nil {
		ch.Audit[len(ch.Audit)-1].Data["comment"] = c.Text
	}
	return ch
}
