package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// gatedDecisions holds every answer until released, so a test can act
// while an envelope is being handled.
type gatedDecisions struct {
	noDecisions
	answers atomic.Int32
	entered chan string // the request id, as an answer starts
	release chan struct{}
}

func (g *gatedDecisions) Answer(_ context.Context, requestID string, _ aah.Person, _ map[string]any) (approval.Outcome, error) {
	g.answers.Add(1)
	g.entered <- requestID
	<-g.release
	return approval.Outcome{}, nil
}

// logSignal closes stopping when Run logs that it is stopping, so the test
// knows Run has stopped taking envelopes.
type logSignal struct {
	once     *sync.Once
	stopping chan struct{}
}

func (h logSignal) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "socket mode stopping: finishing the envelopes in progress" {
		h.once.Do(func() { close(h.stopping) })
	}
	return nil
}

func (logSignal) Enabled(context.Context, slog.Level) bool { return true }

func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

func clickEnvelope(t *testing.T, requestID string) slackemu.Envelope {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"type": "block_actions", "trigger_id": "1.2.3",
		"user": map[string]any{"id": "U0ALICE", "name": "alice"}, "channel": map[string]any{"id": "C0APPROVALS"},
		"actions": []any{map[string]any{"type": "button", "action_id": blocks.ActionApprove, "value": "true",
			"block_id": blocks.BlockID(1, requestID, "d1")}}})
	if err != nil {
		t.Fatal(err)
	}
	return slackemu.Envelope{Type: "interactive", Payload: raw}
}

// Shutting down while a click is being handled: the click is still acked
// over the open connection, an envelope arriving meanwhile is left for
// Slack to deliver again, and then the connection closes.
func TestSocketModeShutdownAcksEnvelopesInProgress(t *testing.T) {
	t.Parallel()
	emu := slackemu.New(slackemu.Options{})
	t.Cleanup(func() { _ = emu.Close() })
	gate := &gatedDecisions{entered: make(chan string, 2), release: make(chan struct{})}
	async := NewAsync(2, 8)
	t.Cleanup(async.Close)
	s, err := New(Options{Decisions: gate, Requests: noRequests{}, Slack: noSlack{}, Async: async})
	if err != nil {
		t.Fatal(err)
	}
	stopping := make(chan struct{})
	log := slog.New(logSignal{once: &sync.Once{}, stopping: stopping})
	api := slack.New(emu.Token(), slack.OptionAppLevelToken(emu.AppToken()),
		slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	m, err := NewSocketMode(s, api, SocketOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = m.Run(ctx) }()
	wait, cancelWait := context.WithTimeout(context.Background(), time.Minute) // a guard only
	defer cancelWait()
	if err := emu.WaitSocketConnected(wait); err != nil {
		t.Fatal(err)
	}

	first, err := emu.SendEnvelope(wait, clickEnvelope(t, "req-inflight"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered:
	case <-wait.Done():
		t.Fatal("the click never reached the decider")
	}
	cancel()
	select {
	case <-stopping:
	case <-wait.Done():
		t.Fatal("Run did not begin stopping")
	}
	// Arrives after shutdown began: not handled, not acked.
	late, err := emu.SendEnvelope(wait, clickEnvelope(t, "req-late"))
	if err != nil {
		t.Fatal("the connection closed while a click was being handled:", err)
	}
	select {
	case <-stopped:
		t.Fatal("Run returned while a click was being handled")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate.release)

	env, err := emu.WaitAck(wait, first)
	if err != nil {
		t.Fatal("the click in progress at shutdown was never acked:", err)
	}
	if env.Ack != nil {
		t.Errorf("a click's ack carries %s, want nothing", env.Ack)
	}
	select {
	case <-stopped:
	case <-wait.Done():
		t.Fatal("Run did not return after the click was acked")
	}
	if n := gate.answers.Load(); n != 1 {
		t.Errorf("%d clicks reached the decider, want only the one in progress at shutdown", n)
	}
	for _, e := range emu.SocketEnvelopes() {
		if e.ID == late && e.Acked {
			t.Error("an envelope arriving after shutdown began was acked; Slack would not deliver it again")
		}
	}
	for _, open := emu.SocketConnects(); open > 0; _, open = emu.SocketConnects() {
		if wait.Err() != nil {
			t.Fatal("the connection stayed open after Run returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m.Connected() {
		t.Error("Connected() after Run returned")
	}
}
