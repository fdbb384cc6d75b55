package blocks

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// This file holds the modals of the review extension's verbs: modify
// (approve with edited parameters), the directives (defer, change_plan,
// abort), escalate by hand, and the reject modal's reasons select.

// Block and action ids of the verb modals. An edited parameter's block is
// ParamBlock(name), so a validation error names the field it belongs to
// (the core's refusal field is the same "param:<name>").
const (
	ParamBlockPrefix  = "param:"
	BlockDirective    = "directive"     // the directive's text
	BlockEscalateUser = "escalate_user" // a users_select
	BlockEscalateTo   = "escalate_to"   // a user group, channel or email, typed
	BlockNote         = "note"          // the escalation's note
	BlockRejectReason = "reject_reason" // the agent's reject_reasons, a static_select
	ActionUser        = "user"
)

// ParamBlock is the block id of the input editing the parameter.
func ParamBlock(name string) string { return ParamBlockPrefix + name }

// BoolTrue and BoolFalse are the option values of a boolean parameter's
// radio buttons.
const (
	BoolTrue  = "true"
	BoolFalse = "false"
)

// ModifyModal asks for the edited parameters of an approval decision's
// proposed action: one input per editable parameter, typed (a number input
// with its bounds, a menu for an enum, radio buttons for a boolean, a text
// input with its lengths otherwise), showing current, the values to start
// from (the proposal, or the person's earlier edit); and an optional
// comment. Submitting approves the edited version.
func ModifyModal(req *aah.Request, d aah.Decision, current map[string]any, ref ModalRef) slack.ModalViewRequest {
	out := []slack.Block{section(headerLine(req, d))}
	if d.Review != nil && d.Review.Action != nil && d.Review.Action.ToolName != "" {
		out = append(out, slack.NewContextBlock("", mrkdwn("Proposed action: `"+escape(fitted(d.Review.Action.ToolName, 200))+"`")))
	}
	if d.Review != nil {
		for _, e := range d.Review.Editable {
			if len(out) >= maxModalBlocks-2 {
				break
			}
			out = append(out, paramInput(e, current[e.Name], d.Review.Action))
		}
	}
	out = append(out, commentInput("", true))
	return modal(ModalModify, "Approve with changes", "Approve", ref, out)
}

// paramInput is the input block editing one parameter, starting at v.
func paramInput(e aah.EditableParam, v any, proposed *aah.ProposedAction) *slack.InputBlock {
	var element slack.BlockElement
	optional := false
	switch {
	case e.Type == aah.ParamNumber || e.Type == aah.ParamInteger:
		in := slack.NewNumberInputBlockElement(plainText("A number"), ActionValue, e.Type == aah.ParamNumber)
		if e.Minimum != nil {
			in.MinValue = formatNumber(*e.Minimum)
		}
		if e.Maximum != nil {
			in.MaxValue = formatNumber(*e.Maximum)
		}
		if f, ok := v.(float64); ok {
			in.InitialValue = formatNumber(f)
		}
		element = in
	case e.Type == aah.ParamBoolean:
		yes := slack.NewOptionBlockObject(BoolTrue, plainText("Yes (true)"), nil)
		no := slack.NewOptionBlockObject(BoolFalse, plainText("No (false)"), nil)
		in := slack.NewRadioButtonsBlockElement(ActionValue, yes, no)
		if b, ok := v.(bool); ok {
			in.InitialOption = map[bool]*slack.OptionBlockObject{true: yes, false: no}[b]
		}
		element = in
	case len(e.Enum) > 0:
		var opts []*slack.OptionBlockObject
		var initial *slack.OptionBlockObject
		for _, value := range e.Enum {
			o := slack.NewOptionBlockObject(value, plainText(plain(value, MaxOptionText)), nil)
			if value == v {
				initial = o
			}
			opts = append(opts, o)
		}
		in := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Pick one"), ActionValue, opts...)
		in.InitialOption = initial
		element = in
	default:
		in := slack.NewPlainTextInputBlockElement(plainText("A value"), ActionValue)
		in.MaxLength = aah.MaxTextLength
		if e.MaxLength != nil && *e.MaxLength < in.MaxLength {
			in.MaxLength = *e.MaxLength
		}
		if e.MinLength != nil {
			in.MinLength = *e.MinLength
		}
		in.Multiline = in.MaxLength > 150
		if s, ok := v.(string); ok && utf8.RuneCountInString(s) <= in.MaxLength {
			in.InitialValue = s
		}
		// An empty string is a value too; a minimum length refuses it.
		optional = e.MinLength == nil || *e.MinLength == 0
		element = in
	}
	var was any
	if proposed != nil {
		was = proposed.Parameters[e.Name]
	}
	block := slack.NewInputBlock(ParamBlock(e.Name), plainLabel(plain(e.Name, 2000)), paramHint(e, was), element)
	block.Optional = optional
	return block
}

