package slackemu

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
)

func TestRenderText(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(approvalMessage())
	if err != nil {
		t.Fatal(err)
	}
	want := "▌ Deploy approval\n" +
		"@U0REQUESTER asks to deploy *api*\n" +
		"*Service:* api\n" +
		"*Env:* prod\n" +
		"[View]\n" +
		"Requested Nov 14 · [image: icon]\n" +
		divider + "\n" +
		"[Approve] [Reject] [select: Launch next Monday ▾] [date: 2026-02-17] [⋯]\n" +
		"[image: chart]"
	if got := RenderText(raw); got != want {
		t.Fatalf("RenderText =\n%s\nwant\n%s", got, want)
	}

	s := New(Options{})
	want = "▌ Deploy approval\n@riley asks to deploy *api*" + want[len("▌ Deploy approval\n@U0REQUESTER asks to deploy *api*"):]
	if got := s.RenderText(raw); got != want {
		t.Fatalf("Server.RenderText =\n%s\nwant\n%s", got, want)
	}
}

func TestRenderControlsAndTokens(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	blocks := `[
		{"type":"section","text":{"type":"mrkdwn","text":"<#C0APPROVALS> <!subteam^S0LEADS> <!here> <https://example.com/x|the doc> &lt;b&gt; <@U9|someone> <!date^1700000000^{date}>"}},
		{"type":"input","label":{"type":"plain_text","text":"Reason"},"element":{"type":"plain_text_input","placeholder":{"type":"plain_text","text":"Why?"}}},
		{"type":"actions","elements":[
			{"type":"checkboxes","options":[{"value":"a","text":{"type":"plain_text","text":"A"}},{"value":"b","text":{"type":"plain_text","text":"B"}}],"initial_options":[{"value":"b","text":{"type":"plain_text","text":"B"}}]},
			{"type":"radio_buttons","options":[{"value":"a","text":{"type":"plain_text","text":"A"}},{"value":"b","text":{"type":"plain_text","text":"B"}}],"initial_option":{"value":"a","text":{"type":"plain_text","text":"A"}}},
			{"type":"users_select","initial_user":"U0ALICE"},
			{"type":"timepicker","initial_time":"09:30"},
			{"type":"datetimepicker","initial_date_time":1700000000}
		]},
		{"type":"rich_text","elements":[{"type":"rich_text_section","elements":[{"type":"text","text":"Hi "},{"type":"user","user_id":"U0BOB"}]}]}
	]`
	want := "#approvals @leads @here the doc (https://example.com/x) <b> @someone 2023-11-14 22:13 UTC\n" +
		"Reason: [text: Why?]\n" +
		"[☐ A] [☑ B] (•) A ( ) B [user: @alice ▾] [time: 09:30] [datetime: 2023-11-14 22:13 UTC]\n" +
		"Hi @bob"
	if got := s.RenderText(json.RawMessage(blocks)); got != want {
		t.Fatalf("RenderText =\n%s\nwant\n%s", got, want)
	}
	if got := RenderText(json.RawMessage(`not json`)); got != "" {
		t.Fatalf("invalid JSON rendered as %q", got)
	}
}

func TestRenderMessage(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	_, ts, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("Hello <@U0ALICE>", false))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Message(ChannelGeneral, ts)
	if got := s.RenderMessage(m); got != "Hello @alice" {
		t.Fatalf("RenderMessage = %q", got)
	}
	_, ts, err = api.PostMessage(ChannelGeneral, slack.MsgOptionText("fallback", false),
		slack.MsgOptionBlocks(slack.NewHeaderBlock(plain("Title"))))
	if err != nil {
		t.Fatal(err)
	}
	m, _ = s.Message(ChannelGeneral, ts)
	if got := s.RenderMessage(m); got != "▌ Title" {
		t.Fatalf("RenderMessage = %q", got)
	}
}
