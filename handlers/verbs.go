package handlers

import (
	"context"
	"errors"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/slack-go/slack"
)

// openVerbModal opens the modal of a review extension verb: modify's
// edited parameters, a directive's text, or escalate's target. Like
// openModal it checks first (approval.Core.CheckVerb: the request accepts
// the verb, the person may decide it) and tells a person who may not use
// it why, instead of a form they cannot submit.
func (s *Slack) openVerbModal(ctx context.Context, verb aah.Verb, triggerID, requestID, decisionID, channel string, by aah.Person) {
	action := "verb_" + string(verb)
	rec, req, err := s.opts.Requests.Load(ctx, requestID)
	if err == nil && !rec.Status.Open() {
		err = &approval.Refusal{Reason: "This request can no longer be answered (it is " + string(rec.Status) + ")."}
	}
	if err == nil {
		err = s.opts.Decisions.CheckVerb(ctx, requestID, decisionID, by, verb)
	}
	if err != nil {
		s.settled(ctx, action, channel, by, approval.Outcome{}, err)
		return
	}
	if decisionID == "" {
		decisionID = blocks.RequestScope
	}
	ref := blocks.ModalRef{RequestID: requestID, DecisionID: decisionID, Channel: channel}
	var view slack.ModalViewRequest
	switch verb {
	case aah.VerbModify:
		d, _ := req.Decision(decisionID) // CheckVerb found it, with its proposed action
		current := d.Review.Action.Parameters
		if a := rec.Answers[decisionID]; a.Verb == aah.VerbModify && a.By.ID == by.ID {
			current = a.Parameters // their earlier edit, to go on from
		}
		view = blocks.ModifyModal(req, d, current, ref)
	case aah.VerbEscalate:
		view = blocks.EscalateModal(req, ref)
	default:
		view = blocks.DirectiveModal(req, verb, ref)
	}
	s.opts.Async.Go("views.open", func(ctx context.Context) {
		if _, err := s.opts.Slack.OpenViewContext(ctx, triggerID, view); err != nil {
			s.log.WarnContext(ctx, "could not open a modal", "action", action, "request_id", requestID, "err", err)
			s.tellUser(channel, by.ID, ":warning: The dialog could not be opened; please click again.")
		}
	})
}

// verbSubmission records a submitted verb modal; problems are shown on the
// field they belong to and keep the modal open.
func (s *Slack) verbSubmission(ctx context.Context, callbackID string, ref blocks.ModalRef, by aah.Person,
	values map[string]map[string]slack.BlockAction) *viewErrors {
	switch callbackID {
	case blocks.ModalModify:
		return s.modifySubmission(ctx, ref, by, values)
	case blocks.ModalDirective:
		text := values[blocks.BlockDirective][blocks.ActionText].Value
		if strings.TrimSpace(text) == "" {
			return fieldErrors(blocks.BlockDirective, "Write it for the agent: it is what they get instead of a decision.")
		}
		out, err := s.opts.Decisions.Direct(ctx, ref.RequestID, by, aah.Verb(ref.Verb), text)
		return s.replyVerb(ctx, blocks.BlockDirective, ref.Verb, ref, by, out, err)
	default:
		user := values[blocks.BlockEscalateUser][blocks.ActionUser].SelectedUser
		typed := strings.TrimSpace(values[blocks.BlockEscalateTo][blocks.ActionText].Value)
		switch {
		case user == "" && typed == "":
			return fieldErrors(blocks.BlockEscalateUser, "Pick a person, or type a user group, channel or email below.")
		case user != "" && typed != "":
			return fieldErrors(blocks.BlockEscalateTo, "Escalate to one target: clear this field or the person above.")
		}
		block, to := blocks.BlockEscalateUser, user
		if user == "" {
			block, to = blocks.BlockEscalateTo, typed
		}
		note := values[blocks.BlockNote][blocks.ActionText].Value
		out, err := s.opts.Decisions.Reassign(ctx, ref.RequestID, by, to, note)
		return s.replyVerb(ctx, block, string(aah.VerbEscalate), ref, by, out, err)
	}
}

