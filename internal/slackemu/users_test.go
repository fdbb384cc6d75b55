package slackemu

import (
	"bytes"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func TestUsersAndGroups(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)

	u, err := api.GetUserInfo(UserAlice)
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != UserAlice || u.Name != "alice" || u.RealName != "Alice Reviewer" || u.Profile.Email != "alice@example.com" || u.IsBot || u.TeamID != DefaultTeamID {
		t.Fatalf("users.info = %+v", u)
	}
	_, err = api.GetUserInfo("U0NOBODY")
	slackErr(t, err, "user_not_found")

	users, err := api.GetUsersInfo(UserAlice, UserBob)
	if err != nil || len(*users) != 2 || (*users)[1].RealName != "Bob Reviewer" {
		t.Fatalf("users.info users= %+v, %v", users, err)
	}

	bot, err := api.GetUserInfo(DefaultBotUserID)
	if err != nil || !bot.IsBot || bot.Profile.BotID != "B0BOT" {
		t.Fatalf("bot user = %+v, %v", bot, err)
	}

	m, err := api.GetUserByEmail("Manager@Example.com")
	if err != nil || m.ID != UserManager || m.RealName != "Morgan Manager" {
		t.Fatalf("lookupByEmail = %+v, %v", m, err)
	}
	_, err = api.GetUserByEmail("nobody@example.com")
	slackErr(t, err, "users_not_found")

	members, err := api.GetUserGroupMembers(UserGroupLeads)
	if err != nil || len(members) != 2 || members[0] != UserManager || members[1] != UserAlice {
		t.Fatalf("usergroups.users.list = %v, %v", members, err)
	}
	_, err = api.GetUserGroupMembers("S0NOPE")
	slackErr(t, err, "no_such_subteam")
}

func TestCustomWorkspaceIsCopied(t *testing.T) {
	t.Parallel()
	ws := Workspace{
		TeamID: "T1", TeamName: "Acme", Domain: "acme", BotUserID: "U1BOT", BotName: "bot", BotID: "B1", AppID: "A1",
		Users:    []User{{ID: "U1", Name: "ann", RealName: "Ann", Email: "ann@acme.test"}},
		Channels: []Channel{{ID: "C1", Name: "ops", IsMember: true}},
	}
	s := New(Options{Workspace: &ws, Token: "xoxb-acme"})
	ws.Channels[0].IsMember = false // must not affect the running server
	api := newInProc(s)
	if _, _, err := api.PostMessage("#ops", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatal(err)
	}
	// The bot user is added to the directory when the workspace omits it.
	if u, err := api.GetUserInfo("U1BOT"); err != nil || !u.IsBot {
		t.Fatalf("bot user = %+v, %v", u, err)
	}
	res, err := api.AuthTest()
	if err != nil || res.URL != "https://acme.slack.com/" || res.UserID != "U1BOT" {
		t.Fatalf("auth.test = %+v, %v", res, err)
	}
	if got := s.Workspace(); got.TeamName != "Acme" || !got.Channels[0].IsMember {
		t.Fatalf("Workspace() = %+v", got)
	}
}

func TestConversationsInfo(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	c, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: ChannelNoBot})
	if err != nil || c.Name != "no-bot" || c.IsMember {
		t.Fatalf("conversations.info = %+v, %v", c, err)
	}
	c, err = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "D0ALICE"})
	if err != nil || !c.IsIM || c.User != UserAlice {
		t.Fatalf("conversations.info DM = %+v, %v", c, err)
	}
	_, err = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C0NOPE"})
	slackErr(t, err, "channel_not_found")
}

func TestConversationsOpenVariants(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	for _, tc := range []struct {
		params url.Values
		want   string
	}{
		{url.Values{"channel": {"D0BOB"}}, `"id":"D0BOB"`},
		{url.Values{"channel": {"C0GENERAL"}}, `"error":"channel_not_found"`},
		{url.Values{"users": {"U0ALICE,U0BOB"}}, `"error":"emulator_mpim_unsupported"`},
		{url.Values{"users": {DefaultBotUserID}}, `"error":"cannot_dm_bot"`},
		{url.Values{}, `"error":"users_list_not_supplied"`},
	} {
		if _, body := postForm(t, s, "conversations.open", tc.params); !strings.Contains(body, tc.want) {
			t.Errorf("conversations.open %v = %s, want %s", tc.params, body, tc.want)
		}
	}
}

func TestMultipartForm(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"token": s.Token(), "channel": "#general", "text": "multipart"} {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	status, _, body := raw(t, s, "POST", "/api/chat.postMessage", w.FormDataContentType(), buf.String(), nil)
	if status != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("multipart post = %d %s", status, body)
	}
	if m := s.Messages(ChannelGeneral); len(m) != 1 || m[0].Text != "multipart" {
		t.Fatalf("messages = %+v", m)
	}
}
