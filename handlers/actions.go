package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// blockActions handles clicks and selections in a request message. Answers
// are recorded before the ack; modals open and refusals are explained after.
func (s *Slack) blockActions(ctx context.Context, cb *slack.InteractionCallback) {
	by := s.person(ctx, cb.User)
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID == blocks.ActionListPage && a.BlockID == blocks.ListControlsBlockID {
			s.nextPage(cb, a.Value)
			continue
		}
		if a.ActionID == blocks.ActionRevokeGrant && a.BlockID == blocks.GrantsBlockID {
			s.revokeGrantClick(ctx, cb, channel, by, a.Value)
			continue
		}
		requestID, decisionID, _, ok := blocks.ParseBlockID(a.BlockID)
		if !ok {
			continue // not one of approvalbot's controls
		}
		var out approval.Outcome
		var err error
		switch a.ActionID {
		case blocks.ActionApprove, blocks.ActionReject:
			out, err = s.opts.Decisions.Answer(ctx, requestID, by, map[string]any{decisionID: a.ActionID == blocks.ActionApprove})
		case blocks.ActionSelect:
			out, err = s.opts.Decisions.Answer(ctx, requestID, by, map[string]any{decisionID: a.SelectedOption.Value})
		case blocks.ActionMultiSelect:
			picked := make([]string, len(a.SelectedOptions))
			for i, o := range a.SelectedOptions {
				picked[i] = o.Value
			}
			out, err = s.opts.Decisions.Answer(ctx, requestID, by, map[string]any{decisionID: picked})
		case blocks.ActionDate:
			picked := a.SelectedDate
			if a.Type == slack.ActionType(slack.METDatetimepicker) {
				// A moment (precision "datetime"): Slack sends unix seconds.
				picked = time.Unix(a.SelectedDateTime, 0).UTC().Format(time.RFC3339)
			}
			out, err = s.opts.Decisions.Answer(ctx, requestID, by, map[string]any{decisionID: picked})
		case blocks.ActionApproveAll, blocks.ActionRejectAll:
			out, err = s.opts.Decisions.AnswerAll(ctx, requestID, by, a.ActionID == blocks.ActionApproveAll)
		case blocks.ActionSubmit:
			out, err = s.opts.Decisions.SubmitWithComment(ctx, requestID, by, "")
		case blocks.ActionOpenInput, blocks.ActionComment, blocks.ActionDetails, blocks.ActionRejectReason, blocks.ActionRejectAllReason,
			blocks.ActionSubmitComment:
			s.openModal(ctx, a.ActionID, cb.TriggerID, requestID, decisionID, channel, by)
			continue
		case blocks.ActionApproveSimilar:
			s.openGrantModal(ctx, cb.TriggerID, requestID, decisionID, channel, by)
			continue
		case blocks.ActionModify, blocks.ActionVerbs:
			// Modify's button, or the request's overflow menu of verbs (verbs.go).
			verb := aah.VerbModify
			if a.ActionID == blocks.ActionVerbs {
				verb = aah.Verb(a.SelectedOption.Value)
			}
			s.openVerbModal(ctx, verb, cb.TriggerID, requestID, decisionID, channel, by)
			continue
		default:
			continue
		}
		s.settled(ctx, a.ActionID, channel, by, out, err)
	}
}

// settled reports an action's result: a refusal or a failure is explained to
// the person; a recorded change wakes the runner so the message catches up,
// and re-publishes the Home tabs that show the request.
func (s *Slack) settled(ctx context.Context, action, channel string, by aah.Person, out approval.Outcome, err error) {
	var refusal *approval.Refusal
	switch {
	case errors.As(err, &refusal):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		s.tellUser(channel, by.ID, ":no_entry: "+refusal.Reason)
	case errors.Is(err, store.ErrNotFound):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		s.tellUser(channel, by.ID, ":grey_question: This request no longer exists.")
	case storeTrouble(err) != "":
		s.metrics.actions.WithLabelValues(action, "unavailable").Inc()
		s.log.WarnContext(ctx, "could not record a reviewer action: store unavailable", "action", action, "user", by.ID, "err", err)
		s.tellUser(channel, by.ID, storeTrouble(err))
	case err != nil:
		s.metrics.actions.WithLabelValues(action, "error").Inc()
		s.log.ErrorContext(ctx, "could not record a reviewer action", "action", action, "user", by.ID, "err", err)
		s.tellUser(channel, by.ID, ":warning: Your click could not be recorded, please try again.")
	case !out.Changed:
		s.metrics.actions.WithLabelValues(action, "unchanged").Inc()
	default:
		s.metrics.actions.WithLabelValues(action, "recorded").Inc()
		s.log.InfoContext(ctx, "reviewer action recorded", "action", action, "request_id", out.Record.ID,
			"user", by.ID, "status", out.Record.Status, "resolved", out.Resolved)
		s.opts.Wake(out.Record.ID)
		s.refreshHomes(action, by, out.Record)
	}
}

// openModal opens the input, comment, reject, submit or details modal. Slack's
// trigger id lives three seconds, so the modal is built now and opened right
// after the ack. A person who may not answer is told so instead of getting
// a form they cannot submit.
func (s *Slack) openModal(ctx context.Context, action, triggerID, requestID, decisionID, channel string, by aah.Person) {
	rec, req, err := s.opts.Requests.Load(ctx, requestID)
	if err == nil && !rec.Status.Open() && action != blocks.ActionDetails {
		err = &approval.Refusal{Reason: "This request can no longer be answered (it is " + string(rec.Status) + ")."}
	}
	var d aah.Decision
	if err == nil && action != blocks.ActionRejectAllReason && action != blocks.ActionSubmitComment {
		var ok bool
		if d, ok = req.Decision(decisionID); !ok {
			err = &approval.Refusal{Reason: "This request has no such decision."}
		}
	}
	if err == nil && action != blocks.ActionDetails {
		check := "answer"
		if action == blocks.ActionComment {
			check = "comment"
		}
		err = s.opts.Decisions.Check(ctx, requestID, by, check)
	}
	if err != nil {
		s.settled(ctx, action, channel, by, approval.Outcome{}, err)
		return
	}
	ref := blocks.ModalRef{RequestID: requestID, DecisionID: decisionID, Channel: channel}
	var view slack.ModalViewRequest
	switch action {
	case blocks.ActionOpenInput:
		own, _ := rec.Answers[decisionID].CommentOf(by.ID)
		view = blocks.InputModal(req, d, rec.Answers[decisionID], own.Text, ref)
	case blocks.ActionComment:
		// Each person edits their own comment; others' stay as they are.
		own, _ := rec.Answers[decisionID].CommentOf(by.ID)
		view = blocks.CommentModal(req, d, own.Text, ref)
	case blocks.ActionRejectReason, blocks.ActionRejectAllReason:
		view = blocks.RejectModal(req, ref)
	case blocks.ActionSubmitComment:
		view = blocks.SubmitModal(req, ref)
	default:
		view = blocks.DetailsModal(req, d, ref)
	}
	s.opts.Async.Go("views.open", func(ctx context.Context) {
		if _, err := s.opts.Slack.OpenViewContext(ctx, triggerID, view); err != nil {
			s.log.WarnContext(ctx, "could not open a modal", "action", action, "request_id", requestID, "err", err)
			s.tellUser(channel, by.ID, ":warning: The dialog could not be opened; please click again.")
		}
	})
}
