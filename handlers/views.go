package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot/decide"
	"github.com/slack-go/slack"
)

// viewSubmission handles a submitted modal. Its answer is validated and
// recorded before replying; a problem is answered with response_action
// "errors" on the offending block, so the modal stays open to fix it.
func (s *Slack) viewSubmission(ctx context.Context, w http.ResponseWriter, cb *slack.InteractionCallback) {
	ref, ok := blocks.ParseModalRef(cb.View.PrivateMetadata)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	by := person(cb.User)
	var values map[string]map[string]slack.BlockAction
	if cb.View.State != nil {
		values = cb.View.State.Values
	}
	comment, hasComment := values[blocks.BlockComment][blocks.ActionText]
	switch cb.View.CallbackID {
	case blocks.ModalComment:
		out, err := s.opts.Decisions.Comment(ctx, ref.RequestID, ref.DecisionID, by, comment.Value)
		s.reply(ctx, w, blocks.BlockComment, "comment", ref, by, out, err)
	case blocks.ModalInput:
		_, req, err := s.load(ctx, ref.RequestID)
		if err != nil {
			s.reply(ctx, w, blocks.BlockValue, "input", ref, by, decide.Outcome{}, err)
			return
		}
		d, ok := req.Decision(ref.DecisionID)
		if !ok {
			s.reply(ctx, w, blocks.BlockValue, "input", ref, by, decide.Outcome{}, &decide.Refusal{Reason: "This request has no such decision."})
			return
		}
		value, msg := parseInput(d, values[blocks.BlockValue][blocks.ActionValue].Value)
		if msg != "" {
			writeErrors(w, map[string]string{blocks.BlockValue: msg})
			return
		}
		// The comment first: a single-decision request resolves on its answer,
		// and its response must carry the comment.
		if hasComment && strings.TrimSpace(comment.Value) != "" {
			if out, err := s.opts.Decisions.Comment(ctx, ref.RequestID, ref.DecisionID, by, comment.Value); err != nil {
				s.reply(ctx, w, blocks.BlockComment, "comment", ref, by, out, err)
				return
			}
		}
		out, err := s.opts.Decisions.Answer(ctx, ref.RequestID, by, map[string]any{ref.DecisionID: value})
		s.reply(ctx, w, blocks.BlockValue, "input", ref, by, out, err)
	default:
		w.WriteHeader(http.StatusOK)
	}
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

// reply answers a modal submission: empty (the modal closes) once recorded,
// or field errors that keep it open. A refusal of a closed request is shown
// on the field too: it is the only place the person is looking.
func (s *Slack) reply(ctx context.Context, w http.ResponseWriter, block, action string, ref blocks.ModalRef, by aah.Person, out decide.Outcome, err error) {
	var refusal *decide.Refusal
	switch {
	case errors.As(err, &refusal):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		writeErrors(w, map[string]string{block: refusal.Reason})
	case err != nil:
		s.settled(ctx, action, ref.Channel, by, out, err)
		writeErrors(w, map[string]string{block: "This could not be saved, please try again."})
	default:
		s.settled(ctx, action, ref.Channel, by, out, nil)
		w.WriteHeader(http.StatusOK)
	}
}

func writeErrors(w http.ResponseWriter, errs map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"response_action": "errors", "errors": errs})
}
