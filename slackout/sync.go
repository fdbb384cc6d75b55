package slackout

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

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
		var status slack.StatusCodeError
		var apiErr slack.SlackErrorResponse
		switch {
		case errors.As(err, &rate):
			p.opts.Metrics.updates.WithLabelValues("rate_limited").Inc()
			return &jobs.RetryError{After: rate.RetryAfter, Free: true, Reason: "Slack rate limit on chat.update"}
		case errors.As(err, &status) && status.Code == http.StatusTooManyRequests:
			// Without Retry-After (a proxy dropped it): wait as a post does.
			p.opts.Metrics.updates.WithLabelValues("rate_limited").Inc()
			return &jobs.RetryError{After: p.opts.RateLimitHold, Free: true, Reason: "Slack answered 429 without Retry-After on chat.update"}
		case errors.As(err, &apiErr) && permanentSlackErrors[apiErr.Err]:
			p.opts.Metrics.updates.WithLabelValues("failed").Inc()
			p.log.ErrorContext(ctx, "message cannot be updated", "request_id", rec.ID, "slack_error", apiErr.Err)
			return nil
		}
		p.opts.Metrics.updates.WithLabelValues("retry").Inc()
		return persistent(fmt.Errorf("update message of %s: %w", rec.ID, err), p.opts.Now().Sub(rec.UpdatedAt))
	}
	p.opts.Metrics.updates.WithLabelValues("updated").Inc()
	p.log.InfoContext(ctx, "request message updated", "request_id", rec.ID, "status", rec.Status, "version", rec.Version)
	return p.opts.Store.MarkSynced(ctx, rec.ID, rec.Version)
}

// syncPersistence is how long after a request's last change its sync keeps
// retrying a failing chat.update without counting the attempts (persistent);
// past it,
// the runner's attempts and backoff apply, and it is dead-lettered after
// JOB_MAX_ATTEMPTS (a day of Slack failing to update one message is not an
// outage to wait out: GaveUp logs it).
const syncPersistence = 24 * time.Hour

// persistent is how a sync (or a closed request's copies job) retries a
// failed chat.update made since after the change it shows: not counted
// against JOB_MAX_ATTEMPTS for syncPersistence. Dead-lettered, nothing would
// bring the message up to date (a closed request has no next change), and
// it would show the request open, with live buttons, once Slack is back.
// Its retries are spaced by how long ago the change was made: seconds at
// first, five minutes at most. A retry Slack asked for (a 429) is kept.
func persistent(err error, since time.Duration) error {
	var retry *jobs.RetryError
	if errors.As(err, &retry) || since >= syncPersistence {
		return err
	}
	return &jobs.RetryError{After: min(max(since/10, 2*time.Second), 5*time.Minute), Free: true, Reason: err.Error()}
}

// GaveUp logs: an out-of-date message is visible, and the next change retries.
func (h syncJob) GaveUp(ctx context.Context, j store.Job, cause error) {
	h.p.log.ErrorContext(ctx, "gave up updating the message", "request_id", j.RequestID, "err", cause)
}
