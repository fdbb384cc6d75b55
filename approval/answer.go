package approval

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Answer records values for one or more decisions by one person. values
// holds typed values by decision id.
//
// Resolution rule: a request with a single decision resolves on its first
// valid answer (see resolve.go). With several, reviewers answer in any
// order and may change their answers (the audit keeps every version); the
// first answer moves the request from pending to partial, and Submit
// resolves it. Approval decisions that need several sign-offs (a quorum,
// or required roles) collect each person's verdict instead (signoff.go).
func (c *Core) Answer(ctx context.Context, requestID string, by aah.Person, values map[string]any) (Outcome, error) {
	return c.act(ctx, requestID, by, "answer", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		return c.answer(rec, req, g, out, cloneAnswers(rec.Answers), by, values, "", nil)
	})
}

// AnswerAll approves (or rejects) every approval decision of the request at
// once: the message's "Approve all" and "Reject all" (rendering hint 5).
// The decisions are picked from the request as stored, in the same update.
func (c *Core) AnswerAll(ctx context.Context, requestID string, by aah.Person, approve bool) (Outcome, error) {
	return c.act(ctx, requestID, by, "answer", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		values := map[string]any{}
		for _, id := range approvalDecisions(req) {
			values[id] = approve
		}
		return c.answer(rec, req, g, out, cloneAnswers(rec.Answers), by, values, "", nil)
	})
}

// AnswerWithComment records a person's comment on a decision and their
// answer to it in one update (an input dialog with its comment field): a
// single-decision request resolves on the answer, and its response carries
// the comment. If either is refused, neither is recorded.
func (c *Core) AnswerWithComment(ctx context.Context, requestID, decisionID string, by aah.Person, value any, comment string) (Outcome, error) {
	return c.act(ctx, requestID, by, "answer", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		answers := cloneAnswers(rec.Answers)
		commented, err := c.comment(rec, req, g, decisionID, by, comment)
		if err != nil {
			return nil, err
		}
		if commented != nil {
			answers[decisionID] = commented.Answers[0]
		}
		return c.answer(rec, req, g, out, answers, by, map[string]any{decisionID: value}, "", commented)
	})
}

