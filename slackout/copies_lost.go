package slackout

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// adoptLost records the copies of a closed request that an attempt may
// have sent without recording them: Slack acted but its answer was lost,
// or the worker died in the call. The reminder or escalation job would
// have found such a copy on its retry, but closing the request cancelled
// it; left alone, the copy would show the request open, with live buttons,
// for good (as closedBeforeRecorded does for the request's own message).
// It reports whether it recorded any, for the caller to read the copies
// again and bring those up to date with the rest, and when to look again:
// an attempt still inside its Slack call when the request closed (this job
// runs at once) has not reached the channel's history yet. Every such call
// has ended one lease after the close (a job's run ends within ¾ of its
// lease, and its attempts begin within it), so an effect attempted but not
// found is looked for again then, once (recheck; zero when none is due).
func (h copiesJob) adoptLost(ctx context.Context, rec store.Record, copies []store.CopyState) (adopted bool, recheck time.Time, err error) {
	for _, cs := range copies {
		if cs.Copy != nil || cs.Attempts == 0 || isNotifyEffect(cs.Effect) {
			// A requester's DM is looked for by its own job's retries
			// (closing the request does not cancel it).
			continue
		}
		dest, ok := copyDestination(rec, cs.Effect)
		if !ok {
			continue
		}
		found, err := h.lookForCopy(ctx, rec, cs, dest)
		if err != nil {
			code, retry := classifySlack(err, h.rateLimitHold, isPermanent)
			if retry != nil && !errors.Is(err, errLookupTooLong) && !errors.Is(err, errChannelUnknown) {
				h.log.WarnContext(ctx, "could not look for a copy an earlier attempt may have sent; retrying",
					"request_id", rec.ID, "effect", cs.Effect, "err", err)
				return adopted, time.Time{}, retry
			}
			h.log.ErrorContext(ctx, "cannot look for a copy an earlier attempt may have sent: if it reached Slack, "+
				"it still shows the request open", "request_id", rec.ID, "effect", cs.Effect, "slack_error", cmp.Or(code, err.Error()))
			continue
		}
		if len(found) == 0 {
			if settled := rec.UpdatedAt.Add(h.lease); h.now().Before(settled) {
				recheck = settled
			}
			continue
		}
		c := store.Copy{Effect: cs.Effect, Channel: found[0].channel, TS: found[0].ts, ThreadTS: dest.threadTS}
		_, won, err := h.store.RecordCopy(context.WithoutCancel(ctx), rec.ID, c, h.now().Add(h.lease))
		if err != nil {
			return adopted, time.Time{}, err
		}
		if won {
			// The attempt that sent it never recorded it, so never
			// counted it: this one does.
			h.metrics.copySent(cs.Effect)
		}
		adopted = true
		h.log.InfoContext(ctx, "found a copy an earlier attempt sent for a request closed since; updating it",
			"request_id", rec.ID, "effect", cs.Effect)
	}
	return adopted, recheck, nil
}

// lookForCopy finds the copies of cs's effect that its attempts sent to dest.
func (h copiesJob) lookForCopy(ctx context.Context, rec store.Record, cs store.CopyState, dest destination) ([]foundCopy, error) {
	channel := dest.channel
	if dest.user != "" {
		ch, _, _, err := h.slack.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{dest.user}})
		if err != nil {
			return nil, err
		}
		channel = ch.ID
	}
	return h.findCopy(ctx, rec.ID, cs.Effect, channel, dest.threadTS, store.Attempt{N: cs.Attempts, FirstAt: cs.FirstAt})
}

// copyDestination is where the reminder or escalation job sent a copy
// effect ("remind:<n>:<to>", "escalate:<k>:<to>"): a user's DM, the
// request's thread, or an escalation channel.
func copyDestination(rec store.Record, effect string) (destination, bool) {
	kind, rest, _ := strings.Cut(effect, ":")
	_, to, ok := strings.Cut(rest, ":")
	switch {
	case !ok || to == "":
		return destination{}, false
	case kind == store.JobRemind && to == store.ReminderThread:
		if !rec.Posted() {
			return destination{}, false
		}
		return destination{channel: rec.Slack.Channel, threadTS: rec.Slack.TS}, true
	case aah.IsSlackUserID(to):
		return destination{user: to}, true
	case kind == store.JobEscalate:
		return destination{channel: to}, true
	}
	return destination{}, false
}
