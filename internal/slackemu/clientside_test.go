package slackemu

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// The message object a client puts in a block_actions payload is the one
// Slack's history shows: the bot's identity, blocks and edit marker.
func TestMessageObject(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	_, ts, err := api.PostMessage(ChannelApprovals, slack.MsgOptionBlocks(slack.NewDividerBlock()), slack.MsgOptionText("hi", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage(ChannelApprovals, ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Message(ChannelApprovals, ts)
	raw, err := json.Marshal(s.MessageObject(m))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		AppID  string `json:"app_id"`
		BotID  string `json:"bot_id"`
		Text   string
		Blocks []map[string]any
		Edited map[string]string
	}
	_ = json.Unmarshal(raw, &got)
	if got.AppID != "A0LOCAL" || got.BotID != "B0BOT" || got.Text != "edited" || len(got.Blocks) != 1 || got.Edited["user"] != DefaultBotUserID {
		t.Fatalf("message object = %s", raw)
	}
}

// A view in a payload carries what the person entered in state.values and
// the properties Slack adds (hash, root_view_id, null close/submit).
func TestViewObject(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	resp, err := newInProc(s).OpenView(s.IssueTriggerID(), approvalModal("Decide"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s.View(resp.View.ID)
	values := map[string]any{"reason": map[string]any{"reason_input": map[string]any{"type": "plain_text_input", "value": "ok"}}}
	obj, err := s.ViewObject(v, values)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(obj)
	var back slack.View
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != v.ID || back.Hash != v.Hash || back.CallbackID != "request_modal" || back.PrivateMetadata != `{"channel":"C0APPROVALS"}` ||
		back.State == nil || back.State.Values["reason"]["reason_input"].Value != "ok" || back.RootViewID != v.ID {
		t.Fatalf("view object = %s", raw)
	}
	home := View{ID: "V1", Type: "home", JSON: json.RawMessage(`{"type":"home","blocks":[]}`)}
	obj, err = s.ViewObject(home, nil)
	if err != nil || obj["close"] != nil || obj["submit"] != nil {
		t.Fatalf("home view object = %v, %v", obj, err)
	}
	if _, err := s.ViewObject(View{ID: "V2", JSON: json.RawMessage(`[`)}, nil); err == nil {
		t.Fatal("a broken view gave no error")
	}
}

func TestPacingAndRecentCalls(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	if on, every := s.Pacing(); on || every != time.Second {
		t.Fatalf("default pacing = %v, %v", on, every)
	}
	s.SetPacing(true, 2*time.Second)
	if on, every := s.Pacing(); !on || every != 2*time.Second {
		t.Fatalf("pacing = %v, %v", on, every)
	}
	api := newInProc(s)
	for range 3 {
		_, _ = api.AuthTest()
	}
	_, _ = api.GetUserInfo("U0NOBODY")
	calls := s.RecentCalls(2)
	if len(calls) != 2 || calls[0].Method != "auth.test" || calls[1].Error != "user_not_found" {
		t.Fatalf("recent calls = %+v", calls)
	}
	if len(s.RecentCalls(100)) != 4 {
		t.Fatal("RecentCalls(100) did not return every call")
	}
	if DMChannel(UserAlice) != "D0ALICE" {
		t.Fatalf("DMChannel = %s", DMChannel(UserAlice))
	}
}
