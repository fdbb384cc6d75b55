package aah

import "maps"

// responseDirective is data.directive for d: its text goes in the field the
// verb names (guidance, requirement or reason).
func responseDirective(d Directive) *ResponseDirective {
	out := &ResponseDirective{Action: d.Verb, DecidedBy: d.By, DecidedAt: stamp(d.At)}
	switch d.Verb {
	case VerbDefer:
		out.Guidance = d.Text
	case VerbChangePlan:
		out.Requirement = d.Text
	default: // VerbAbort
		out.Reason = d.Text
	}
	return out
}

// directiveSentence opens the summary of a response that carries d:
// "Deferred by Alice: try a smaller batch."
func directiveSentence(d Directive) string {
	name := d.By.Name
	if name == "" {
		name = d.By.ID
	}
	var s string
	switch d.Verb {
	case VerbDefer:
		s = "Deferred by " + name
	case VerbChangePlan:
		s = name + " asked for a change of plan"
	default:
		s = "Aborted by " + name
	}
	if text := oneLine(d.Text); text != "" {
		s += ": " + shorten(text, 300)
	}
	return sentence(s)
}

// reviewFields fills the entry's review fields (action, modified,
// parameters, reject_reason, grant) from an answer with value v. They stay
// empty for decisions without the review extension, whose responses encode
// as before.
func reviewFields(d Decision, a Answer, v any, out *DecisionAnswer) {
	approved, isApproval := v.(bool)
	if !isApproval {
		return
	}
	switch {
	case a.Verb == VerbModify && approved:
		out.Action, out.Modified = VerbModify, true
		out.Parameters = maps.Clone(a.Parameters)
		if d.Review != nil && d.Review.Action != nil {
			out.OriginalParameters = maps.Clone(d.Review.Action.Parameters)
		}
	case d.Review != nil && approved:
		out.Action = VerbApprove
	case d.Review != nil:
		out.Action = VerbReject
	}
	if !approved {
		out.RejectReason = a.RejectReason
	}
	if a.Grant != nil {
		// The response writes every time in UTC to the second; the grant
		// keeps its milliseconds in the answer and the audit.
		g := *a.Grant
		g.GrantedAt, g.ExpiresAt = stamp(g.GrantedAt), stamp(g.ExpiresAt)
		out.Grant = &g
	}
}
