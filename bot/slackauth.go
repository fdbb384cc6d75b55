package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// AuthTester is the Slack call that confirms the bot token; *slack.Client
// implements it.
type AuthTester interface {
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

// Retry schedule of auth.test at start: the first retry after
// defaultAuthRetry, doubling up to maxAuthRetry. A wrong token then costs
// one call (and one error line) a minute, and a Slack outage at deploy time
// ends with the first retry after it.
const (
	defaultAuthRetry = time.Second
	maxAuthRetry     = time.Minute
	authCallTimeout  = 10 * time.Second
)

// tokenSlackErrors are auth.test's answers that mean Slack refuses the token
// itself: only a new SLACK_BOT_TOKEN (and a restart) fixes them.
var tokenSlackErrors = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "no_permission": true, "org_login_required": true, "ekm_access_denied": true,
}

// slackAuth confirms at start, with auth.test, that Slack accepts the bot
// token. Until it does the process is not ready (/readyz says why) and runs
// no jobs: a wrong token must not turn every queued post into a permanent
// "invalid_auth" failure. It retries with backoff, so a transient Slack
// outage during a deploy heals by itself; once confirmed it does not check
// again (a Slack outage later must not take every process out of rotation).
type slackAuth struct {
	api   AuthTester
	log   *slog.Logger
	token string // redacted from error texts, never logged
	first time.Duration

	runMu sync.Mutex // one check loop at a time
	ready chan struct{}

	mu       sync.Mutex
	problem  string // why the token is not confirmed; "" once it is
	identity *slack.AuthTestResponse
}

func newSlackAuth(api AuthTester, token string, firstRetry time.Duration, log *slog.Logger) *slackAuth {
	if firstRetry <= 0 {
		firstRetry = defaultAuthRetry
	}
	return &slackAuth{api: api, log: log, token: token, first: firstRetry, ready: make(chan struct{}),
		problem: "not confirmed yet: auth.test has not answered"}
}

// Ready is closed once Slack has accepted the token.
func (a *slackAuth) Ready() <-chan struct{} { return a.ready }

// status is the readiness check: ok, or why not.
func (a *slackAuth) status() (ok bool, problem string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.problem == "", a.problem
}

// run calls auth.test until Slack accepts the token or ctx ends.
func (a *slackAuth) run(ctx context.Context) error {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	for attempt := 0; ; attempt++ {
		select {
		case <-a.ready:
			return nil
		default:
		}
		callCtx, cancel := context.WithTimeout(ctx, authCallTimeout)
		res, err := a.api.AuthTestContext(callCtx)
		cancel()
		if err == nil {
			a.accept(ctx, res)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := a.retryDelay(attempt)
		problem, code, tokenRefused, after := a.describe(err)
		delay = max(delay, after)
		a.mu.Lock()
		a.problem = fmt.Sprintf("%s; retrying in %s", problem, delay)
		a.mu.Unlock()
		level := slog.LevelWarn
		if tokenRefused {
			level = slog.LevelError
		}
		attrs := []any{"problem", problem, "attempt", attempt + 1, "retry_in", delay}
		if code != "" {
			attrs = append(attrs, "slack_error", code)
		}
		a.log.Log(ctx, level, "Slack auth.test failed: the bot is not ready and runs no jobs until Slack accepts SLACK_BOT_TOKEN", attrs...)
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// accept records the identity auth.test returned and makes the process ready.
func (a *slackAuth) accept(ctx context.Context, res *slack.AuthTestResponse) {
	a.mu.Lock()
	a.problem, a.identity = "", res
	a.mu.Unlock()
	close(a.ready)
	// Who the bot is, so a token of the wrong workspace or app shows at once.
	a.log.InfoContext(ctx, "Slack accepted the bot token (auth.test)", "team", res.Team, "team_id", res.TeamID,
		"enterprise_id", res.EnterpriseID, "bot_user", res.User, "bot_user_id", res.UserID, "bot_id", res.BotID,
		"url", res.URL)
}

// retryDelay is the wait after the attempt-th failure (0-based).
func (a *slackAuth) retryDelay(attempt int) time.Duration {
	d := a.first
	for range attempt {
		if d >= maxAuthRetry {
			break
		}
		d *= 2
	}
	return min(d, max(maxAuthRetry, a.first))
}

// describe explains a failed auth.test without the token: the readiness
// problem, Slack's error code ("" for transport failures), whether Slack
// refused the token itself, and how long Slack asked to wait (429).
func (a *slackAuth) describe(err error) (problem, code string, tokenRefused bool, after time.Duration) {
	var rate *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &apiErr):
		code = apiErr.Err
		if tokenSlackErrors[code] {
			return "auth.test answered " + code + ": Slack refuses SLACK_BOT_TOKEN (wrong, revoked, or of " +
				"another workspace or app); set the Bot User OAuth Token and restart", code, true, 0
		}
		return "auth.test answered " + code, code, false, 0
	case errors.As(err, &rate):
		return "auth.test was rate limited (HTTP 429)", "ratelimited", false, rate.RetryAfter
	case errors.As(err, &status):
		return fmt.Sprintf("auth.test: Slack answered HTTP %d %s", status.Code, http.StatusText(status.Code)), "", false, 0
	}
	msg := err.Error()
	if a.token != "" {
		msg = strings.ReplaceAll(msg, a.token, "[SLACK_BOT_TOKEN]")
	}
	return "auth.test: " + msg, "", false, 0
}
