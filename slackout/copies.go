package slackout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// Reminder and escalation copies of a request: sent exactly once each (the
// protocol of store/sideeffects.go), recorded on the request, and brought
// up to date once the request closes.

// timerDeps are what the reminder and escalation jobs share.
type timerDeps struct {
	store Store
	// core records what the jobs did (reminders completed, recipients
	// reached, escalation steps applied).
	core *approval.Core
	// dir resolves escalation targets: the cached directory authorization
	// reads.
	dir   approval.Directory
	slack SlackAPI
	now   func() time.Time
	log   *slog.Logger
	// rateLimitHold is how long a 429 without Retry-After waits
	// (Options.RateLimitHold).
	rateLimitHold time.Duration
	// defaults are the workspace's sign-off rules, shown in messages.
	defaults aah.Defaults
	// grantMax is Options.GrantMax.
	grantMax time.Duration
	// lease is the job lease: a sweep for overlapping attempts at a copy
	// is due one lease after the copy is recorded.
	lease time.Duration
	// metrics count the copies sent.
	metrics *Metrics
}

func (d timerDeps) with(log *slog.Logger, component string) timerDeps {
	d.log = log.With("component", component)
	return d
}

// destination is where a copy goes: a user's DM, or a channel (a thread in
// it when threadTS is set).
type destination struct {
	user     string
	channel  string
	threadTS string
}

// reminderEffect and escalationEffect name copies: "remind:<n>:<to>",
// "escalate:<k>:<to>".
func reminderEffect(n int, to string) string {
	return store.JobRemind + ":" + strconv.Itoa(n) + ":" + to
}
func escalationEffect(k int, to string) string {
	return store.JobEscalate + ":" + strconv.Itoa(k) + ":" + to
}

// sendCopy sends rec's copy effect to dest exactly once: nothing when it is
// recorded; from the second attempt on, the copy an earlier attempt sent is
// looked for and adopted; the copy sent is recorded fenced, and deleted when
// another attempt's copy was recorded first. A failed Slack call is returned
// for the caller to classify.
func (h timerDeps) sendCopy(ctx context.Context, rec store.Record, effect string, dest destination, opts ...slack.MsgOption) error {
	att, err := h.store.BeginCopy(ctx, rec.ID, effect)
	if err != nil || att.Done {
		return err
	}
	// As for posts: an attempt that certainly sent nothing stops counting.
	mayHaveSent := false
	defer func() {
		if !mayHaveSent {
			if err := h.store.AbandonCopy(context.WithoutCancel(ctx), rec.ID, effect); err != nil {
				h.log.WarnContext(ctx, "could not uncount an attempt that sent nothing", "request_id", rec.ID, "effect", effect, "err", err)
			}
		}
	}()
	channel := dest.channel
	if dest.user != "" {
		ch, _, _, err := h.slack.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{dest.user}})
		if err != nil {
			return err
		}
		channel = ch.ID
	}
	if att.N > 1 {
		found, err := h.findCopy(ctx, rec.ID, effect, channel, dest.threadTS, att)
		switch {
		case err != nil:
			if retry := lookupFailed(ctx, h.log, err, h.rateLimitHold, rec.ID, effect); retry != nil {
				return retry
			}
		case len(found) > 0:
			// Recorded even past the attempt's deadline, as a sent copy
			// is (see poster.adopt).
			c := store.Copy{Effect: effect, Channel: found[0].channel, TS: found[0].ts, ThreadTS: dest.threadTS}
			_, won, err := h.store.RecordCopy(context.WithoutCancel(ctx), rec.ID, c, h.now().Add(h.lease))
			if err == nil && won {
				// The attempt that sent it never recorded it, so never
				// counted it: this one does.
				h.metrics.copySent(effect)
			}
			h.log.InfoContext(ctx, "found the copy an earlier attempt sent; not sending again", "request_id", rec.ID, "effect", effect)
			return err
		}
	}
	if dest.threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(dest.threadTS))
	}
	opts = append(opts, copyMetadata(rec.ID, effect, att.N))
	mayHaveSent = true
	posted, ts, err := h.slack.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		mayHaveSent = !refusedOutright(err)
		return err
	}
	recordCtx := context.WithoutCancel(ctx)
	if posted != channel && !aah.IsSlackChannelID(channel) {
		if err := h.store.NoteChannelID(recordCtx, channel, posted); err != nil {
			h.log.WarnContext(ctx, "could not note the channel's id", "channel", channel, "err", err)
		}
	}
	c := store.Copy{Effect: effect, Channel: posted, TS: ts, ThreadTS: dest.threadTS, Version: rec.Version}
	_, won, err := h.store.RecordCopy(recordCtx, rec.ID, c, h.now().Add(h.lease))
	if err != nil {
		h.log.ErrorContext(ctx, "copy sent but not recorded; the next attempt looks for it", "request_id", rec.ID, "effect", effect, "err", err)
		return err
	}
	if !won {
		h.log.WarnContext(ctx, "another attempt recorded its copy first; deleting this one", "request_id", rec.ID, "effect", effect)
		return deleteCopy(recordCtx, h.slack, h.log, rec.ID, effect, posted, ts)
	}
	h.metrics.copySent(effect)
	return nil
}

type foundCopy struct{ channel, ts string }

// dmChannelID matches the id of a DM conversation (a copy sent to a user).
var dmChannelID = regexp.MustCompile(`^D[A-Z0-9]{2,}$`)

