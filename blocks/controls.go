package blocks

import (
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// This file builds the buttons an approval decision carries, and the
// request's menu of request-level verbs, from what the decision's review
// extension accepts. The list of open requests uses the same buttons, so a
// quick Approve asks to confirm exactly when the message's Approve does.

// requestVerbs are the request-level verbs (defer, change_plan, escalate,
// abort) any decision accepts, in aah.RequestVerbs order.
func requestVerbs(req *aah.Request) []aah.Verb {
	var out []aah.Verb
	for _, v := range aah.RequestVerbs {
		if req.Accepts(v) {
			out = append(out, v)
		}
	}
	return out
}

// needsConfirm reports whether approving d asks to confirm first: an
// irreversible or critical-risk action.
func needsConfirm(d aah.Decision) bool { return d.Irreversible() || d.CriticalRisk() }

// approvalButtons are an approval decision's buttons: Approve (asking to
// confirm an irreversible or critical-risk action), "Approve similar…" when
// a standing approval may cover it, Modify… when parameters may be edited,
// and Reject (opening the reason modal when a reason is required or the
// agent offers reasons).
func approvalButtons(d aah.Decision, rules aah.Rules, grantMax time.Duration) []slack.BlockElement {
	var out []slack.BlockElement
	if d.Accepts(aah.VerbApprove) {
		out = append(out, approveButton(d))
	}
	if d.Accepts(aah.VerbModify) && !rules.Gated() {
		out = append(out, slack.NewButtonBlockElement(ActionModify, d.ID, plainText("Modify…")))
	}
	if grantMax > 0 && d.ActionKey() != "" && d.Accepts(aah.VerbApprove) && !needsConfirm(d) && !rules.Gated() {
		out = append(out, slack.NewButtonBlockElement(ActionApproveSimilar, d.ID, plainText("Approve similar…")))
	}
	if d.Accepts(aah.VerbReject) {
		out = append(out, rejectButton(d, rules))
	}
	return out
}

func approveButton(d aah.Decision) *slack.ButtonBlockElement {
	approve := slack.NewButtonBlockElement(ActionApprove, "true", plainText("Approve"))
	approve.Style = slack.StylePrimary
	if needsConfirm(d) {
		approve.Confirm = dangerConfirm(confirmTitle(d), "Approving lets the agent go ahead with "+actionName(d)+
			". "+confirmWhy(d), "Approve")
	}
	return approve
}

func rejectButton(d aah.Decision, rules aah.Rules) *slack.ButtonBlockElement {
	action := ActionReject
	if rules.RequireReason || (d.Review != nil && len(d.Review.RejectReasons) > 0) {
		// The reason modal asks for confirmation itself.
		action = ActionRejectReason
	}
	reject := slack.NewButtonBlockElement(action, "false", plainText("Reject"))
	reject.Style = slack.StyleDanger
	return reject
}

// confirmTitle is the confirm dialog's title (at most 100 characters).
func confirmTitle(d aah.Decision) string {
	if d.Irreversible() {
		return "Approve an irreversible action?"
	}
	return "Approve a critical-risk action?"
}

// confirmWhy says why the dialog asks, within the dialog's 300 characters.
func confirmWhy(d aah.Decision) string {
	switch {
	case d.Irreversible() && d.CriticalRisk():
		return "The agent says it cannot be undone and rates its risk critical."
	case d.Irreversible():
		return "The agent says it cannot be undone."
	}
	return "The agent rates its risk critical."
}

// actionName names the proposed action in plain text: its tool, else the
// decision's prompt, shortened.
func actionName(d aah.Decision) string {
	if d.Review != nil && d.Review.Action != nil && d.Review.Action.ToolName != "" {
		return plain(oneLine(d.Review.Action.ToolName), 80)
	}
	return "“" + plain(oneLine(d.Prompt), 80) + "”"
}

func dangerConfirm(title, text, ok string) *slack.ConfirmationBlockObject {
	c := confirm(plain(title, 100), plain(text, 300), plain(ok, 30))
	c.Style = slack.StyleDanger
	return c
}

// approveAllConfirm is the Approve-all dialog: it names the first
// irreversible or critical-risk action among those it approves, if any.
func approveAllConfirm(req *aah.Request, approvals int) *slack.ConfirmationBlockObject {
	text := fmt.Sprintf("This approves all %d approval decisions. Other decisions are not changed.", approvals)
	for _, d := range req.Data.Decisions {
		if d.Type == aah.TypeApproval && needsConfirm(d) {
			text = fmt.Sprintf("This approves all %d approval decisions, including %s. %s Other decisions are not changed.",
				approvals, actionName(d), confirmWhy(d))
			return dangerConfirm("Approve all?", text, "Approve all")
		}
	}
	return confirm("Approve all?", text, "Approve all")
}

// verbLabels are the request menu's options.
var verbLabels = map[aah.Verb]string{
	aah.VerbDefer:      "Defer with guidance…",
	aah.VerbChangePlan: "Change the plan…",
	aah.VerbEscalate:   "Escalate to…",
	aah.VerbAbort:      "Abort the run…",
}

// verbsMenu is the request's overflow menu of request-level verbs, nil
// when the request accepts none. Each option opens its modal, which is
// also the confirmation (overflow options cannot carry one).
func verbsMenu(req *aah.Request) *slack.OverflowBlockElement {
	verbs := requestVerbs(req)
	if len(verbs) == 0 {
		return nil
	}
	opts := make([]*slack.OptionBlockObject, len(verbs))
	for i, v := range verbs {
		opts[i] = slack.NewOptionBlockObject(string(v), slack.NewTextBlockObject(slack.PlainTextType, verbLabels[v], true, false), nil)
	}
	return slack.NewOverflowBlockElement(ActionVerbs, opts...)
}