// modifySubmission reads each edited parameter from its typed input,
// refusing one that does not parse on its own field, and approves with
// them (Core.Modify), whose refusal of a value is shown on its field too.
func (s *Slack) modifySubmission(ctx context.Context, ref blocks.ModalRef, by aah.Person, values map[string]map[string]slack.BlockAction) *viewErrors {
	_, req, err := s.opts.Requests.Load(ctx, ref.RequestID)
	if err != nil {
		return s.reply(ctx, blocks.BlockComment, "modify", ref, by, approval.Outcome{}, err)
	}
	d, ok := req.Decision(ref.DecisionID)
	if !ok || d.Review == nil {
		return s.reply(ctx, blocks.BlockComment, "modify", ref, by, approval.Outcome{}, &approval.Refusal{Reason: "This request has no such decision."})
	}
	edited := map[string]any{}
	errs := map[string]string{}
	for _, e := range d.Review.Editable {
		block := blocks.ParamBlock(e.Name)
		in, ok := values[block][blocks.ActionValue]
		if !ok {
			continue // not in the modal: keeps its proposed value
		}
		raw := in.Value
		if e.Type == aah.ParamBoolean || len(e.Enum) > 0 {
			raw = in.SelectedOption.Value // the radio buttons' "true"/"false" (blocks.BoolTrue), or the menu's
		}
		v, err := aah.ParseParamInput(e, raw)
		if err != nil {
			errs[block] = "This " + err.Error() + "."
			continue
		}
		edited[e.Name] = v
	}
	if len(errs) > 0 {
		return &viewErrors{ResponseAction: "errors", Errors: errs}
	}
	comment := values[blocks.BlockComment][blocks.ActionText].Value
	out, err := s.opts.Decisions.Modify(ctx, ref.RequestID, ref.DecisionID, by, edited, comment)
	return s.replyVerb(ctx, blocks.BlockComment, "modify", ref, by, out, err)
}

// rejectWithPicked rejects with the reason picked from the agent's list
// and/or the person's own words (Core.RejectWith): either explains it.
func (s *Slack) rejectWithPicked(ctx context.Context, ref blocks.ModalRef, by aah.Person, picked, comment string) *viewErrors {
	var ids []string
	if ref.DecisionID != blocks.RequestScope {
		ids = []string{ref.DecisionID}
	}
	out, err := s.opts.Decisions.RejectWith(ctx, ref.RequestID, ids, by, approval.Rejection{Picked: picked, Comment: comment})
	return s.replyVerb(ctx, blocks.BlockRejectReason, "reject", ref, by, out, err)
}

// offersReasons reports whether the reject modal of ref offered the
// agent's reasons (then its own words are optional).
func (s *Slack) offersReasons(ctx context.Context, ref blocks.ModalRef) bool {
	_, req, err := s.opts.Requests.Load(ctx, ref.RequestID)
	return err == nil && len(blocks.RejectReasons(req, ref.DecisionID)) > 0
}

// replyVerb is reply, with a refusal about a verb's field shown on that
// field's block: an edited parameter's, the target's, the note's, or the
// picked reason's.
func (s *Slack) replyVerb(ctx context.Context, block, action string, ref blocks.ModalRef, by aah.Person, out approval.Outcome, err error) *viewErrors {
	var r *approval.Refusal
	if errors.As(err, &r) {
		switch {
		case strings.HasPrefix(r.Field, approval.FieldParam):
			block = blocks.ParamBlock(strings.TrimPrefix(r.Field, approval.FieldParam))
		case r.Field == approval.FieldTo && block != blocks.BlockEscalateUser:
			block = blocks.BlockEscalateTo
		case r.Field == approval.FieldNote:
			block = blocks.BlockNote
		case r.Field == approval.FieldRejectReason:
			block = blocks.BlockRejectReason
		case r.Field == "comment":
			block = blocks.BlockComment
		}
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		return fieldErrors(block, r.Reason)
	}
	return s.reply(ctx, block, action, ref, by, out, err)
}