// approvalDecisions are the ids of the request's approval decisions.
func approvalDecisions(req *aah.Request) []string {
	var ids []string
	for _, d := range req.Data.Decisions {
		if d.Type == aah.TypeApproval {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// answer is the change of by answering values on top of answers (the
// request's, perhaps with a comment already applied: then ch holds that
// comment's change, which this one extends). reason, with a rejection,
// becomes by's comment on the decision.
func (c *Core) answer(rec store.Record, req *aah.Request, g grant, out *Outcome, answers map[string]aah.Answer,
	by aah.Person, values map[string]any, reason string, ch *store.Change) (*store.Change, error) {
	return c.answerWith(rec, req, g, out, answers, by, values, answerOpts{reason: reason}, ch)
}

// answerWith is answer with what the answers carry beyond their values
// (answerOpts): every verb that answers a decision goes through it.
func (c *Core) answerWith(rec store.Record, req *aah.Request, g grant, out *Outcome, answers map[string]aah.Answer,
	by aah.Person, values map[string]any, o answerOpts, ch *store.Change) (*store.Change, error) {
	if err := g.mayDecide(); err != nil {
		return nil, err
	}
	now := c.now().UTC()
	if ch == nil {
		ch = &store.Change{}
	}
	commented := len(ch.Answers) > 0
	answered := false
	for id, raw := range values {
		dec, ok := req.Decision(id)
		if !ok {
			return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", id), Field: FieldDecision, Rule: RuleInvalid}
		}
		v, err := aah.CheckAnswer(dec, raw)
		if err != nil {
			return nil, &Refusal{Reason: fmt.Sprintf("%s: %v", dec.Prompt, err), Field: "value", Rule: RuleInvalid}
		}
		if err := acceptsAnswer(dec, v, o.verb); err != nil {
			return nil, err
		}
		if o.picked != "" && v == false && !offersReason(dec, o.picked) {
			return nil, &Refusal{Reason: fmt.Sprintf("“%s” is not one of the reasons offered for rejecting “%s”.", o.picked, dec.Prompt),
				Field: FieldRejectReason, Rule: RuleInvalid}
		}
		prev, had := answers[id]
		a, data, err := g.answer(dec, prev, v, by, now, o)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue // the same person repeating the same answer: nothing to record
		}
		answers[id] = *a
		ch.Answers = withAnswer(ch.Answers, *a)
		answered = true
		if had && prev.Answered() {
			data["previous_value"], data["previous_by"] = prev.Value, prev.By.ID
		}
		ch.Audit = append(ch.Audit, store.AuditEvent{Event: "answered", Actor: by.AgentID(), Data: data})
	}
	if !answered && !commented {
		return nil, nil // a double click or a Slack retry
	}
	out.Changed = true
	ch.Bump = true
	if !answered {
		return ch, nil // only the comment changed
	}
	if only := answers[req.Data.Decisions[0].ID]; len(req.Data.Decisions) == 1 && only.Answered() {
		out.Resolved = true
		// The comment on the answer that resolves it is its resolver's
		// overall comment too (data.comment).
		comment, _ := only.CommentOf(by.ID)
		return c.resolve(rec, req, answers, by, g, ch, comment.Text), nil
	}
	if rec.Status == aah.StatusPending {
		ch.Status = aah.StatusPartial
	}
	return ch, nil
}

// acceptsAnswer refuses an approval or a rejection the decision's agent
// does not accept (extensions.decisions responses): a decision that lists
// no approve takes no plain approval (only modify, with a change), one that
// lists no reject takes no rejection. Every path that answers goes through
// it: a click, the API, "Approve all", a modify that changes nothing.
func acceptsAnswer(dec aah.Decision, v any, verb aah.Verb) error {
	if dec.Type != aah.TypeApproval {
		return nil
	}
	want, what := aah.VerbReject, "rejected"
	if v == true {
		want, what = aah.VerbApprove, "approved as proposed"
		if verb == aah.VerbModify {
			want, what = aah.VerbModify, "approved with changes"
		}
	}
	if dec.Accepts(want) {
		return nil
	}
	reason := fmt.Sprintf("“%s” cannot be %s: the agent does not accept it.", dec.Prompt, what)
	if want == aah.VerbApprove && dec.Accepts(aah.VerbModify) {
		reason = fmt.Sprintf("“%s” can only be approved with changes: the agent does not accept it as proposed. "+
			"Change a parameter, or reject it.", dec.Prompt)
	}
	return &Refusal{Reason: reason, Rule: RuleVerb}
}

// withAnswer puts a into list, replacing the answer to the same decision.
func withAnswer(list []aah.Answer, a aah.Answer) []aah.Answer {
	for i := range list {
		if list[i].DecisionID == a.DecisionID {
			list[i] = a
			return list
		}
	}
	return append(list, a)
}

// Comment records a person's comment on a decision. Each person has one
// comment per decision (writing again replaces theirs; blank text removes
// it); other people's comments and answers never remove it, and the audit
// keeps every version. The requester may comment on their own request.
func (c *Core) Comment(ctx context.Context, requestID, decisionID string, by aah.Person, text string) (Outcome, error) {
	return c.act(ctx, requestID, by, "comment", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		ch, err := c.comment(rec, req, g, decisionID, by, text)
		if ch != nil {
			out.Changed = true
		}
		return ch, err
	})
}

// comment is the change of by's comment on decisionID: one answer (the
// decision's, with the comment) and its audit entry; nil when the comment
// is already there.
func (c *Core) comment(rec store.Record, req *aah.Request, g grant, decisionID string, by aah.Person, text string) (*store.Change, error) {
	text = strings.TrimSpace(text)
	if _, ok := req.Decision(decisionID); !ok {
		return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", decisionID), Field: FieldDecision, Rule: RuleInvalid}
	}
	if utf8.RuneCountInString(text) > aah.MaxTextLength {
		return nil, &Refusal{Reason: "A comment holds at most 3000 characters.", Field: "comment", Rule: RuleInvalid}
	}
	a := rec.Answers[decisionID]
	prev, _ := a.CommentOf(by.ID)
	if prev.Text == text {
		return nil, nil
	}
	if text == "" && g.rules.RequireReason && rejectedBy(a, by.ID) {
		// A required reason stays with the rejection it explains.
		return nil, &Refusal{Reason: "Your rejection needs its reason: you can change your comment, not remove it.",
			Field: "comment", Rule: RuleRequireReason}
	}
	now := c.now().UTC()
	a = a.WithComment(aah.Comment{By: by, At: now, Text: text})
	a.DecisionID = decisionID
	if !a.Answered() && a.By.ID == "" {
		a.By, a.At = by, now // a comment before any answer
	}
	return &store.Change{
		Answers: []aah.Answer{a}, Bump: true,
		Audit: []store.AuditEvent{{Event: "commented", Actor: by.AgentID(),
			Data: map[string]any{"decision_id": decisionID, "comment": text, "previous_comment": prev.Text}}},
	}, nil
}

// rejectedBy reports whether the person's rejection stands on the answer:
// as its answer, or as their sign-off.
func rejectedBy(a aah.Answer, personID string) bool {
	if a.Value == false && a.By.ID == personID {
		return true
	}
	for _, so := range a.Signoffs {
		if so.By.ID == personID && !so.Approved {
			return true
		}
	}
	return false
}
