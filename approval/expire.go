package approval

import (
	"context"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Deadline applies a request's on_deadline action once its deadline has
// passed (the expire timer fired). It does nothing to a request that is no
// longer open, so the timer firing twice, or late, is harmless.
//
//   - expire (the default): status expired. The response's overall_status is
//     "pending" (nothing was decided) and it lists what was answered.
//   - apply_defaults: every unanswered decision takes its default (marked
//     "defaulted"); the request resolves, or expires when a required decision
//     has neither an answer nor a default.
//   - approve / reject: every unanswered approval decision is approved or
//     rejected (marked "timed_out"); other unanswered decisions take their
//     default; the request resolves, or expires as above.
//
// Neither approves a gated approval decision (one needing several sign-offs
// or a role: APPROVAL_QUORUM, required_roles), as Submit's defaults never
// do: the agent being supervised would otherwise skip the workspace's floor
// by its own choice of on_deadline. It stays unanswered (a required one
// expires the request); rejecting it at the deadline is allowed.
//
// The system, not a person, closes the request: the response's source is
// system:approvalbot, and the audit records the action.
func (c *Core) Deadline(ctx context.Context, requestID string) (Outcome, error) {
	var out Outcome
	rec, err := c.update(ctx, requestID, func(rec store.Record) (*store.Change, error) {
		out = Outcome{}
		if !rec.Status.Open() {
			return nil, nil
		}
		req, err := rec.Request()
		if err != nil {
			return nil, err
		}
		answered := cloneAnswers(rec.Answers)
		gated := req.Rules(c.policy.Defaults.For(rec.Agent)).Gated()
		filled, missing := fillAtDeadline(req, answered, req.OnDeadline, gated)
		ch := &store.Change{Audit: []store.AuditEvent{{Event: "deadline_passed", Actor: "system",
			Data: map[string]any{"on_deadline": string(req.OnDeadline), "required_unanswered": missing}}}}
		out.Changed = true
		if req.OnDeadline == aah.DeadlineExpire || len(missing) > 0 {
			return c.closeWith(rec, req, answered, aah.Person{}, "", ch, aah.OutcomeExpired, ""), nil
		}
		for _, dec := range req.Data.Decisions {
			if a := filled[dec.ID]; a.Defaulted || a.TimedOut {
				ch.Answers = append(ch.Answers, a)
			}
		}
		out.Resolved = true
		return c.closeWith(rec, req, filled, aah.Person{}, "", ch, aah.OutcomeResolved, ""), nil
	})
	out.Record = rec
	return out, err
}

// fillAtDeadline answers the unanswered decisions as action says and returns
// the answers with the prompts of required decisions still without a value.
// With gated (the request's approvals need several sign-offs or a role), no
// approval decision is approved.
func fillAtDeadline(req *aah.Request, answers map[string]aah.Answer, action aah.DeadlineAction, gated bool) (map[string]aah.Answer, []string) {
	filled := cloneAnswers(answers)
	var missing []string
	for _, dec := range req.Data.Decisions {
		if a, ok := filled[dec.ID]; ok && a.Answered() {
			continue
		}
		a := filled[dec.ID]
		a.DecisionID = dec.ID
		approvesGated := gated && dec.Type == aah.TypeApproval
		switch {
		case dec.Type == aah.TypeApproval && action == aah.DeadlineReject,
			dec.Type == aah.TypeApproval && action == aah.DeadlineApprove && !approvesGated:
			a.Value, a.TimedOut = action == aah.DeadlineApprove, true
		case action != aah.DeadlineExpire && dec.HasDefault() && !(approvesGated && dec.Default == true):
			a.Value, a.Defaulted = dec.Default, true
		case dec.Required:
			missing = append(missing, dec.Prompt)
			continue
		default:
			continue
		}
		filled[dec.ID] = a
	}
	return filled, missing
}
