package approval

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// grant is what act hands an action: the person's authority over the
// request and the request's effective sign-off rules.
type grant struct {
	auth  authority
	rules aah.Rules
}

// mayDecide refuses the requester deciding their own request, unless the
// request or the workspace allows self-approval. Commenting stays open to
// them.
func (g grant) mayDecide() error {
	if g.auth.ownAgent {
		// Whatever the request says: an agent supervising itself is no
		// supervision.
		return &Refusal{Reason: "An agent may not decide a request it sent itself; someone else has to. " +
			"It can still comment.", Rule: RuleSelfApproval}
	}
	if g.auth.requester && !g.rules.AllowSelfApproval {
		return &Refusal{Reason: "You asked for this decision, so someone else has to make it " +
			"(self-approval is off for this request). You can still comment.", Rule: RuleSelfApproval}
	}
	return nil
}

// answerOpts is what an answer carries beyond its value: a rejection's
// reasons, a modify's parameters, and what the audit adds about them.
type answerOpts struct {
	// reason, given with a rejection, becomes by's comment on the decision
	// in the same answer.
	reason string
	// picked, given with a rejection, is the reason chosen from the
	// decision's reject_reasons (Answer.RejectReason); it satisfies a
	// required reason on its own.
	picked string
	// verb and params mark an approval given with edited parameters
	// (aah.VerbModify, the full set).
	verb   aah.Verb
	params map[string]any
	// audit is added to the answered entry's data.
	audit map[string]any
}

// answer is the answer to dec after by gives value v, with its audit data;
// nil when it changes nothing (the same person repeating themselves). An
// approval decision under gated rules collects by's sign-off and settles
// from all of them; any other decision takes the latest answer.
func (g grant) answer(dec aah.Decision, prev aah.Answer, v any, by aah.Person, now time.Time, o answerOpts) (*aah.Answer, map[string]any, error) {
	data := map[string]any{"decision_id": dec.ID, "value": v}
	maps.Copy(data, o.audit)
	sameReason := true
	if o.reason != "" && v == false {
		had, _ := prev.CommentOf(by.ID)
		if had.Text != o.reason {
			sameReason = false
			prev = prev.WithComment(aah.Comment{By: by, At: now, Text: o.reason})
		}
		data["reason"] = o.reason
	}
	if o.picked != "" {
		data["reject_reason"] = o.picked
	}
	own, _ := prev.CommentOf(by.ID)
	ownComment := strings.TrimSpace(own.Text) != ""
	if v == false && g.rules.RequireReason && !ownComment && o.picked == "" {
		return nil, nil, &Refusal{Reason: fmt.Sprintf("Say why you reject “%s”: this request needs a reason "+
			"for every rejection. Use Reject again and fill in the reason.", dec.Prompt), Field: "comment", Rule: RuleRequireReason}
	}
	if !g.gated(dec) {
		if sameReason && prev.Answered() && reflect.DeepEqual(prev.Value, v) && prev.By.ID == by.ID &&
			prev.RejectReason == o.picked && prev.Verb == o.verb && reflect.DeepEqual(prev.Parameters, o.params) {
			return nil, nil, nil
		}
		// Every comment stays, each with its author: the new answer's
		// rationale is its author's own comment (aah.Answer.Rationale).
		a := aah.Answer{DecisionID: dec.ID, Value: v, By: by, At: now, Comments: prev.Comments,
			Verb: o.verb, Parameters: o.params, RejectReason: o.picked}
		return &a, data, nil
	}
	approved := v.(bool)
	so := aah.Signoff{By: by, Approved: approved, Roles: g.auth.roles, At: now}
	if !approved && ownComment {
		so.Reason = own.Text
	} else if !approved {
		so.Reason = o.picked // their sign-off's reason is the one they picked
	}
	if i := slices.IndexFunc(prev.Signoffs, func(s aah.Signoff) bool { return s.By.ID == by.ID }); i >= 0 &&
		prev.Signoffs[i].Approved == approved && sameReason && (approved || prev.Signoffs[i].Reason == so.Reason) {
		return nil, nil, nil
	}
	a := prev
	a.DecisionID = dec.ID
	a.Signoffs = aah.WithSignoff(prev.Signoffs, so)
	a = g.rules.Settle(a)
	if !approved && o.picked != "" {
		a.RejectReason = o.picked // the rejection settles it (a veto)
	}
	if a.Value != false {
		a.RejectReason = ""
	}
	progress := g.rules.Tally(a.Signoffs)
	data["signoff"] = true
	data["roles"] = so.Roles
	data["approvals"] = len(progress.Approvals)
	data["quorum"] = progress.Quorum
	data["settled"] = a.Value
	return &a, data, nil
}

// gated reports whether dec collects sign-offs.
func (g grant) gated(dec aah.Decision) bool { return dec.Type == aah.TypeApproval && g.rules.Gated() }
