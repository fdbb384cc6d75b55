package slackout

import (
	"context"
	"errors"
	"fmt"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// Every change to a posted request (an answer, a comment, resolution,
// withdrawal) bumps its version and schedules a "sync:<id>" job, which
// brings the message up to date with chat.update. An update is idempotent
// (it renders the latest state), so, unlike a post, it needs no
// exactly-once protocol: a repeat or a late run shows the same message.

type syncJob struct{ p *poster }

// Handle brings a posted message up to date with its request.
func (h syncJob) Handle(ctx context.Context, j store.Job) error {
	p := h.p
	rec, req, err := p.load(ctx, j.RequestID)
	if err != nil || req == nil {
		return err
	}
	if !rec.Posted() || rec.Slack.RenderedVersion >= rec.Version {
		return nil // the post job renders the latest state, or it is current
	}
	msg := renderMessage(ctx, p.opts.Store, p.log, rec, req, p.opts.Defaults, p.opts.GrantMax)
	_, _, _, err = p.opts.Slack.UpdateMessageContext(ctx, rec.Slack.Channel, rec.Slack.TS,
		slack.MsgOptionText(msg.Text, false), slack.MsgOptionBlocks(msg.Blocks...))
	if err != nil {
		var rate *slack.RateLimitedError
		var apiErr slack.SlackErrorResponse
		switch {
		case errors.As(err, &rate):
			p.opts.Metrics.updates.WithLabelValues("rate_limited").Inc()
			return &jobs.RetryError{After: rate.RetryAfter, Free: true, Reason: "Slack rate limit on chat.update"}
		case errors.As(err, &apiErr) && permanentSlackErrors[apiErr.Err]:
			p.opts.Metrics.updates.WithLabelValues("failed").Inc()
			p.log.ErrorContext(ctx, "message cannot be updated", "request_id", rec.ID, "slack_error", apiErr.Err)
			return nil
		}
		p.opts.Metrics.updates.WithLabelValues("retry").Inc()
		return fmt.Errorf("update message of %s: %w", rec.ID, err)
	}
	p.opts.Metrics.updates.WithLabelValues("updated").Inc()
	p.log.InfoContext(ctx, "request message updated", "request_id", rec.ID, "status", rec.Status, "version", rec.Version)
	return p.opts.Store.MarkSynced(ctx, rec.ID, rec.Version)
}

// GaveUp logs: an out-of-date message is visible, and the next change retries.
func (h syncJob) GaveUp(ctx context.Context, j store.Job, cause error) {
	h.p.log.ErrorContext(ctx, "gave up updating the message", "request_id", j.RequestID, "err", cause)
}
