package slackemu

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// runSocketClient runs slack-go's Socket Mode client against s until the
// test ends; handle answers each request's ack payload.
func runSocketClient(t *testing.T, s *Server, handle func(socketmode.Event) any) {
	t.Helper()
	api := slack.New(s.Token(), slack.OptionAppLevelToken(s.AppToken()),
		slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
	client := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = client.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-client.Events:
				if ev.Request != nil && ev.Request.EnvelopeID != "" {
					_ = client.AckCtx(ctx, ev.Request.EnvelopeID, handle(ev))
				}
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); _ = s.Close() })
}

func TestSocketModeRoundTrip(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	runSocketClient(t, s, func(ev socketmode.Event) any {
		switch ev.Type {
		case socketmode.EventTypeSlashCommand:
			cmd := ev.Data.(slack.SlashCommand)
			return map[string]string{"text": "you said " + cmd.Text}
		case socketmode.EventTypeInteractive:
			cb := ev.Data.(slack.InteractionCallback)
			if cb.Type == slack.InteractionTypeViewSubmission {
				return map[string]any{"response_action": "errors", "errors": map[string]string{"b": "no"}}
			}
		}
		return nil
	})
	c := ctx(t)
	got, err := s.Deliver(c, "slash_commands", map[string]string{"command": "/approvals", "text": "all", "user_id": "U0ALICE"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Ack) != `{"text":"you said all"}` || !got.AcceptsResponsePayload || got.Latency() <= 0 {
		t.Errorf("slash command ack = %s (accepts %v, latency %v)", got.Ack, got.AcceptsResponsePayload, got.Latency())
	}
	got, err = s.Deliver(c, "interactive", map[string]any{"type": "view_submission", "view": map[string]any{"id": "V1"}})
	if err != nil || !strings.Contains(string(got.Ack), `"response_action":"errors"`) {
		t.Errorf("view_submission ack = %s, %v", got.Ack, err)
	}
	got, err = s.Deliver(c, "events_api", map[string]any{"type": "event_callback", "event_id": "Ev1",
		"event": map[string]any{"type": "app_home_opened", "user": "U0ALICE", "tab": "home"}})
	if err != nil || got.Ack != nil || got.AcceptsResponsePayload {
		t.Errorf("event ack = %s (accepts %v), %v; want an empty ack", got.Ack, got.AcceptsResponsePayload, err)
	}
	// The same envelope again (Slack's redelivery) is recorded, and acked, again.
	if _, err := s.SendEnvelope(c, Envelope{ID: got.ID, Type: "events_api", Payload: got.Payload, RetryAttempt: 1}); err != nil {
		t.Fatal(err)
	}
	if again, err := s.WaitAck(c, got.ID); err != nil || again.RetryAttempt != 1 {
		t.Errorf("redelivery: %+v %v", again, err)
	}
	if n := len(s.SocketEnvelopes()); n != 4 {
		t.Errorf("recorded %d envelopes, want 4", n)
	}
	if calls := s.CallsTo("apps.connections.open"); len(calls) != 1 || calls[0].Token != DefaultAppToken {
		t.Errorf("apps.connections.open calls: %+v", calls)
	}
}

// Slack asks clients to reconnect before it recycles a connection; slack-go
// opens a new one, and envelopes flow on it.
func TestSocketModeReconnects(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	runSocketClient(t, s, func(socketmode.Event) any { return nil })
	c := ctx(t)
	if err := s.WaitSocketConnected(c); err != nil {
		t.Fatal(err)
	}
	s.DisconnectSockets("refresh_requested")
	if err := s.socket.wait(c, func() bool { return s.socket.connects == 2 && len(s.socket.conns) == 1 }); err != nil {
		total, open := s.SocketConnects()
		t.Fatalf("no reconnection: %d connects, %d open", total, open)
	}
	if _, err := s.Deliver(c, "events_api", map[string]any{"type": "event_callback", "event_id": "Ev2",
		"event": map[string]any{"type": "app_home_opened", "user": "U0BOB", "tab": "home"}}); err != nil {
		t.Fatal(err)
	}
}

func TestAppsConnectionsOpenAuth(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	t.Cleanup(func() { _ = s.Close() })
	open := func(token string) (*slack.SocketModeConnection, error) {
		api := slack.New(s.Token(), slack.OptionAppLevelToken(token), slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
		info, _, err := api.StartSocketModeContext(ctx(t))
		return info, err
	}
	if _, err := open(s.Token()); err == nil {
		t.Error("a bot token opened a connection")
	} else {
		slackErr(t, err, "not_allowed_token_type")
	}
	if _, err := open("xapp-wrong"); err == nil {
		t.Error("a wrong app token opened a connection")
	} else {
		slackErr(t, err, "invalid_auth")
	}
	info, err := open(s.AppToken())
	if err != nil || !strings.HasPrefix(info.URL, "ws://127.0.0.1:") {
		t.Fatalf("open: %+v %v", info, err)
	}
	// A URL is good for one connection.
	ws, _, err := websocket.DefaultDialer.DialContext(ctx(t), info.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		t.Fatalf("hello = %v, %v", hello, err)
	}
	_, resp, err := websocket.DefaultDialer.DialContext(ctx(t), info.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second dial of one URL: %v %v", resp, err)
	}
	// A raw client's ack is recorded like slack-go's.
	id, err := s.SendEnvelope(ctx(t), Envelope{Type: "interactive", Payload: json.RawMessage(`{"type":"block_actions"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var env Envelope
	if err := ws.ReadJSON(&env); err != nil || env.ID != id || !env.AcceptsResponsePayload {
		t.Fatalf("envelope = %+v, %v", env, err)
	}
	if err := ws.WriteJSON(map[string]string{"envelope_id": id}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.WaitAck(ctx(t), id); err != nil || got.Ack != nil {
		t.Errorf("ack = %+v, %v", got, err)
	}
	// Close ends the connections and the listener.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The deadline only guards the test: a read that times out means the
	// connection was still open.
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	var netErr net.Error
	if _, _, err := ws.ReadMessage(); err == nil || errors.As(err, &netErr) && netErr.Timeout() {
		t.Errorf("connection still open after Close (read: %v)", err)
	}
	if _, err := open(s.AppToken()); err == nil {
		t.Error("apps.connections.open works after Close")
	}
}
