package slackout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// reminderJob runs "remind:<id>:<n>" timers: reminder n of a request DMs
// every listed reviewer who has not answered yet (or, when the request names
// no reviewers, replies in the request's thread), then schedules reminder
// n+1 while n is below the plan's max.
//
// Exactly once per recipient: each DM (or thread reply) is a copy sent
// through sendCopy, which records it (and finds it again after a crash), so
// a retry after a partial failure only sends to the others; each recipient
// handled is also recorded on the request (approval.Core.Reached), and a
// re-run after the reminder completed (approval.Core.Reminded) sends nothing.
type reminderJob struct {
	timerDeps
	plan aah.ReminderPlan // the configured default; extensions.slack.reminders overrides it (approval.ReminderPlan)
}

func (h reminderJob) Handle(ctx context.Context, j store.Job) error {
	id, n, ok := store.SplitTimer(j.RequestID)
	if !ok || n < 1 {
		h.log.ErrorContext(ctx, "malformed reminder job", "job", j.ID)
		return nil
	}
	rec, req, err := loadTimed(ctx, h.store, id, h.log)
	if err != nil || req == nil {
		return err
	}
	if !approval.GetsReminders(rec.Status) || rec.RemindersDone >= n {
		return nil
	}
	done := rec.Reminded[n]
	var reached, failed []string
	for _, to := range reminderRecipients(req, rec) {
		if slices.Contains(done, to) {
			continue
		}
		text, blks := reminderMessage(req, rec, h.now(), to == store.ReminderThread)
		opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...)}
		dest := destination{user: to}
		if to == store.ReminderThread {
			if !rec.Posted() {
				// Nothing to reply to yet: the post job is still at work.
				// This reminder is skipped rather than posted out of context.
				continue
			}
			dest = destination{channel: rec.Slack.Channel, threadTS: rec.Slack.TS}
		}
		sendErr := h.sendCopy(ctx, rec, reminderEffect(n, to), dest, opts...)
		if sendErr != nil {
			code, retry := classifySlack(sendErr, h.rateLimitHold, refusedForTimers)
			if retry != nil {
				h.log.WarnContext(ctx, "reminder not sent; retrying", "request_id", id, "n", n, "to", to, "err", sendErr)
				return retry
			}
			// Refused for good: audit it and go on with the others.
			if err := h.markReminded(ctx, id, n, to, &store.AuditEvent{Event: "reminder_failed", Actor: "system",
				Data: map[string]any{"n": n, "recipient": to, "error": code}}); err != nil {
				return err
			}
			h.log.WarnContext(ctx, "reminder refused by Slack", "request_id", id, "n", n, "to", to, "slack_error", code)
			failed = append(failed, to)
			continue
		}
		// The copy is recorded already (a retry would not send it again).
		if err := h.markReminded(context.WithoutCancel(ctx), id, n, to, nil); err != nil {
			return err
		}
		reached = append(reached, to)
	}
	if err := h.core.Reminded(ctx, id, n, approval.ReminderPlan(req, h.plan)); err != nil {
		return err
	}
	h.log.InfoContext(ctx, "reminder sent", "request_id", id, "n", n, "reached", reached, "failed", failed)
	return nil
}

func (h reminderJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "gave up sending a reminder", "job", j.ID, "err", err)
	id, n, ok := store.SplitTimer(j.RequestID)
	if !ok {
		return
	}
	if uerr := h.core.Audit(ctx, id, store.AuditEvent{Event: "reminder_failed", Actor: "system",
		Data: map[string]any{"n": n, "error": "gave up: " + err.Error()}}); uerr != nil && !errors.Is(uerr, store.ErrNotFound) {
		h.log.ErrorContext(ctx, "could not audit the failed reminder", "job", j.ID, "err", uerr)
	}
}

// markReminded records to as handled for reminder n, with an audit event
// when given.
func (h reminderJob) markReminded(ctx context.Context, id string, n int, to string, ev *store.AuditEvent) error {
	return h.core.Reached(ctx, id, store.Reach{Kind: store.JobRemind, N: n, To: to}, ev)
}

