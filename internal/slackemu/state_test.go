package slackemu

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestRecording(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	if _, _, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("hi", false),
		slack.MsgOptionBlocks(slack.NewDividerBlock()), slack.MsgOptionTS("")); err != nil {
		t.Fatal(err)
	}
	if _, err := api.OpenView("trig", approvalModal("Modal")); err != nil {
		t.Fatal(err)
	}
	_, _, _ = api.PostMessage("#nowhere", slack.MsgOptionText("x", false))

	calls := s.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls recorded, want 3", len(calls))
	}
	post := calls[0]
	if post.Method != "chat.postMessage" || post.Token != s.Token() || post.Status != 200 || post.Error != "" || post.At.IsZero() {
		t.Fatalf("post call = %+v", post)
	}
	if post.Params["channel"] != ChannelApprovals || post.Params["text"] != "hi" || post.Params["blocks"] != `[{"type":"divider"}]` {
		t.Fatalf("post params = %v", post.Params)
	}
	if _, ok := post.Params["token"]; ok {
		t.Fatal("token must not be in Params")
	}
	open := calls[1]
	if open.Method != "views.open" || open.Params["trigger_id"] != "trig" || open.Params["view"][0] != '{' || open.Token != s.Token() {
		t.Fatalf("views.open call = %+v", open)
	}
	if calls[2].Error != "channel_not_found" || len(s.CallsTo("chat.postMessage")) != 2 {
		t.Fatalf("failed call = %+v", calls[2])
	}

	// Accessors return copies.
	calls[0].Params["channel"] = "changed"
	if s.Calls()[0].Params["channel"] != ChannelApprovals {
		t.Fatal("Calls() aliases internal state")
	}
	msgs := s.Messages(ChannelApprovals)
	msgs[0].Blocks[0] = 'X'
	if s.Messages(ChannelApprovals)[0].Blocks[0] != '[' {
		t.Fatal("Messages() aliases internal state")
	}

	s.Reset()
	if len(s.Calls()) != 0 || len(s.Messages(ChannelApprovals)) != 0 || len(s.Views()) != 0 {
		t.Fatal("Reset kept state")
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	go func() {
		for range 3 {
			_, _, _ = api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
		}
	}()
	calls, err := s.WaitForCalls(ctx(t), "chat.postMessage", 3)
	if err != nil || len(calls) != 3 {
		t.Fatalf("WaitForCalls = %d calls, %v", len(calls), err)
	}
	msgs, err := s.WaitForMessages(ctx(t), "#general", 3)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("WaitForMessages = %d, %v", len(msgs), err)
	}
	err = s.WaitFor(ctx(t), func(sn *Snapshot) bool {
		return sn.CountCalls("") == 3 && len(sn.Messages(ChannelGeneral)) == 3
	})
	if err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err = s.WaitFor(short, func(sn *Snapshot) bool { return sn.CountCalls("views.open") > 0 })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor timeout = %v", err)
	}
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	events, cancel := s.Subscribe()
	defer cancel()

	_, ts, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("v1", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage(ChannelApprovals, ts, slack.MsgOptionText("v2", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessage(ChannelApprovals, ts); err != nil {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeral(ChannelApprovals, UserAlice, slack.MsgOptionText("e", false)); err != nil {
		t.Fatal(err)
	}
	resp, err := api.OpenView("t", approvalModal("M"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.UpdateView(approvalModal("M2"), "", "", resp.View.ID); err != nil {
		t.Fatal(err)
	}
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewDividerBlock()}}}
	if _, err := api.PublishView(UserBob, home, ""); err != nil {
		t.Fatal(err)
	}
	s.Reset()

	want := []EventType{
		EventMessagePosted, EventAPICall, EventMessageUpdated, EventAPICall, EventMessageDeleted, EventAPICall,
		EventEphemeralPosted, EventAPICall, EventViewOpened, EventAPICall, EventViewUpdated, EventAPICall,
		EventViewPublished, EventAPICall, EventReset,
	}
	var last uint64
	for i, typ := range want {
		ev := <-events
		if ev.Type != typ || ev.Seq != last+1 && last != 0 {
			t.Fatalf("event %d = %s (seq %d), want %s after seq %d", i, ev.Type, ev.Seq, typ, last)
		}
		last = ev.Seq
		switch typ {
		case EventMessageUpdated:
			if ev.Message.Text != "v2" || ev.Message.TS != ts {
				t.Fatalf("update event = %+v", ev.Message)
			}
		case EventAPICall:
			if ev.Call == nil || ev.Call.Method == "" {
				t.Fatalf("call event = %+v", ev)
			}
		case EventViewPublished:
			if ev.View.User != UserBob || ev.View.Type != "home" {
				t.Fatalf("publish event = %+v", ev.View)
			}
		}
	}
	cancel()
	cancel() // idempotent
	if _, ok := <-events; ok {
		t.Fatal("channel not closed after cancel")
	}
}

func TestSlowSubscriberDropsEvents(t *testing.T) {
	t.Parallel()
	s := New(Options{EventBuffer: 2})
	api := newInProc(s)
	events, cancel := s.Subscribe()
	defer cancel()
	for range 5 {
		if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false)); err != nil {
			t.Fatal(err) // must not block although nobody reads events
		}
	}
	first, second := <-events, <-events
	if first.Seq != 1 || second.Seq != 2 {
		t.Fatalf("buffered events = %d, %d", first.Seq, second.Seq)
	}
	if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false)); err != nil {
		t.Fatal(err)
	}
	if next := <-events; next.Seq != 11 {
		t.Fatalf("next event seq = %d, want 11 (a gap shows the drops)", next.Seq)
	}
}

func TestOnMessageHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Message
	var s *Server
	s = New(Options{OnMessage: func(m Message) {
		// The hook runs outside the lock, so it may use the server.
		_ = s.Messages(m.Channel)
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}})
	api := newInProc(s)
	_, ts, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("one", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage(ChannelGeneral, ts, slack.MsgOptionText("two", false)); err != nil {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeral(ChannelGeneral, UserAlice, slack.MsgOptionText("eph", false)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Text != "one" || got[1].Text != "two" || got[1].Edited != 1 {
		t.Fatalf("OnMessage got %+v", got)
	}
}

func TestEventsAndCallsMarshalToJSON(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	events, cancel := s.Subscribe()
	defer cancel()
	s.InjectHTTPStatus("chat.postMessage", 500, 1)
	_, _, _ = api.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
	if _, _, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("y", false), slack.MsgOptionBlocks(slack.NewDividerBlock())); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ev := <-events
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %s: %v", ev.Type, err)
		}
		if ev.Type == EventMessagePosted && !strings.Contains(string(b), `"blocks":[{"type":"divider"}]`) {
			t.Fatalf("message event JSON = %s", b)
		}
	}
	if c := s.CallsTo("chat.postMessage")[0]; c.Status != 500 || !json.Valid(c.Response) {
		t.Fatalf("5xx call = %+v", c)
	}
}
