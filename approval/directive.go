package approval

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// directiveEvents are the audit events of the directives.
var directiveEvents = map[aah.Verb]string{
	aah.VerbDefer:      "deferred",
	aah.VerbChangePlan: "plan_change_requested",
	aah.VerbAbort:      "aborted",
}

// directiveWords name each directive's text, for refusals.
var directiveWords = map[aah.Verb]string{
	aah.VerbDefer:      "guidance",
	aah.VerbChangePlan: "requirement",
	aah.VerbAbort:      "reason",
}

// Direct ends the request's round with a directive instead of answers: defer
// (try another approach, with guidance), change_plan (re-plan to meet a
// requirement) or abort (stop the run, with a reason). The request must
// accept the verb (one of its decisions lists it in its responses) and the
// person must be allowed to decide it; one person suffices even where
// approvals need several sign-offs, since nothing gets approved (like a
// veto). The request closes as resolved with Record.Directive, its response
// carries the directive (data.directive) and the answers given so far, and
// the audit records deferred, plan_change_requested or aborted.
//
// The same person repeating the same directive (a double click, a retried
// submission) changes nothing; anyone else finds the request closed.
func (c *Core) Direct(ctx context.Context, requestID string, by aah.Person, verb aah.Verb, text string) (Outcome, error) {
	event, ok := directiveEvents[verb]
	if !ok {
		return Outcome{}, &Refusal{Reason: fmt.Sprintf("%q is not a directive: use defer, change_plan or abort.", verb), Rule: RuleInvalid}
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return Outcome{}, &Refusal{Reason: fmt.Sprintf("Write the %s for the agent.", directiveWords[verb]), Field: FieldText, Rule: RuleInvalid}
	case utf8.RuneCountInString(text) > aah.MaxTextLength:
		return Outcome{}, &Refusal{Reason: fmt.Sprintf("The %s holds at most %d characters.", directiveWords[verb], aah.MaxTextLength),
			Field: FieldText, Rule: RuleInvalid}
	}
	if rec, err := c.store.Get(ctx, requestID); err == nil && sameDirective(rec, by, verb, text) {
		return Outcome{Record: rec}, nil
	}
	out, err := c.act(ctx, requestID, by, string(verb), func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if err := offered(req, verb); err != nil {
			return nil, err
		}
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		now := c.now().UTC()
		d := &aah.Directive{Verb: verb, Text: text, By: by, At: now}
		ch := &store.Change{Directive: d, Audit: []store.AuditEvent{{Event: event, Actor: by.AgentID(),
			Data: map[string]any{"verb": string(verb), "text": text}}}}
		out.Changed, out.Resolved = true, true
		return c.closeWith(rec, req, cloneAnswers(rec.Answers), by, strings.Join(g.auth.roles, ","), ch, aah.OutcomeResolved, ""), nil
	})
	if err != nil && sameDirective(out.Record, by, verb, text) {
		return Outcome{Record: out.Record}, nil // it won meanwhile, by an identical click
	}
	return out, err
}

// sameDirective reports whether the request was closed by this very
// directive of the same person.
func sameDirective(rec store.Record, by aah.Person, verb aah.Verb, text string) bool {
	d := rec.Directive
	return d != nil && d.By.ID == by.ID && d.Verb == verb && d.Text == text
}

// verbWords is how a refusal names a verb.
func verbWords(v aah.Verb) string {
	switch v {
	case aah.VerbChangePlan:
		return "a change of plan"
	case aah.VerbDefer:
		return "deferring"
	case aah.VerbAbort:
		return "aborting"
	case aah.VerbEscalate:
		return "escalating by hand"
	}
	return string(v)
}

// offered refuses a request-level verb the request does not accept.
func offered(req *aah.Request, verb aah.Verb) error {
	if !req.Accepts(verb) {
		return &Refusal{Reason: fmt.Sprintf("This request does not accept %s: the agent did not offer it.", verbWords(verb)), Rule: RuleVerb}
	}
	return nil
}