// paramHint spells out what the input does not show: the value the agent
// proposed, the pattern a text must match, and a number's or text's bounds.
func paramHint(e aah.EditableParam, proposed any) *slack.TextBlockObject {
	var parts []string
	if proposed != nil {
		parts = append(parts, "Proposed: "+paramText(proposed))
	}
	switch e.Type {
	case aah.ParamInteger, aah.ParamNumber:
		kind := "A number"
		if e.Type == aah.ParamInteger {
			kind = "A whole number"
		}
		if e.Minimum != nil || e.Maximum != nil || e.Type == aah.ParamInteger {
			parts = append(parts, kind+bounds(e.Minimum, e.Maximum, formatNumber))
		}
	case aah.ParamString:
		if len(e.Enum) == 0 && (e.MinLength != nil || e.MaxLength != nil) {
			var lo, hi *float64
			if e.MinLength != nil {
				f := float64(*e.MinLength)
				lo = &f
			}
			if e.MaxLength != nil {
				f := float64(*e.MaxLength)
				hi = &f
			}
			parts = append(parts, "Characters"+bounds(lo, hi, formatNumber))
		}
		if e.Pattern != "" {
			parts = append(parts, "Must match "+e.Pattern)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return plainLabel(plain(strings.Join(parts, " · "), 2000))
}

func bounds(lo, hi *float64, format func(float64) string) string {
	switch {
	case lo != nil && hi != nil:
		return ": " + format(*lo) + " to " + format(*hi)
	case lo != nil:
		return ": at least " + format(*lo)
	case hi != nil:
		return ": at most " + format(*hi)
	}
	return ""
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// paramText is a parameter value as the hint shows it: a string as it is,
// a number plainly, anything else as JSON.
func paramText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return formatNumber(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// directiveTexts are each directive's modal wording.
var directiveTexts = map[aah.Verb]struct{ title, submit, label, placeholder, intro string }{
	aah.VerbDefer: {"Defer", "Defer", "Guidance for the agent", "What should it try instead?",
		"*Defer this request.* Nothing is approved or rejected: the agent is asked to try another approach, with your guidance, and may send a new request."},
	aah.VerbChangePlan: {"Change the plan", "Request change", "What must the new plan meet?", "The requirement the agent's next plan must satisfy",
		"*Ask the agent to change its plan.* Nothing is approved or rejected: the agent re-plans to meet your requirement and may send a new request."},
	aah.VerbAbort: {"Abort the run", "Abort run", "Why stop the run?", "The agent and the audit trail keep it",
		":warning: *This stops the agent's whole run*, not only this request. Nothing is approved; the agent is told to stop, with your reason. It cannot be undone from here."},
}

// DirectiveModal asks for a directive's text: defer's guidance,
// change_plan's requirement or abort's reason (required, at most 3000
// characters). ref.Verb says which; abort warns that it stops the run.
func DirectiveModal(req *aah.Request, verb aah.Verb, ref ModalRef) slack.ModalViewRequest {
	w, ok := directiveTexts[verb]
	if !ok {
		w = directiveTexts[aah.VerbDefer]
		verb = aah.VerbDefer
	}
	ref.Verb = string(verb)
	in := slack.NewPlainTextInputBlockElement(plainText(w.placeholder), ActionText)
	in.Multiline = true
	in.MaxLength = aah.MaxTextLength
	text := slack.NewInputBlock(BlockDirective, plainLabel(w.label), nil, in)
	head := "_" + fitted(req.Artifact.Title, 300) + "_\n" + w.intro
	return modal(ModalDirective, w.title, w.submit, ref, []slack.Block{section(head), text})
}

// EscalateModal asks whom to hand the request to: a person picked in a
// users select, or a user group id, channel or email typed in; and an
// optional note for them. Exactly one target is required (the handler
// checks: Slack cannot require one of two inputs).
func EscalateModal(req *aah.Request, ref ModalRef) slack.ModalViewRequest {
	user := slack.NewOptionsSelectBlockElement(slack.OptTypeUser, plainText("Pick a person"), ActionUser)
	pick := slack.NewInputBlock(BlockEscalateUser, plainLabel("Escalate to a person"), nil, user)
	pick.Optional = true
	typed := slack.NewPlainTextInputBlockElement(plainText("S0123ABCD, #ops, C0123ABCD or name@example.com"), ActionText)
	typed.MaxLength = 254
	other := slack.NewInputBlock(BlockEscalateTo, plainLabel("…or to a user group, channel or email"),
		plainLabel("A user group id (S…), a channel (C… or #name) or a person's email."), typed)
	other.Optional = true
	note := slack.NewPlainTextInputBlockElement(plainText("Why them? What should they look at?"), ActionText)
	note.Multiline = true
	note.MaxLength = aah.MaxTextLength
	noteBlock := slack.NewInputBlock(BlockNote, plainLabel("Note"), nil, note)
	noteBlock.Optional = true
	head := "_" + fitted(req.Artifact.Title, 300) + "_\n*Hand this request to someone else.* They get it by DM " +
		"(a channel gets a post) and may answer it; you and the other reviewers still can."
	return modal(ModalEscalate, "Escalate", "Escalate", ref, []slack.Block{section(head), pick, other, noteBlock})
}

// rejectReasonInput is the reject modal's menu of the reasons the agent
// offers, optional: the person's own words may do instead, or as well.
func rejectReasonInput(reasons []string) *slack.InputBlock {
	var opts []*slack.OptionBlockObject
	for _, r := range reasons {
		opts = append(opts, slack.NewOptionBlockObject(plain(r, MaxOptionValue), plainText(plain(r, MaxOptionText)), nil))
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Pick a reason"), ActionValue, opts...)
	block := slack.NewInputBlock(BlockRejectReason, plainLabel("Reason"), nil, sel)
	block.Optional = true
	return block
}

// RejectReasons are the reasons the reject modal offers for decisionID:
// the decision's reject_reasons, or for RequestScope ("Reject all") the
// reasons every approval decision offers.
func RejectReasons(req *aah.Request, decisionID string) []string {
	var out []string
	first := true
	for _, d := range req.Data.Decisions {
		if d.Type != aah.TypeApproval || decisionID != RequestScope && d.ID != decisionID {
			continue
		}
		var offered []string
		if d.Review != nil {
			offered = d.Review.RejectReasons
		}
		if first {
			out, first = slices.Clone(offered), false
			continue
		}
		out = slices.DeleteFunc(out, func(r string) bool { return !slices.Contains(offered, r) })
	}
	return out
}
