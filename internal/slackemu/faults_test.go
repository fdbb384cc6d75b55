package slackemu

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestInjectError(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	s.InjectError("chat.postMessage", "fatal_error", 2)
	for range 2 {
		_, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
		slackErr(t, err, "fatal_error")
	}
	if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("third post: %v", err)
	}
	if n := len(s.Messages(ChannelGeneral)); n != 1 {
		t.Fatalf("%d messages stored, want 1 (injected failures have no effect)", n)
	}
	calls := s.CallsTo("chat.postMessage")
	if len(calls) != 3 || calls[0].Error != "fatal_error" || calls[2].Error != "" || calls[0].Status != 200 {
		t.Fatalf("calls = %+v", calls)
	}
	// Other methods are not affected.
	if _, err := api.AuthTest(); err != nil {
		t.Fatal(err)
	}
}

func TestInjectRateLimitWithRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{})
			api := tr.client(t, s)
			s.InjectRateLimit("chat.update", 1, 1500*time.Millisecond)
			_, ts, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, err = api.UpdateMessage(ChannelGeneral, ts, slack.MsgOptionText("y", false))
			var rl *slack.RateLimitedError
			if !errors.As(err, &rl) {
				t.Fatalf("error = %v (%T), want *slack.RateLimitedError", err, err)
			}
			if rl.RetryAfter != 2*time.Second {
				t.Fatalf("RetryAfter = %v, want 2s (1.5s rounded up)", rl.RetryAfter)
			}
			c := s.CallsTo("chat.update")[0]
			if c.Status != http.StatusTooManyRequests || c.Error != "ratelimited" || string(c.Response) != `{"ok":false,"error":"ratelimited"}` {
				t.Fatalf("recorded call = %+v", c)
			}
			if _, _, _, err := api.UpdateMessage(ChannelGeneral, ts, slack.MsgOptionText("y", false)); err != nil {
				t.Fatalf("after the injected 429: %v", err)
			}
		})
	}
}

func TestInjectRateLimitWithoutRetryAfter(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	s.InjectRateLimit("chat.postMessage", 1, 0)
	_, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
	var sc slack.StatusCodeError
	if !errors.As(err, &sc) || sc.Code != http.StatusTooManyRequests {
		t.Fatalf("error = %v (%T), want StatusCodeError 429", err, err)
	}
	status, header, body := raw(t, s, "POST", "/api/auth.test", "", "", nil)
	if status != 200 || header.Get("Retry-After") != "" {
		t.Fatalf("auth.test after = %d %v %s", status, header, body)
	}
}

func TestInjectHTTPStatus(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	s.InjectHTTPStatus("views.publish", http.StatusServiceUnavailable, 1)
	s.InjectHTTPStatus("views.publish", http.StatusBadGateway, 1) // queued after the first
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewDividerBlock()}}}
	for _, want := range []int{503, 502} {
		_, err := api.PublishView(UserAlice, home, "")
		var sc slack.StatusCodeError
		if !errors.As(err, &sc) || sc.Code != want {
			t.Fatalf("error = %v, want StatusCodeError %d", err, want)
		}
	}
	if _, err := api.PublishView(UserAlice, home, ""); err != nil {
		t.Fatal(err)
	}
	if c := s.CallsTo("views.publish")[0]; c.Status != 503 || c.Error != "" {
		t.Fatalf("recorded 5xx call = %+v", c)
	}
}

