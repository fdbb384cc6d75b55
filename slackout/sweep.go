package slackout

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// sweepJob runs "sweep:<id>" jobs, scheduled one lease after a message
// whose attempts overlapped was recorded: by then every attempt's Slack
// call has ended, and every copy but the recorded one is deleted.
type sweepJob struct {
	store Store
	slack messageLookup
	log   *slog.Logger
}

func (h sweepJob) Handle(ctx context.Context, j store.Job) error {
	rec, err := h.store.Get(ctx, j.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	// Everything the store knows is read before the Slack calls: a lookup
	// that used up the attempt's time must not fail it on a cheap read
	// afterwards, only for the retry to read the history again.
	copies, err := h.store.Copies(ctx, rec.ID)
	if err != nil {
		return err
	}
	if rec.Posted() && rec.Slack.Attempts > 1 {
		if err := h.sweep(ctx, rec.ID, store.PostEffect, rec.Slack.Channel, "", rec.Slack.TS, rec.Slack.FirstAttemptAt); err != nil {
			return err
		}
	}
	for _, c := range copies {
		if c.Copy == nil || c.Copy.TS == "" || c.Attempts < 2 {
			continue
		}
		if err := h.sweep(ctx, rec.ID, c.Effect, c.Copy.Channel, c.Copy.ThreadTS, c.Copy.TS, c.FirstAt); err != nil {
			return err
		}
	}
	return nil
}

// sweep deletes the messages of effect other than keep.
func (h sweepJob) sweep(ctx context.Context, id, effect, channel, threadTS, keep string, firstAt time.Time) error {
	found, err := findSent(ctx, h.slack, channel, threadTS, firstAt, id, effect)
	if err != nil {
		if code, retry := classifySlack(err, 0, isPermanent); retry == nil || errors.Is(err, errLookupTooLong) || errors.Is(err, errChannelUnknown) {
			h.log.ErrorContext(ctx, "cannot look for duplicate messages", "request_id", id, "effect", effect, "slack_error", code, "err", err)
			return nil
		}
		return err
	}
	for _, ts := range found {
		if ts == keep {
			continue
		}
		if err := deleteCopy(ctx, h.slack, h.log, id, effect, channel, ts); err != nil {
			return err
		}
	}
	return nil
}

func (h sweepJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "gave up looking for duplicate messages", "request_id", j.RequestID, "err", err)
}
