package bot

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// escalationJob runs "escalate:<id>:<k>" timers: step k of data.escalation,
// due at artifact.created_at + after. While the request is open it resolves
// the step's target and, in one audited update, marks the request
// escalated, adds the target's users to those who may answer it and has
// the original message say so; then it sends each target user (or the
// target channel) the full request with working controls.
//
// A target that cannot be resolved (an unknown email, an empty user group,
// an agent id or a role name) is recorded on the request (escalation_error)
// and audited (escalation_failed); the request stays answerable as before.
// Each step is applied once (escalated_steps) and each copy sent once
// (escalation_sent_<k>; each copy is sent through sendCopy, which records it
// and finds it again after a crash), so a retry or a repeated run is
// harmless. When the request closes, its copies are updated (copiesJob).
type escalationJob struct{ timerDeps }

var (
	userGroupID = regexp.MustCompile(`^S[A-Z0-9]{2,}$`)
	channelID   = regexp.MustCompile(`^[CG][A-Z0-9]{2,}$`)
	dmChannelID = regexp.MustCompile(`^D[A-Z0-9]{2,}$`)
)

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
	if k < 0 || k >= len(req.Data.Escalation) {
		h.log.ErrorContext(ctx, "escalation job for a step the request does not have", "job", j.ID)
		return nil
	}
	step := req.Data.Escalation[k]
	users, channel, reason, err := h.resolve(ctx, step.To)
	if err != nil {
		h.log.WarnContext(ctx, "escalation target not resolved yet; retrying", "request_id", id, "step", k, "to", step.To, "err", err)
		return err
	}
	if reason != "" {
		return h.unresolved(ctx, id, k, step.To, reason)
	}
	targets := users
	if channel != "" {
		targets = []string{channel}
	}
	rec, err = h.store.Update(ctx, id, func(rec store.Record) (*store.Change, error) {
		if !rec.Status.Open() || slices.Contains(rec.EscalatedSteps, k) {
			return nil, nil
		}
		ch := &store.Change{
			Status: aah.StatusEscalated,
			Bump:   true,
			Set:    map[string]any{"escalated_steps": mustJSON(append(slices.Clone(rec.EscalatedSteps), k))},
			Audit: []store.AuditEvent{{Event: "escalated", Actor: "system",
				Data: map[string]any{"step": k, "to": step.To, "targets": targets}}},
		}
		if channel != "" {
			ch.Set["escalated_channels"] = mustJSON(merge(rec.EscalatedChannels, channel))
		} else {
			ch.Set["escalated_to"] = mustJSON(merge(rec.EscalatedTo, users...))
			ch.AddReviewers = users // the targets find it in "/approvals mine"
		}
		return ch, nil
	})
	if err != nil {
		return err
	}
	if !rec.Status.Open() {
		return nil
	}
	return h.send(ctx, req, rec, k, targets, channel != "")
}

// send delivers the escalated request to each target not yet reached: a DM
// to each user, or a post in the channel. Only targets the request records
// as escalated to are sent to.
func (h escalationJob) send(ctx context.Context, req *aah.Request, rec store.Record, k int, targets []string, toChannel bool) error {
	msg := blocks.Render(req, stateOf(rec, h.defaults))
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
		text, blks := escalationMessage(msg, escalationIntro(req, k, toChannel))
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

// escalationIntro is the line above an escalated copy of the request.
func escalationIntro(req *aah.Request, k int, toChannel bool) string {
	within := ""
	if k >= 0 && k < len(req.Data.Escalation) {
		step := req.Data.Escalation[k]
		within = step.AfterRaw
		if within == "" {
			within = step.After.String()
		}
	}
	who := "you"
	if toChannel {
		who = "this channel"
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
	_, err := h.store.Update(ctx, id, func(rec store.Record) (*store.Change, error) {
		if !rec.Status.Open() || slices.Contains(rec.EscalatedSteps, k) {
			return nil, nil
		}
		msg := fmt.Sprintf("step %d (%s): %s", k, to, reason)
		if rec.EscalationError != "" {
			msg = rec.EscalationError + "; " + msg
		}
		return &store.Change{
			Set: map[string]any{"escalated_steps": mustJSON(append(slices.Clone(rec.EscalatedSteps), k)),
				"escalation_error": msg},
			Audit: []store.AuditEvent{{Event: "escalation_failed", Actor: "system",
				Data: map[string]any{"step": k, "to": to, "reason": reason}}},
		}, nil
	})
	if err == nil {
		h.log.WarnContext(ctx, "escalation target could not be resolved; the request stays with its reviewers",
			"request_id", id, "step", k, "to", to, "reason", reason)
	}
	return err
}

// resolve turns an escalation target into Slack users or a channel. A
// target that can never resolve gives a reason; a failure worth retrying
// gives an error.
func (h escalationJob) resolve(ctx context.Context, to string) (users []string, channel, reason string, err error) {
	to = strings.TrimSpace(to)
	switch {
	case aah.IsSlackUserID(to):
		return []string{to}, "", "", nil
	case channelID.MatchString(to), strings.HasPrefix(to, "#") && len(to) > 1:
		return nil, to, "", nil
	case userGroupID.MatchString(to):
		members, err := h.slack.GetUserGroupMembersContext(ctx, to)
		if err != nil {
			code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
			if retry != nil {
				return nil, "", "", retry
			}
			return nil, "", "the user group could not be read (" + code + ")", nil
		}
		if len(members) == 0 {
			return nil, "", "the user group has no members", nil
		}
		return members, "", "", nil
	case aah.IsEmail(to):
		u, err := h.slack.GetUserByEmailContext(ctx, to)
		if err != nil {
			code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
			if retry != nil {
				return nil, "", "", retry
			}
			if code == "users_not_found" || code == "user_not_found" {
				return nil, "", "no Slack user has this email (" + code + ")", nil
			}
			return nil, "", "the email could not be looked up (" + code + ")", nil
		}
		return []string{u.ID}, "", "", nil
	}
	return nil, "", "not a Slack user id, email, user group or channel", nil
}

// markSent adds to to the targets step k was sent to, with an audit event
// when given.
func (h escalationJob) markSent(ctx context.Context, id string, k int, to string, ev *store.AuditEvent) error {
	return markReached(ctx, h.store, id, store.EscalationSentField+strconv.Itoa(k),
		func(rec store.Record) []string { return rec.EscalationSent[k] }, to, ev)
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
		return // applied: only some copies failed, which the log shows
	}
	if err := h.unresolved(ctx, id, k, req.Data.Escalation[k].To, "gave up: "+cause.Error()); err != nil && !errors.Is(err, store.ErrNotFound) {
		h.log.ErrorContext(ctx, "could not record the failed escalation", "job", j.ID, "err", err)
	}
}

// merge appends the values not yet in list.
func merge(list []string, values ...string) []string {
	out := slices.Clone(list)
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// escalationMentions names whom a request was escalated to, for its message.
func escalationMentions(rec store.Record) []string {
	var out []string
	for _, u := range rec.EscalatedTo {
		out = append(out, "<@"+u+">")
	}
	for _, c := range rec.EscalatedChannels {
		if channelID.MatchString(c) {
			out = append(out, "<#"+c+">")
		} else {
			out = append(out, blocks.Escape(c))
		}
	}
	return out
}