func TestPacingWithFakeClock(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := New(Options{EnforcePacing: true, Now: clock.Now})
	api := newInProc(s)
	post := func(channel string) error {
		_, _, err := api.PostMessage(channel, slack.MsgOptionText("x", false))
		return err
	}
	if err := post(ChannelApprovals); err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Millisecond)
	var rl *slack.RateLimitedError
	if err := post(ChannelApprovals); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("second post = %v, want RateLimitedError 1s", err)
	}
	// Other channels have their own pace; rejected posts do not count.
	if err := post(ChannelGeneral); err != nil {
		t.Fatal(err)
	}
	clock.Advance(700 * time.Millisecond)
	if err := post(ChannelApprovals); err != nil {
		t.Fatalf("post after the interval: %v", err)
	}

	s.SetPacing(true, 3*time.Second)
	clock.Advance(time.Second)
	if err := post(ChannelApprovals); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("3s pacing = %v, want RateLimitedError 2s", err)
	}
	s.SetPacing(false, 0)
	if err := post(ChannelApprovals); err != nil {
		t.Fatalf("pacing disabled: %v", err)
	}
}

// On the real clock: a second post within the interval is refused, and
// one after it is accepted. The "within" case uses an interval no stall of
// the machine can outlast; the "after" case waits past a short one, and
// waiting longer than asked can only make it later.
func TestPacingRealTime(t *testing.T) {
	t.Parallel()
	s := New(Options{EnforcePacing: true, PacingInterval: time.Minute})
	api := newHTTP(t, s)
	post := func() error {
		_, _, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("x", false))
		return err
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	accepted := time.Now() // the post was noted before this
	var rl *slack.RateLimitedError
	if err := post(); !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > time.Minute || rl.RetryAfter%time.Second != 0 {
		t.Fatalf("second post within the interval = %v, want RateLimitedError with Retry-After in whole seconds up to 60", err)
	}
	const interval = 100 * time.Millisecond
	s.SetPacing(true, interval)
	time.Sleep(time.Until(accepted.Add(interval + 5*time.Millisecond)))
	if err := post(); err != nil {
		t.Fatalf("post after the interval: %v", err)
	}
}

// InjectFailAfterEffect: Slack acts, then its answer is lost. The message is
// posted (or updated) all the same, and the client sees only the failure:
// a 5xx, or a dropped connection, over a listener and in-process.
func TestInjectFailAfterEffect(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{})
			api := tr.client(t, s)
			s.InjectFailAfterEffect("chat.postMessage", http.StatusBadGateway, 1)
			s.InjectFailAfterEffect("chat.postMessage", 0, 1) // queued after the 502
			_, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("first", false))
			var sc slack.StatusCodeError
			if !errors.As(err, &sc) || sc.Code != http.StatusBadGateway {
				t.Fatalf("first post: error = %v (%T), want StatusCodeError 502", err, err)
			}
			if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("second", false)); err == nil {
				t.Fatal("second post: no error, want the dropped connection's")
			} else if tr.name == "in-process" && !errors.Is(err, ErrConnectionDropped) {
				t.Fatalf("second post: error = %v, want ErrConnectionDropped", err)
			}
			msgs := s.Messages(ChannelGeneral)
			if len(msgs) != 2 || msgs[0].Text != "first" || msgs[1].Text != "second" {
				t.Fatalf("messages = %+v, want both posts to have taken effect", msgs)
			}
			calls := s.CallsTo("chat.postMessage")
			if len(calls) != 2 || calls[0].Status != http.StatusBadGateway || calls[1].Status != 0 {
				t.Fatalf("recorded calls = %+v, want statuses 502 and 0 (dropped)", calls)
			}

			// chat.update: the message changes, the answer is a 503.
			s.InjectFailAfterEffect("chat.update", http.StatusServiceUnavailable, 1)
			_, _, _, err = api.UpdateMessage(ChannelGeneral, msgs[0].TS, slack.MsgOptionText("edited", false))
			if !errors.As(err, &sc) || sc.Code != http.StatusServiceUnavailable {
				t.Fatalf("update: error = %v, want StatusCodeError 503", err)
			}
			if m := s.Messages(ChannelGeneral)[0]; m.Text != "edited" || m.Edited != 1 {
				t.Fatalf("after the failed update the message is %+v, want it edited", m)
			}
			// The fault is used up: the next call answers normally.
			if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("third", false)); err != nil {
				t.Fatalf("third post: %v", err)
			}
		})
	}
}
