package handlers

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// viewSubmission handles a submitted modal. Its answer is validated and
// recorded before replying; a problem is answered with response_action
// "errors" on the offending block, so the modal stays open to fix it. It
// returns nil when the modal may close.
func (s *Slack) viewSubmission(ctx context.Context, cb *slack.InteractionCallback) *viewErrors {
	ref, ok := blocks.ParseModalRef(cb.View.PrivateMetadata)
	if !ok {
		return nil
	}
	by := s.person(ctx, cb.User)
	var values map[string]map[string]slack.BlockAction
	if cb.View.State != nil {
		values = cb.View.State.Values
	}
	comment := values[blocks.BlockComment][blocks.ActionText]
	switch cb.View.CallbackID {
	case blocks.ModalComment:
		out, err := s.opts.Decisions.Comment(ctx, ref.RequestID, ref.DecisionID, by, comment.Value)
		return s.reply(ctx, blocks.BlockComment, "comment", ref, by, out, err)
	case blocks.ModalReject:
		if picked := values[blocks.BlockRejectReason][blocks.ActionValue].SelectedOption.Value; picked != "" || s.offersReasons(ctx, ref) {
			return s.rejectWithPicked(ctx, ref, by, picked, comment.Value) // verbs.go
		}
		return s.rejectWithReason(ctx, ref, by, comment.Value)
	case blocks.ModalSubmit:
		// Submit with the overall comment; a refusal (a required decision
		// still open) shows under the comment, the modal staying open.
		out, err := s.opts.Decisions.SubmitWithComment(ctx, ref.RequestID, by, comment.Value)
		return s.reply(ctx, blocks.BlockComment, blocks.ActionSubmit, ref, by, out, err)
	case blocks.ModalGrant:
		return s.grantSubmission(ctx, ref, by, values)
	case blocks.ModalModify, blocks.ModalDirective, blocks.ModalEscalate:
		return s.verbSubmission(ctx, cb.View.CallbackID, ref, by, values) // verbs.go
	case blocks.ModalInput:
		_, req, err := s.opts.Requests.Load(ctx, ref.RequestID)
		if err != nil {
			return s.reply(ctx, blocks.BlockValue, "input", ref, by, approval.Outcome{}, err)
		}
		d, ok := req.Decision(ref.DecisionID)
		if !ok {
			return s.reply(ctx, blocks.BlockValue, "input", ref, by, approval.Outcome{}, &approval.Refusal{Reason: "This request has no such decision."})
		}
		value, msg := parseInput(d, values[blocks.BlockValue][blocks.ActionValue].Value)
		if msg != "" {
			return fieldErrors(blocks.BlockValue, msg)
		}
		var out approval.Outcome
		if strings.TrimSpace(comment.Value) != "" {
			// One update: a single-decision request resolves on its answer,
			// and its response must carry the comment.
			out, err = s.opts.Decisions.AnswerWithComment(ctx, ref.RequestID, ref.DecisionID, by, value, comment.Value)
		} else {
			out, err = s.opts.Decisions.Answer(ctx, ref.RequestID, by, map[string]any{ref.DecisionID: value})
		}
		return s.reply(ctx, blocks.BlockValue, "input", ref, by, out, err)
	default:
		return nil
	}
}

// rejectWithReason rejects one decision, or every approval decision for
// RequestScope, with the reason as the person's comment on each: one update.
func (s *Slack) rejectWithReason(ctx context.Context, ref blocks.ModalRef, by aah.Person, reason string) *viewErrors {
	if strings.TrimSpace(reason) == "" {
		return fieldErrors(blocks.BlockComment, "Say why you reject it.")
	}
	var out approval.Outcome
	var err error
	if ref.DecisionID == blocks.RequestScope {
		out, err = s.opts.Decisions.RejectAll(ctx, ref.RequestID, by, reason)
	} else {
		out, err = s.opts.Decisions.Reject(ctx, ref.RequestID, []string{ref.DecisionID}, by, reason)
	}
	return s.reply(ctx, blocks.BlockComment, "reject", ref, by, out, err)
}

// parseInput turns a modal's raw input into the decision's typed value, or a
// message for the field.
func parseInput(d aah.Decision, raw string) (any, string) {
	if d.Type == aah.TypeNumber {
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, "Enter a number."
		}
		if err := aah.CheckNumber(d, f); err != nil {
			return nil, "The number " + err.Error() + "."
		}
		return f, ""
	}
	if err := aah.CheckText(d, raw); err != nil {
		return nil, "The answer " + err.Error() + "."
	}
	return raw, ""
}

// reply answers a modal submission: nil (the modal closes) once recorded,
// or field errors that keep it open. A refusal of a closed request is shown
// on the field too: it is the only place the person is looking. A refusal
// about the comment (Field "comment") is shown under the comment.
func (s *Slack) reply(ctx context.Context, block, action string, ref blocks.ModalRef, by aah.Person, out approval.Outcome, err error) *viewErrors {
	var refusal *approval.Refusal
	switch {
	case errors.As(err, &refusal):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		if refusal.Field == "comment" {
			block = blocks.BlockComment
		}
		return fieldErrors(block, refusal.Reason)
	case errors.Is(err, store.ErrOutcomeUnknown):
		s.settled(ctx, action, ref.Channel, by, out, err)
		return fieldErrors(block, "This could not be confirmed in time (the bot's database is slow). "+
			"If the message does not show it within a few seconds, it was not saved: submit again.")
	case store.Unavailable(err):
		s.settled(ctx, action, ref.Channel, by, out, err)
		return fieldErrors(block, "Not saved: the bot's database did not answer in time. Please submit again in a moment.")
	case err != nil:
		s.settled(ctx, action, ref.Channel, by, out, err)
		return fieldErrors(block, "This could not be saved, please try again.")
	default:
		s.settled(ctx, action, ref.Channel, by, out, nil)
		return nil
	}
}

// viewErrors is a view_submission's answer that keeps the modal open with
// a message under each named block.
type viewErrors struct {
	ResponseAction string            `json:"response_action"`
	Errors         map[string]string `json:"errors"`
}

func fieldErrors(block, msg string) *viewErrors {
	return &viewErrors{ResponseAction: "errors", Errors: map[string]string{block: msg}}
}
