package slackout

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
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

// classifySlack sorts a failed Slack call, with no side effects:
//   - a 429 with Retry-After: a *jobs.RetryError after it, not counted as a failed
//     attempt (Free);
//   - a 429 without it (a proxy's): a *jobs.RetryError after hold, counted, so a
//     proxy that keeps answering 429 ends in the dead-letter list;
//   - a Slack error code for which refused(code) is true: that code, and no
//     retry;
//   - anything else: err itself, to retry with backoff.
func classifySlack(err error, hold time.Duration, refused func(code string) bool) (code string, retry error) {
	var rate *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &rate):
		return "", &jobs.RetryError{After: max(rate.RetryAfter, time.Second), Free: true, Reason: "Slack answered 429"}
	case errors.As(err, &status) && status.Code == http.StatusTooManyRequests:
		return "", &jobs.RetryError{After: hold, Reason: "Slack answered 429 without Retry-After"}
	case errors.As(err, &apiErr) && refused(apiErr.Err):
		return apiErr.Err, nil
	}
	return "", err
}

func isPermanent(code string) bool { return permanentSlackErrors[code] }

// timerRefusals are Slack error codes that refuse one recipient for good
// (besides permanentSlackErrors): retrying cannot reach them.
var timerRefusals = map[string]bool{
	"cannot_dm_bot": true, "user_disabled": true, "user_is_bot": true, "users_not_found": true,
	"user_not_found": true, "no_such_subteam": true, "subteam_not_found": true, "messages_tab_disabled": true,
	"not_allowed_token_type": true, "channel_not_found": true, "not_in_channel": true,
}

// refusedForTimers: Slack error codes that no retry of a reminder or
// escalation message can fix.
func refusedForTimers(code string) bool { return permanentSlackErrors[code] || timerRefusals[code] }

// slackFailure handles a failed Slack call made while posting rec, on top of
// classifySlack: a rate limit also holds the channel for every process; a
// permanent error is recorded on the request (GET shows it) and acks the
// job; anything else is recorded as the latest error and retried.
func (p *poster) slackFailure(ctx context.Context, rec store.Record, method string, err error) error {
	code, retry := classifySlack(err, p.opts.RateLimitHold, isPermanent)
	var rate *jobs.RetryError
	switch {
	case errors.As(retry, &rate):
		p.opts.Metrics.posts.WithLabelValues("rate_limited").Inc()
		if herr := p.opts.Store.HoldChannel(ctx, rec.Channel, rate.After); herr != nil {
			p.log.WarnContext(ctx, "could not hold the channel after a 429", "err", herr)
		}
		p.log.WarnContext(ctx, "Slack rate limit; retrying later", "request_id", rec.ID, "method", method,
			"retry_after", rate.After, "retry_after_given", rate.Free)
		return retry
	case code != "":
		p.opts.Metrics.posts.WithLabelValues("failed").Inc()
		p.log.ErrorContext(ctx, "Slack refused the message; giving up", "request_id", rec.ID, "method", method,
			"slack_error", code, "channel", rec.Channel)
		if rerr := p.opts.Store.RecordPostError(ctx, rec.ID, code, true); rerr != nil {
			return rerr // retry: the failure must be recorded
		}
		return nil
	}
	p.opts.Metrics.posts.WithLabelValues("retry").Inc()
	code = err.Error()
	var apiErr slack.SlackErrorResponse
	if errors.As(err, &apiErr) {
		code = apiErr.Err
	}
	if rerr := p.opts.Store.RecordPostError(ctx, rec.ID, code, false); rerr != nil {
		p.log.WarnContext(ctx, "could not record the post error", "request_id", rec.ID, "err", rerr)
	}
	return err
}
