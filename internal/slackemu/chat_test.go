package slackemu

import (
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/slack-go/slack"
)

var tsFormat = regexp.MustCompile(`^\d{10}\.\d{6}$`)

func TestPostUpdateDeletePermalinkRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{})
			api := tr.client(t, s)

			blocks := slack.MsgOptionBlocks(
				slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "Expense request", false, false)),
				slack.NewActionBlock("decide",
					slack.NewButtonBlockElement("approve", "yes", slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary),
				),
			)
			ch, ts, err := api.PostMessage("#approvals", slack.MsgOptionText("Expense request", false), blocks)
			if err != nil {
				t.Fatal(err)
			}
			if ch != ChannelApprovals || !tsFormat.MatchString(ts) {
				t.Fatalf("PostMessage = %q, %q", ch, ts)
			}
			m, ok := s.Message(ChannelApprovals, ts)
			if !ok || m.Text != "Expense request" || m.User != DefaultBotUserID || !strings.Contains(string(m.Blocks), `"action_id":"approve"`) {
				t.Fatalf("stored message = %+v, %v", m, ok)
			}

			_, _, text, err := api.UpdateMessage(ch, ts, slack.MsgOptionText("Approved", false), slack.MsgOptionBlocks())
			if err != nil || text != "Approved" {
				t.Fatalf("UpdateMessage = %q, %v", text, err)
			}
			m, _ = s.Message("approvals", ts)
			if m.Text != "Approved" || string(m.Blocks) != "[]" || m.Edited != 1 || m.UpdatedAt.IsZero() {
				t.Fatalf("updated message = %+v", m)
			}

			link, err := api.GetPermalink(&slack.PermalinkParameters{Channel: ch, Ts: ts})
			if err != nil {
				t.Fatal(err)
			}
			want := "https://local-emulator.slack.com/archives/C0APPROVALS/p" + strings.Replace(ts, ".", "", 1)
			if link != want {
				t.Fatalf("permalink = %q, want %q", link, want)
			}

			if _, _, err := api.DeleteMessage(ch, ts); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Message(ch, ts); ok {
				t.Fatal("message still present after delete")
			}
			_, _, err = api.DeleteMessage(ch, ts)
			slackErr(t, err, "message_not_found")
			_, _, _, err = api.UpdateMessage(ch, ts, slack.MsgOptionText("x", false))
			slackErr(t, err, "message_not_found")
			_, err = api.GetPermalink(&slack.PermalinkParameters{Channel: ch, Ts: ts})
			slackErr(t, err, "message_not_found")
		})
	}
}

