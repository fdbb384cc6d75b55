package approval

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Submit resolves a request with several decisions once every required one
// is answered. A decision whose control shows its default preselected (a
// menu, a multi-select, a date picker) counts as answered by the submitter
// with that value, marked "default_accepted": what the reviewer saw
// selected is what is sent. Other unanswered optional decisions then take
// their default (marked "defaulted" in the response), except that a
// default may reject a gated approval, never approve it.
func (c *Core) Submit(ctx context.Context, requestID string, by aah.Person) (Outcome, error) {
	return c.SubmitWithComment(ctx, requestID, by, "")
}

// MaxSubmitComment bounds the overall comment given with Submit, in
// characters: what Slack's text input takes.
const MaxSubmitComment = aah.MaxTextLength

// SubmitWithComment is Submit with the submitter's overall comment: their
// own summary of the decision, carried in the response as data.comment
// next to the machine's summary and recorded in the audit ("submitted").
// A blank comment is none.
func (c *Core) SubmitWithComment(ctx context.Context, requestID string, by aah.Person, comment string) (Outcome, error) {
	comment = strings.TrimSpace(comment)
	return c.act(ctx, requestID, by, "submit", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if n := utf8.RuneCountInString(comment); n > MaxSubmitComment {
			return nil, &Refusal{Reason: fmt.Sprintf("The comment is %d characters long; at most %d fit.", n, MaxSubmitComment),
				Field: FieldComment, Rule: RuleInvalid}
		}
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		answers, accepted, missing, err := c.defaultsOnSubmit(rec, req, g, by)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return nil, &Refusal{Reason: "Answer every required decision before submitting. Still open: " + strings.Join(missing, "; "), Field: FieldRequired, Rule: RuleInvalid}
		}
		out.Changed, out.Resolved = true, true
		submitted := store.AuditEvent{Event: "submitted", Actor: by.AgentID()}
		if comment != "" {
			submitted.Data = map[string]any{"comment": comment}
		}
		ch := &store.Change{Bump: true, Audit: append(accepted, submitted)}
		for _, dec := range req.Data.Decisions {
			if a := answers[dec.ID]; a.Defaulted || a.DefaultAccepted {
				ch.Answers = append(ch.Answers, a)
			}
		}
		return c.resolve(rec, req, answers, by, g, ch, comment), nil
	})
}

// defaultsOnSubmit fills the unanswered decisions as Submit does: the
// answers, the audit entries of the defaults the submitter accepted, and
// the prompts of required decisions still open.
func (c *Core) defaultsOnSubmit(rec store.Record, req *aah.Request, g grant, by aah.Person) (map[string]aah.Answer, []store.AuditEvent, []string, error) {
	answers := cloneAnswers(rec.Answers)
	now := c.now().UTC()
	var missing []string
	var accepted []store.AuditEvent
	for _, dec := range req.Data.Decisions {
		if a, ok := answers[dec.ID]; ok && a.Answered() {
			continue
		}
		if v, ok := dec.PreselectedDefault(); ok {
			// The control showed this value selected when they clicked
			// Submit: what they saw is what is recorded, as theirs.
			if _, err := aah.CheckAnswer(dec, v); err != nil {
				return nil, nil, nil, fmt.Errorf("default of decision %q of %s: %w", dec.ID, rec.ID, err)
			}
			a := answers[dec.ID]
			a.DecisionID, a.Value, a.By, a.At, a.DefaultAccepted = dec.ID, v, by, now, true
			answers[dec.ID] = a
			accepted = append(accepted, store.AuditEvent{Event: "answered", Actor: by.AgentID(),
				Data: map[string]any{"decision_id": dec.ID, "value": v, "default_accepted": true}})
			continue
		}
		switch {
		case dec.Required:
			missing = append(missing, dec.Prompt)
		case dec.HasDefault() && !(dec.Type == aah.TypeApproval && g.rules.Gated() && dec.Default == true):
			// A default may reject a gated approval, never approve it:
			// that would skip its quorum and roles. It stays unanswered.
			a := answers[dec.ID]
			a.DecisionID, a.Value, a.Defaulted, a.At = dec.ID, dec.Default, true, time.Time{}
			answers[dec.ID] = a
		}
	}
	return answers, accepted, missing, nil
}

// resolve turns the change into the resolution: status resolved, the
// immutable response artifact, and its delivery, all in the same
// transaction (see closeWith). g is the resolver's grant: the required
// roles they hold become the response's source.agent_role.
func (c *Core) resolve(rec store.Record, req *aah.Request, answers map[string]aah.Answer, by aah.Person, g grant, ch *store.Change, comment string) *store.Change {
	return c.closeWith(rec, req, answers, by, strings.Join(g.auth.roles, ","), ch, aah.OutcomeResolved, comment)
}