// reminderRecipients are whom a reminder goes to: every listed reviewer
// (Slack ids as given, emails as they resolved when the message was posted;
// an email that did not resolve is skipped) who has not answered anything
// yet, or ReminderThread when the request lists no reviewers.
func reminderRecipients(req *aah.Request, rec store.Record) []string {
	if len(req.Slack.Reviewers) == 0 {
		return []string{store.ReminderThread}
	}
	answered := map[string]bool{}
	for _, a := range rec.Answers {
		if a.Answered() && !a.Defaulted && !a.TimedOut {
			answered[a.By.ID] = true
		}
	}
	var out []string
	for i, r := range req.Slack.Reviewers {
		user := r
		if !aah.IsSlackUserID(r) {
			// Mentions has one entry per reviewer, in order (see poster.mentions).
			if len(rec.Mentions) != len(req.Slack.Reviewers) {
				continue
			}
			m, ok := strings.CutPrefix(rec.Mentions[i], "<@")
			if !ok {
				continue // the email did not resolve to a Slack user
			}
			user = strings.TrimSuffix(m, ">")
		}
		if !answered[user] && !slices.Contains(out, user) {
			out = append(out, user)
		}
	}
	return out
}

// reminderMessage builds a reminder: what is still pending, how long the
// request has waited, its deadline and a link to it. inThread words it for a
// reply in the request's thread rather than a DM.
func reminderMessage(req *aah.Request, rec store.Record, now time.Time, inThread bool) (string, []slack.Block) {
	title := blocks.Escape(req.Artifact.Title)
	if link := rec.Slack.Permalink; link != "" {
		title = "<" + link + "|" + title + ">"
	}
	var pending []string
	for _, d := range req.Data.Decisions {
		if a, ok := rec.Answers[d.ID]; !ok || !a.Answered() {
			pending = append(pending, d.Prompt)
		}
	}
	waited := humanWait(now.Sub(rec.ReceivedAt))
	who := "your decision"
	if inThread {
		who = "a decision"
	}
	head := fmt.Sprintf(":bell: *Reminder:* *%s* is still waiting for %s (waiting %s).", title, who, waited)
	out := []slack.Block{slack.NewSectionBlock(mrkdwnText(head), nil, nil)}
	if len(pending) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "*Still pending (%d of %d):*", len(pending), len(req.Data.Decisions))
		for i, p := range pending {
			line := "\n• " + blocks.Escape(p)
			more := fmt.Sprintf("\n• …and %d more", len(pending)-i)
			if b.Len()+len(line)+len(more) > 2900 {
				b.WriteString(more)
				break
			}
			b.WriteString(line)
		}
		out = append(out, slack.NewSectionBlock(mrkdwnText(b.String()), nil, nil))
	}
	var ctxParts []string
	ctxParts = append(ctxParts, ":hourglass_flowing_sand: Waiting "+waited)
	if dl := req.EffectiveDeadline(); !dl.IsZero() {
		ctxParts = append(ctxParts, ":alarm_clock: Due "+blocks.Date(dl))
	}
	if link := rec.Slack.Permalink; link != "" {
		ctxParts = append(ctxParts, "<"+link+"|Open the request>")
	}
	out = append(out, slack.NewContextBlock("", mrkdwnText(strings.Join(ctxParts, " · "))))
	text := fmt.Sprintf("Reminder: %s is still waiting for %s (%d pending, waiting %s)",
		blocks.Escape(req.Artifact.Title), who, len(pending), waited)
	return text, out
}

// humanWait prints how long something has waited, in its two largest units.
func humanWait(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute"
	}
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	unit := func(n int, s string) string {
		if n == 1 {
			return "1 " + s
		}
		return strconv.Itoa(n) + " " + s + "s"
	}
	switch {
	case days > 0 && hours > 0:
		return unit(days, "day") + " " + unit(hours, "hour")
	case days > 0:
		return unit(days, "day")
	case hours > 0 && mins > 0:
		return unit(hours, "hour") + " " + unit(mins, "minute")
	case hours > 0:
		return unit(hours, "hour")
	}
	return unit(mins, "minute")
}

func mrkdwnText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}