func TestPostMessageResponseDecodesIntoSlackGo(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	status, body := postForm(t, s, "chat.postMessage", url.Values{
		"channel":  {"C0GENERAL"},
		"text":     {"hello"},
		"metadata": {`{"event_type":"approval","event_payload":{"id":"42"}}`},
	})
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	var resp struct {
		Ok      bool          `json:"ok"`
		Channel string        `json:"channel"`
		TS      string        `json:"ts"`
		Message slack.Message `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Ok || resp.Message.Text != "hello" || resp.Message.BotID != "B0BOT" || resp.Message.Timestamp != resp.TS ||
		resp.Message.Metadata.EventType != "approval" || resp.Message.Metadata.EventPayload["id"] != "42" {
		t.Fatalf("response = %s", body)
	}
	if !strings.HasPrefix(body, `{"ok":true,`) {
		t.Fatalf("body should start with ok: %s", body)
	}
}

func TestPermalinkBaseAndThreads(t *testing.T) {
	t.Parallel()
	s := New(Options{PermalinkBase: "http://localhost:8080/sandbox/"})
	api := newInProc(s)
	_, parent, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("parent", false))
	if err != nil {
		t.Fatal(err)
	}
	_, reply, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Message(ChannelGeneral, reply)
	if m.ThreadTS != parent {
		t.Fatalf("reply thread_ts = %q, want %q", m.ThreadTS, parent)
	}
	link, err := api.GetPermalink(&slack.PermalinkParameters{Channel: ChannelGeneral, Ts: reply})
	if err != nil {
		t.Fatal(err)
	}
	want := "http://localhost:8080/sandbox/archives/C0GENERAL/p" + strings.Replace(reply, ".", "", 1) +
		"?cid=C0GENERAL&thread_ts=" + parent
	if link != want {
		t.Fatalf("permalink = %q, want %q", link, want)
	}
	if s.Permalink(ChannelGeneral, parent) != "http://localhost:8080/sandbox/archives/C0GENERAL/p"+strings.Replace(parent, ".", "", 1) {
		t.Fatalf("Permalink = %q", s.Permalink(ChannelGeneral, parent))
	}
	_, _, err = api.PostMessage(ChannelGeneral, slack.MsgOptionText("orphan", false), slack.MsgOptionTS("1.000001"))
	slackErr(t, err, "thread_not_found")

	// History lists only the parent, with its reply count; replies lists both.
	h, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelGeneral})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 1 || h.Messages[0].ReplyCount != 1 {
		t.Fatalf("history = %+v", h.Messages)
	}
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: ChannelGeneral, Timestamp: parent})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "parent" || msgs[1].Text != "reply" {
		t.Fatalf("replies = %+v", msgs)
	}
}

func TestConcurrentPostsGetUniqueIncreasingTS(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	const n = 50
	var wg sync.WaitGroup
	tss := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			channel := []string{ChannelApprovals, ChannelGeneral, UserAlice}[i%3]
			_, tss[i], errs[i] = api.PostMessage(channel, slack.MsgOptionText("hi", false))
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, ts := range tss {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !tsFormat.MatchString(ts) || seen[ts] {
			t.Fatalf("bad or duplicate ts %q", ts)
		}
		seen[ts] = true
	}
	// The recorded calls are in arrival order, so their ts strictly increase.
	var recorded []string
	for _, c := range s.CallsTo("chat.postMessage") {
		var r struct{ TS string }
		_ = json.Unmarshal(c.Response, &r)
		recorded = append(recorded, r.TS)
	}
	if !sort.StringsAreSorted(recorded) || len(recorded) != n {
		t.Fatalf("recorded ts not increasing: %v", recorded)
	}
	total := len(s.Messages(ChannelApprovals)) + len(s.Messages("#general")) + len(s.Messages(UserAlice))
	if total != n {
		t.Fatalf("stored %d messages, want %d", total, n)
	}
}

func TestAuthErrors(t *testing.T) {
	t.Parallel()
	s := New(Options{Token: "xoxb-right"})
	srvClient := newHTTP(t, s) // right token
	if _, err := srvClient.AuthTest(); err != nil {
		t.Fatal(err)
	}
	wrong := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
	_, err := wrong.AuthTest()
	slackErr(t, err, "invalid_auth")
	_, _, err = wrong.PostMessage(ChannelGeneral, slack.MsgOptionText("x", false))
	slackErr(t, err, "invalid_auth")
	_, err = wrong.OpenView("t", slack.ModalViewRequest{Type: slack.VTModal})
	slackErr(t, err, "invalid_auth")

	none := slack.New("", slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
	_, err = none.AuthTest()
	slackErr(t, err, "not_authed")
	if got := len(s.Messages(ChannelGeneral)); got != 0 {
		t.Fatalf("unauthenticated post stored %d messages", got)
	}

	res, err := srvClient.AuthTest()
	if err != nil {
		t.Fatal(err)
	}
	if res.UserID != DefaultBotUserID || res.TeamID != DefaultTeamID || res.BotID != "B0BOT" || res.URL != "https://local-emulator.slack.com/" {
		t.Fatalf("auth.test = %+v", res)
	}
}

func TestChannelErrors(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	_, _, err := api.PostMessage("C0NOPE", slack.MsgOptionText("x", false))
	slackErr(t, err, "channel_not_found")
	_, _, err = api.PostMessage("#nope", slack.MsgOptionText("x", false))
	slackErr(t, err, "channel_not_found")
	_, _, err = api.PostMessage(ChannelNoBot, slack.MsgOptionText("x", false))
	slackErr(t, err, "not_in_channel")
	_, _, err = api.PostMessage("#no-bot", slack.MsgOptionText("x", false))
	slackErr(t, err, "not_in_channel")
	_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelNoBot})
	slackErr(t, err, "not_in_channel")
	_, _, err = api.PostMessage(ChannelGeneral)
	slackErr(t, err, "no_text")
	_, _, err = api.PostMessage(ChannelGeneral, slack.MsgOptionText(strings.Repeat("x", 40001), false))
	slackErr(t, err, "msg_too_long")
	_, _, err = api.PostMessage(DefaultBotUserID, slack.MsgOptionText("x", false))
	slackErr(t, err, "cannot_dm_bot")
	if _, _, err = api.PostMessage(ChannelGeneral, slack.MsgOptionText(strings.Repeat("x", 40000), false)); err != nil {
		t.Fatalf("40000 chars: %v", err)
	}
}

func TestDirectMessages(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	ch, noOp, already, err := api.OpenConversation(&slack.OpenConversationParameters{Users: []string{UserAlice}})
	if err != nil {
		t.Fatal(err)
	}
	if ch.ID != "D0ALICE" || noOp || already {
		t.Fatalf("open = %q %v %v", ch.ID, noOp, already)
	}
	ch2, _, already, err := api.OpenConversation(&slack.OpenConversationParameters{Users: []string{UserAlice}})
	if err != nil || ch2.ID != ch.ID || !already {
		t.Fatalf("reopen = %q %v %v", ch2.ID, already, err)
	}
	_, _, _, err = api.OpenConversation(&slack.OpenConversationParameters{Users: []string{"U0NOBODY"}})
	slackErr(t, err, "user_not_found")

	// Posting to a user id lands in that user's DM, like Slack.
	got, ts, err := api.PostMessage(UserBob, slack.MsgOptionText("psst", false))
	if err != nil || got != "D0BOB" {
		t.Fatalf("post to user = %q, %v", got, err)
	}
	if _, _, err := api.PostMessage("D0BOB", slack.MsgOptionText("again", false)); err != nil {
		t.Fatal(err)
	}
	if msgs := s.Messages(UserBob); len(msgs) != 2 || msgs[0].TS != ts || msgs[0].Channel != "D0BOB" {
		t.Fatalf("DM messages = %+v", msgs)
	}
	if len(s.Messages("D0BOB")) != 2 {
		t.Fatal("Messages by DM id")
	}
}

func TestEphemeral(t *testing.T) {
	t.Parallel()
	ws := DefaultWorkspace()
	ws.Channels[0].Members = []string{UserAlice}
	s := New(Options{Workspace: &ws})
	api := newHTTP(t, s)
	ts, err := api.PostEphemeral(ChannelApprovals, UserAlice, slack.MsgOptionText("only you", false))
	if err != nil || !tsFormat.MatchString(ts) {
		t.Fatalf("PostEphemeral = %q, %v", ts, err)
	}
	eph := s.Ephemerals("#approvals", UserAlice)
	if len(eph) != 1 || eph[0].TS != ts || eph[0].Text != "only you" {
		t.Fatalf("ephemerals = %+v", eph)
	}
	if len(s.Ephemerals(ChannelApprovals, UserBob)) != 0 || len(s.Messages(ChannelApprovals)) != 0 {
		t.Fatal("ephemeral leaked")
	}
	_, err = api.PostEphemeral(ChannelApprovals, UserBob, slack.MsgOptionText("x", false))
	slackErr(t, err, "user_not_in_channel")
	_, err = api.PostEphemeral(ChannelApprovals, "U0NOBODY", slack.MsgOptionText("x", false))
	slackErr(t, err, "user_not_found")
	_, err = api.PostEphemeral(ChannelNoBot, UserAlice, slack.MsgOptionText("x", false))
	slackErr(t, err, "not_in_channel")
	_, err = api.PostEphemeral(ChannelApprovals, UserAlice)
	slackErr(t, err, "no_text")
}

func TestUpdateKeepsAbsentFieldsAndRejectsOthersMessages(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	section := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*hi*", false, false), nil, nil)
	_, ts, err := api.PostMessage(ChannelGeneral, slack.MsgOptionText("v1", false), slack.MsgOptionBlocks(section))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage(ChannelGeneral, ts, slack.MsgOptionText("v2", false)); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Message(ChannelGeneral, ts)
	if m.Text != "v2" || !strings.Contains(string(m.Blocks), "*hi*") || m.Edited != 1 || m.EditedTS <= ts {
		t.Fatalf("after text-only update: %+v", m)
	}
	_, _, _, err = api.UpdateMessage(ChannelGeneral, ts)
	slackErr(t, err, "no_text")

	human, err := s.PostAsUser(ChannelGeneral, UserAlice, "my own words", "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = api.UpdateMessage(ChannelGeneral, human.TS, slack.MsgOptionText("edited", false))
	slackErr(t, err, "cant_update_message")
	_, _, err = api.DeleteMessage(ChannelGeneral, human.TS)
	slackErr(t, err, "cant_delete_message")
	if _, err := s.PostAsUser(ChannelGeneral, "U0NOBODY", "x", ""); err == nil {
		t.Fatal("PostAsUser with unknown user succeeded")
	}
}

func TestHistoryNewestFirstWithLimitAndCursor(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	var tss []string
	for _, text := range []string{"one", "two", "three"} {
		_, ts, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText(text, false))
		if err != nil {
			t.Fatal(err)
		}
		tss = append(tss, ts)
	}
	h, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelApprovals, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 2 || h.Messages[0].Text != "three" || h.Messages[1].Text != "two" || !h.HasMore || h.ResponseMetaData.NextCursor == "" {
		t.Fatalf("page 1 = %+v", h)
	}
	h, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelApprovals, Limit: 2, Cursor: h.ResponseMetaData.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 1 || h.Messages[0].Text != "one" || h.HasMore {
		t.Fatalf("page 2 = %+v", h)
	}
	h, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelApprovals, Oldest: tss[0], Latest: tss[2]})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 1 || h.Messages[0].Text != "two" {
		t.Fatalf("exclusive range = %+v", h.Messages)
	}
	h, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelApprovals, Oldest: tss[0], Latest: tss[2], Inclusive: true})
	if err != nil || len(h.Messages) != 3 {
		t.Fatalf("inclusive range = %+v, %v", h, err)
	}
}

func TestUnknownMethodAndGETParams(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	status, _, body := raw(t, s, "POST", "/api/chat.scheduleMessage", "", "", nil)
	if status != 200 || body != `{"ok":false,"error":"unknown_method"}` {
		t.Fatalf("unknown method = %d %s", status, body)
	}
	status, _, body = raw(t, s, "GET", "/api/users.info?user=U0ALICE&token="+s.Token(), "", "", nil)
	if status != 200 || !strings.Contains(body, `"real_name":"Alice Reviewer"`) {
		t.Fatalf("GET users.info = %d %s", status, body)
	}
	status, _, body = raw(t, s, "POST", "/api/chat.postMessage", "application/json",
		`{"channel":"#general","text":"json","blocks":[{"type":"divider"}]}`,
		map[string][]string{"Authorization": {"Bearer " + s.Token()}})
	if status != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("JSON post = %d %s", status, body)
	}
	m := s.Messages(ChannelGeneral)
	if len(m) != 1 || string(m[0].Blocks) != `[{"type":"divider"}]` {
		t.Fatalf("JSON-posted message = %+v", m)
	}
	_, _, body = raw(t, s, "POST", "/api/chat.postMessage", "application/json", `{bad`, map[string][]string{"Authorization": {"Bearer " + s.Token()}})
	if !strings.Contains(body, `"invalid_json"`) {
		t.Fatalf("bad JSON = %s", body)
	}
}