// findCopy looks for the copies of effect earlier attempts sent.
func (h timerDeps) findCopy(ctx context.Context, id, effect, channel, threadTS string, att store.Attempt) ([]foundCopy, error) {
	if !aah.IsSlackChannelID(channel) && !dmChannelID.MatchString(channel) {
		known, err := h.store.ChannelID(ctx, channel)
		if err != nil {
			return nil, err
		}
		if known == "" {
			return nil, errChannelUnknown
		}
		channel = known
	}
	tss, err := findSent(ctx, h.slack, channel, threadTS, att.FirstAt, id, effect)
	out := make([]foundCopy, len(tss))
	for i, ts := range tss {
		out[i] = foundCopy{channel, ts}
	}
	return out, err
}

// copiesJob runs "copies:<id>" jobs: once a request closed (resolved,
// expired or withdrawn), every reminder and escalation copy it recorded is
// updated to show the outcome, without controls, each once (a copy is
// marked final when done, so a retry updates only the rest), after
// adopting any copy an attempt sent without recording it (adoptLost). The
// store schedules the job when the request closes (if a copy was recorded
// or attempted), and again when a copy is recorded after it closed.
type copiesJob struct{ timerDeps }

func (h copiesJob) Handle(ctx context.Context, j store.Job) error {
	rec, req, err := loadTimed(ctx, h.store, j.RequestID, h.log)
	if err != nil || req == nil || rec.Status.Open() {
		return err
	}
	copies, err := h.store.Copies(ctx, rec.ID)
	if err != nil {
		return err
	}
	adopted, recheck, err := h.adoptLost(ctx, rec, copies)
	if err != nil {
		return err
	} else if adopted {
		if copies, err = h.store.Copies(ctx, rec.ID); err != nil {
			return err
		}
	}
	for _, cs := range copies {
		c := cs.Copy
		if c == nil || c.Final || isNotifyEffect(c.Effect) {
			continue // a requester's DM is final as sent
		}
		text, blks := h.closedCopy(ctx, req, rec, c.Effect)
		_, _, _, err := h.slack.UpdateMessageContext(ctx, c.Channel, c.TS, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
		if err != nil {
			code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
			if retry != nil {
				h.log.WarnContext(ctx, "copy not updated; retrying", "request_id", rec.ID, "effect", c.Effect, "err", err)
				return persistent(retry, h.now().Sub(rec.UpdatedAt))
			}
			h.log.WarnContext(ctx, "copy cannot be updated; left as it is", "request_id", rec.ID, "effect", c.Effect, "slack_error", code)
		}
		c.Version, c.Final = rec.Version, true
		if err := h.store.MarkCopySynced(context.WithoutCancel(ctx), rec.ID, *c); err != nil {
			return err
		}
	}
	if !recheck.IsZero() {
		return &jobs.RetryError{After: recheck.Sub(h.now()), Free: true,
			Reason: "a copy attempted before the close may still be on its way to Slack; looking for it again"}
	}
	return nil
}

func (h copiesJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "gave up updating the copies of a closed request", "request_id", j.RequestID, "err", err)
}

// closedCopy renders a copy of the closed request: an escalation copy is
// the request's message in its final state (no controls) under its intro; a
// reminder says the request no longer waits and how it ended.
func (h timerDeps) closedCopy(ctx context.Context, req *aah.Request, rec store.Record, effect string) (string, []slack.Block) {
	kind, rest, _ := strings.Cut(effect, ":")
	k, to, _ := strings.Cut(rest, ":")
	if kind == store.JobEscalate {
		step, _ := strconv.Atoi(k)
		return escalationMessage(h.render(ctx, rec, req), escalationIntro(req, rec, step, !aah.IsSlackUserID(to)))
	}
	title := blocks.Escape(req.Artifact.Title)
	if link := rec.Slack.Permalink; link != "" {
		title = "<" + link + "|" + title + ">"
	}
	outcome := map[aah.Status]string{aah.StatusResolved: "was decided", aah.StatusExpired: "expired",
		aah.StatusWithdrawn: "was withdrawn by the agent"}[rec.Status]
	if outcome == "" {
		outcome = "is closed (" + string(rec.Status) + ")"
	}
	switch {
	case rec.Directive != nil:
		outcome = blocks.DirectiveOutcome(*rec.Directive)
	case rec.Status == aah.StatusResolved && rec.ResolvedBy.ID != "":
		outcome += " by <@" + rec.ResolvedBy.ID + ">"
	}
	head := fmt.Sprintf(":white_check_mark: *Reminder:* *%s* no longer waits for a decision: it %s.", title, outcome)
	text := fmt.Sprintf("Reminder: %s no longer waits for a decision: it %s.", blocks.Escape(req.Artifact.Title), outcome)
	return text, []slack.Block{slack.NewSectionBlock(mrkdwnText(head), nil, nil)}
}

// loadTimed reads a request with its parsed document for a timer job. A
// nil request with a nil error means there is nothing to do.
func loadTimed(ctx context.Context, st Store, id string, log *slog.Logger) (store.Record, *aah.Request, error) {
	rec, req, err := st.Load(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Record{}, nil, nil
	case errors.Is(err, store.ErrInvalidDocument):
		log.ErrorContext(ctx, "stored request no longer parses", "request_id", id, "err", err)
		return store.Record{}, nil, nil
	case err != nil:
		return store.Record{}, nil, err
	}
	return rec, req, nil
}
