package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Modify approves one approval decision with edited parameters of its
// proposed action (the "modify" verb): edited holds the parameters the
// person changed, by name; the answer records the full set (edited and
// unedited) with Verb aah.VerbModify, through the same path as Answer, so
// self-approval, resolution on the last answer and the audit apply alike.
// comment, when not blank, is their comment on the decision, recorded in
// the same update.
//
// The decision must accept modify (its extensions.decisions responses and
// editable parameters) and must not need several sign-offs: a quorum or
// required roles approve what was proposed, so an edited version would
// need their sign-offs again (a documented limitation). An edit that is
// not editable, or does not fit its declared type and constraints, is
// refused with Field FieldParam + its name. Edits that change nothing are a
// plain approval.
func (c *Core) Modify(ctx context.Context, requestID, decisionID string, by aah.Person, edited map[string]any, comment string) (Outcome, error) {
	return c.act(ctx, requestID, by, "modify", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		dec, ok := req.Decision(decisionID)
		if !ok {
			return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", decisionID), Field: FieldDecision, Rule: RuleInvalid}
		}
		if err := modifiable(dec, g); err != nil {
			return nil, err
		}
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		full, err := aah.CheckParameters(dec, edited)
		if err != nil {
			var pe *aah.ParamError
			if errors.As(err, &pe) {
				return nil, &Refusal{Reason: fmt.Sprintf("%s %s.", pe.Param, pe.Message), Field: FieldParam + pe.Param, Rule: RuleInvalid}
			}
			return nil, &Refusal{Reason: err.Error(), Rule: RuleInvalid}
		}
		o := answerOpts{}
		if changes := aah.ChangedParameters(dec.Review.Action.Parameters, full); len(changes) > 0 {
			list := make([]map[string]any, len(changes))
			for i, ch := range changes {
				list[i] = map[string]any{"name": ch.Name, "from": ch.From, "to": ch.To}
			}
			o = answerOpts{verb: aah.VerbModify, params: full, audit: map[string]any{"verb": string(aah.VerbModify), "changes": list}}
		}
		answers := cloneAnswers(rec.Answers)
		var commented *store.Change
		if strings.TrimSpace(comment) != "" { // a blank one leaves theirs as it is
			if commented, err = c.comment(rec, req, g, decisionID, by, comment); err != nil {
				return nil, err
			}
			if commented != nil {
				answers[decisionID] = commented.Answers[0]
			}
		}
		return c.answerWith(rec, req, g, out, answers, by, map[string]any{decisionID: true}, o, commented)
	})
}

// modifiable refuses modify on a decision that does not accept it, or that
// needs several sign-offs (see Modify).
func modifiable(dec aah.Decision, g grant) error {
	if !dec.Accepts(aah.VerbModify) {
		return &Refusal{Reason: fmt.Sprintf("“%s” cannot be approved with changes: the agent accepts no edited parameters for it.", dec.Prompt),
			Rule: RuleVerb}
	}
	if g.gated(dec) {
		return &Refusal{Reason: fmt.Sprintf("“%s” needs several sign-offs (a quorum or required roles), so it cannot be "+
			"approved with changes: the others would have approved something else. Approve or reject it as proposed.", dec.Prompt),
			Rule: RuleVerb}
	}
	return nil
}
