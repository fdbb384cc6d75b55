package slackout

import (
	"context"
	"errors"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// escalationJob runs "escalate:<id>:<k>" timers: step k of data.escalation,
// due at artifact.created_at + after. While the request is open it resolves
// the step's target (approval.ResolveTarget, through the cached directory
// authorization reads) and applies the step (approval.Core.Escalate: the
// request becomes escalated, the target's users may answer it, the original
// message says so); then it sends each target user (or the target channel)
// the full request with working controls.
//
// A target that cannot be resolved (an unknown email, an empty user group)
// is recorded on the request (approval.Core.EscalationFailed); the request
// stays answerable as before. Each step is applied once and each copy sent
// once (each is sent through sendCopy, which records it and finds it again
// after a crash; each target handled is recorded with Core.Reached), so a
// retry or a repeated run is harmless. When the request closes, its copies
// are updated (copiesJob).
type escalationJob struct{ timerDeps }

func (h escalationJob) Handle(ctx context.Context, j store.Job) error {
	id, k, ok := store.SplitTimer(j.RequestID)
	if !ok {
		h.log.ErrorContext(ctx, "malformed escalation job", "job", j.ID)
		return nil
	}
	rec, req, err := loadTimed(ctx, h.store, id, h.log)
	if err != nil || req == nil || !rec.Status.Open() {
		return err
	}
	if _, manual := store.ManualIndex(k); manual {
		return h.handMade(ctx, req, rec, k)
	}
	if k >= len(req.Data.Escalation) {
		h.log.ErrorContext(ctx, "escalation job for a step the request does not have", "job", j.ID)
		return nil
	}
	to := req.Data.Escalation[k].To
	target, reason, err := approval.ResolveTarget(ctx, h.dir, to)
	if err != nil {
		code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
		if retry != nil {
			h.log.WarnContext(ctx, "escalation target not resolved yet; retrying", "request_id", id, "step", k, "to", to, "err", err)
			return retry
		}
		reason = approval.LookupReason(to, code)
	}
	if reason != "" {
		return h.unresolved(ctx, id, k, to, reason)
	}
	out, err := h.core.Escalate(ctx, id, k, target)
	if err != nil {
		return err
	}
	if !out.Record.Status.Open() {
		return nil
	}
	return h.send(ctx, req, out.Record, k, target.Recipients(), target.Channel != "")
}

// send delivers the escalated request to each target not yet reached: a DM
// to each user, or a post in the channel. Only targets the request records
// as escalated to are sent to.
func (h escalationJob) send(ctx context.Context, req *aah.Request, rec store.Record, k int, targets []string, toChannel bool) error {
	msg := h.render(ctx, rec, req)
	for _, to := range targets {
		if slices.Contains(rec.EscalationSent[k], to) {
			continue
		}
		dest := destination{user: to}
		if toChannel {
			dest = destination{channel: to}
		}
		if toChannel && !slices.Contains(rec.EscalatedChannels, to) || !toChannel && !slices.Contains(rec.EscalatedTo, to) {
			continue
		}
		text, blks := escalationMessage(msg, escalationIntro(req, rec, k, toChannel))
		err := h.sendCopy(ctx, rec, escalationEffect(k, to), dest, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
		if err != nil {
			code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
			if retry != nil {
				h.log.WarnContext(ctx, "escalated request not sent; retrying", "request_id", rec.ID, "step", k, "to", to, "err", err)
				return retry
			}
			h.log.WarnContext(ctx, "Slack refused the escalated request", "request_id", rec.ID, "step", k, "to", to, "slack_error", code)
			if err := h.markSent(ctx, rec.ID, k, to, &store.AuditEvent{Event: "escalation_failed", Actor: "system",
				Data: map[string]any{"step": k, "to": to, "reason": "Slack refused the message: " + code}}); err != nil {
				return err
			}
			continue
		}
		if err := h.markSent(context.WithoutCancel(ctx), rec.ID, k, to, nil); err != nil {
			return err
		}
		h.log.InfoContext(ctx, "request escalated", "request_id", rec.ID, "step", k, "to", to)
	}
	return nil
}

// escalationIntro is the line above an escalated copy of the request:
// for a hand-made escalation, who handed it over and their note.
func escalationIntro(req *aah.Request, rec store.Record, k int, toChannel bool) string {
	who := "you"
	if toChannel {
		who = "this channel"
	}
	if m, manual := store.ManualIndex(k); manual {
		if m >= len(rec.Reassignments) {
			return ":arrow_heading_up: *Escalated to " + who + ".*"
		}
		r := rec.Reassignments[m]
		intro := ":arrow_heading_up: *Escalated to " + who + " by <@" + r.By.ID + ">*"
		if r.Note != "" {
			note := []rune(r.Note)
			if len(note) > 2000 { // a section's text holds 3000
				note = append(note[:1999], '…')
			}
			return intro + ": " + blocks.Escape(string(note))
		}
		return intro + "."
	}
	within := ""
	if k >= 0 && k < len(req.Data.Escalation) {
		step := req.Data.Escalation[k]
		within = step.AfterRaw
		if within == "" {
			within = step.After.String()
		}
	}
	return ":arrow_heading_up: *Escalated to " + who + ":* nobody decided within " + blocks.Escape(within) + "."
}

// escalationMessage is the request's full message (with its controls:
// block ids lead clicks back to the request wherever it is shown) under an
// intro line.
func escalationMessage(msg blocks.Message, intro string) (string, []slack.Block) {
	out := append([]slack.Block{slack.NewSectionBlock(mrkdwnText(intro), nil, nil)}, msg.Blocks...)
	if len(out) > blocks.MaxMessageBlocks {
		out = msg.Blocks // the notification text still carries the intro
	}
	return "Escalated to you: " + msg.Text, out
}

// unresolved records a step whose target cannot be resolved; the request
// stays as it was, answerable by its reviewers.
func (h escalationJob) unresolved(ctx context.Context, id string, k int, to, reason string) error {
	out, err := h.core.EscalationFailed(ctx, id, k, reason)
	if err == nil && out.Changed {
		h.log.WarnContext(ctx, "escalation target could not be resolved; the request stays with its reviewers",
			"request_id", id, "step", k, "to", to, "reason", reason)
	}
	return err
}

// markSent records to as handled for step k, with an audit event when
// given.
func (h escalationJob) markSent(ctx context.Context, id string, k int, to string, ev *store.AuditEvent) error {
	return h.core.Reached(ctx, id, store.Reach{Kind: store.JobEscalate, N: k, To: to}, ev)
}

// GaveUp records the step as failed, so the request shows it.
func (h escalationJob) GaveUp(ctx context.Context, j store.Job, cause error) {
	h.log.ErrorContext(ctx, "gave up escalating a request", "job", j.ID, "err", cause)
	id, k, ok := store.SplitTimer(j.RequestID)
	if !ok {
		return
	}
	rec, req, err := loadTimed(ctx, h.store, id, h.log)
	if err != nil || req == nil || k < 0 || k >= len(req.Data.Escalation) || slices.Contains(rec.EscalatedSteps, k) {
		return // applied (a hand-made one always is): only some copies failed, which the log shows
	}
	if err := h.unresolved(ctx, id, k, req.Data.Escalation[k].To, "gave up: "+cause.Error()); err != nil && !errors.Is(err, store.ErrNotFound) {
		h.log.ErrorContext(ctx, "could not record the failed escalation", "job", j.ID, "err", err)
	}
}

// handMade sends the copies of a reviewer's hand-made escalation (Core.
// Reassign, recorded as Reassignments[m] under step key k): applied when
// it was made, so only its copies are left, sent once each like a timed
// step's. The target is resolved again (the directory is cached) and only
// the users or channel the request records as escalated to are sent to.
func (h escalationJob) handMade(ctx context.Context, req *aah.Request, rec store.Record, k int) error {
	m, _ := store.ManualIndex(k)
	if m >= len(rec.Reassignments) {
		h.log.ErrorContext(ctx, "escalation job for a hand-made escalation the request does not have", "request_id", rec.ID, "step", k)
		return nil
	}
	to := rec.Reassignments[m].To
	target, reason, err := approval.ResolveTarget(ctx, h.dir, to)
	if err != nil {
		code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
		if retry != nil {
			h.log.WarnContext(ctx, "escalation target not resolved yet; retrying", "request_id", rec.ID, "step", k, "to", to, "err", err)
			return retry
		}
		reason = approval.LookupReason(to, code)
	}
	if reason != "" {
		h.log.WarnContext(ctx, "a hand-made escalation's target no longer resolves; its copies are not sent",
			"request_id", rec.ID, "step", k, "to", to, "reason", reason)
		return nil
	}
	return h.send(ctx, req, rec, k, target.Recipients(), target.Channel != "")
}
