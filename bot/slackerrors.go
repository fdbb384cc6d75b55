package bot

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// permanentSlackErrors are Slack error codes that no retry can fix: the
// channel, the token, the app's scopes or the message itself must change.
// Other codes (internal_error, fatal_error, service_unavailable, ...) and
// transport failures are retried with backoff.
var permanentSlackErrors = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "channel_is_archived": true,
	"invalid_blocks": true, "invalid_blocks_format": true, "msg_too_long": true, "no_text": true,
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "missing_scope": true, "no_permission": true, "restricted_action": true,
	"restricted_action_read_only_channel": true, "restricted_action_thread_only_channel": true,
	"ekm_access_denied": true, "team_access_not_granted": true, "access_denied": true,
	"invalid_arguments": true, "invalid_metadata_format": true, "invalid_metadata_schema": true,
	"message_not_found": true, "cant_update_message": true, "edit_window_closed": true,
	"users_not_found": true, "user_not_found": true,
}

// slackFailure classifies a failed Slack call made while posting rec and
// returns what the runner should do with the job:
//   - 429 with Retry-After: hold the channel for every process, retry then,
//     not counted as a failed attempt;
//   - 429 without it: hold and retry after RateLimitHold, counted, so a
//     proxy that keeps answering 429 ends in the dead-letter list;
//   - a permanent Slack error: record it on the request (GET shows it) and
//     stop: nil acks the job;
//   - anything else: record it as the latest error and retry with backoff.
func (p *Poster) slackFailure(ctx context.Context, rec store.Record, method string, err error) error {
	var rate *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &rate):
		p.opts.Metrics.posts.WithLabelValues("rate_limited").Inc()
		hold := max(rate.RetryAfter, time.Second)
		if herr := p.opts.Records.HoldChannel(ctx, rec.Channel, hold); herr != nil {
			p.log.WarnContext(ctx, "could not hold the channel after a 429", "err", herr)
		}
		p.log.WarnContext(ctx, "Slack rate limit; retrying after Retry-After", "request_id", rec.ID, "method", method, "retry_after", hold)
		return &RetryError{After: hold, Free: true, Reason: "Slack answered 429 to " + method}
	case errors.As(err, &status) && status.Code == http.StatusTooManyRequests:
		p.opts.Metrics.posts.WithLabelValues("rate_limited").Inc()
		_ = p.opts.Records.HoldChannel(ctx, rec.Channel, p.opts.RateLimitHold)
		p.log.WarnContext(ctx, "Slack answered 429 without Retry-After", "request_id", rec.ID, "method", method)
		return &RetryError{After: p.opts.RateLimitHold, Reason: "429 without Retry-After from " + method}
	case errors.As(err, &apiErr) && permanentSlackErrors[apiErr.Err]:
		p.opts.Metrics.posts.WithLabelValues("failed").Inc()
		p.log.ErrorContext(ctx, "Slack refused the message; giving up", "request_id", rec.ID, "method", method,
			"slack_error", apiErr.Err, "channel", rec.Channel)
		if rerr := p.opts.Records.RecordPostError(ctx, rec.ID, apiErr.Err, true); rerr != nil {
			return rerr // retry: the failure must be recorded
		}
		return nil
	}
	p.opts.Metrics.posts.WithLabelValues("retry").Inc()
	code := err.Error()
	if errors.As(err, &apiErr) {
		code = apiErr.Err
	}
	if rerr := p.opts.Records.RecordPostError(ctx, rec.ID, code, false); rerr != nil {
		p.log.WarnContext(ctx, "could not record the post error", "request_id", rec.ID, "err", rerr)
	}
	return err
}
