package bot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slack-go/slack"
)

const secretToken = "xoxb-1111-2222-s3cr3tpart"

// scriptedAuth answers auth.test from a script, noting when each call came
// and what the readiness check said at that moment.
type scriptedAuth struct {
	script []error // nil: success
	auth   *slackAuth
	calls  []time.Time
	states []string
}

func (s *scriptedAuth) AuthTestContext(context.Context) (*slack.AuthTestResponse, error) {
	_, problem := s.auth.status()
	s.calls, s.states = append(s.calls, time.Now()), append(s.states, problem)
	err := s.script[0]
	s.script = s.script[1:]
	if err != nil {
		return nil, err
	}
	return &slack.AuthTestResponse{Team: "Acme", TeamID: "T0ACME", User: "approvalbot", UserID: "U0BOT",
		BotID: "B0BOT", URL: "https://acme.slack.com/"}, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// auth.test is retried with doubling waits (longer when Slack's 429 asks
// for it) until Slack accepts the token; meanwhile the readiness check says
// why it is not ready, and neither it nor the log ever shows the token.
func TestSlackAuthRetriesUntilSlackAcceptsTheToken(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logs lockedBuffer
		api := &scriptedAuth{script: []error{
			slack.SlackErrorResponse{Err: "invalid_auth"},
			slack.StatusCodeError{Code: http.StatusServiceUnavailable, Status: "503 Service Unavailable"},
			errors.New(`Post "https://slack.com/api/auth.test": token ` + secretToken + ` refused by proxy`),
			&slack.RateLimitedError{RetryAfter: 30 * time.Second},
			nil,
		}}
		a := newSlackAuth(api, secretToken, 0, slog.New(slog.NewTextHandler(&logs, nil)))
		api.auth = a
		if ok, problem := a.status(); ok || !strings.Contains(problem, "not confirmed yet") {
			t.Fatalf("before auth.test: ok=%v %q", ok, problem)
		}
		start := time.Now()
		if err := a.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var offsets []time.Duration
		for _, c := range api.calls {
			offsets = append(offsets, c.Sub(start))
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 37 * time.Second} // waits 1s, 2s, 4s, 30s (Retry-After > 8s)
		if len(offsets) != len(want) {
			t.Fatalf("auth.test called at %v, want %v", offsets, want)
		}
		for i := range want {
			if offsets[i] != want[i] {
				t.Fatalf("auth.test called at %v, want %v", offsets, want)
			}
		}
		for i, want := range []string{"not confirmed yet", "auth.test answered invalid_auth: Slack refuses SLACK_BOT_TOKEN",
			"Slack answered HTTP 503", "token [SLACK_BOT_TOKEN] refused by proxy", "rate limited (HTTP 429); retrying in 30s"} {
			if !strings.Contains(api.states[i], want) {
				t.Errorf("readiness before call %d = %q, want it to say %q", i+1, api.states[i], want)
			}
		}
		if ok, problem := a.status(); !ok || problem != "" {
			t.Errorf("after success: ok=%v %q", ok, problem)
		}
		select {
		case <-a.Ready():
		default:
			t.Error("Ready not closed after success")
		}
		out := logs.String()
		for _, want := range []string{"level=ERROR", "slack_error=invalid_auth", "team=Acme", "team_id=T0ACME",
			"bot_user_id=U0BOT", "bot_id=B0BOT"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out+strings.Join(api.states, " "), "s3cr3t") {
			t.Errorf("the token leaked into the log or readiness:\n%s\n%v", out, api.states)
		}
	})
}

// A wrong token is tried again at most once a minute, and run ends with ctx.
func TestSlackAuthBackoffIsCappedAndCancellable(t *testing.T) {
	t.Parallel()
	a := newSlackAuth(nil, "", 0, slog.New(slog.DiscardHandler))
	for attempt, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 5: 32 * time.Second,
		6: time.Minute, 40: time.Minute} {
		if got := a.retryDelay(attempt); got != want {
			t.Errorf("retryDelay(%d) = %v, want %v", attempt, got, want)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		script := make([]error, 100)
		for i := range script {
			script[i] = slack.SlackErrorResponse{Err: "token_revoked"}
		}
		api := &scriptedAuth{script: script}
		a := newSlackAuth(api, "xoxb-x", 0, slog.New(slog.DiscardHandler))
		api.auth = a
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := a.run(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("run = %v, want the context's error", err)
		}
		// Calls at 0, 1, 3, 7, 15, 31 and 63s, then one a minute: 123s … 543s.
		if n := len(api.calls); n != 7+8 {
			t.Errorf("%d calls in 10 minutes, want 15", n)
		}
		if ok, problem := a.status(); ok || !strings.Contains(problem, "token_revoked") {
			t.Errorf("after a revoked token: ok=%v %q", ok, problem)
		}
	})
}
