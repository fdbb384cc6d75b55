package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/sandbox"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// A message with the controls approvalbot uses; the last section has no
// block_id and its accessory no action_id, as Slack allows.
const controls = `[
 {"type":"section","block_id":"q","text":{"type":"mrkdwn","text":"*Ship it?*"}},
 {"type":"actions","block_id":"ab/1/r1/d1","elements":[
   {"type":"button","action_id":"approve","value":"true","style":"primary","text":{"type":"plain_text","text":"Approve"}},
   {"type":"static_select","action_id":"select","placeholder":{"type":"plain_text","text":"Choose"},
    "options":[{"text":{"type":"plain_text","text":"Now"},"value":"now"},{"text":{"type":"plain_text","text":"Later"},"value":"later"}],
    "initial_option":{"text":{"type":"plain_text","text":"Later"},"value":"later"}},
   {"type":"datepicker","action_id":"date","initial_date":"2027-01-02"},
   {"type":"multi_static_select","action_id":"multi","options":[{"text":{"type":"plain_text","text":"A"},"value":"a"},{"text":{"type":"plain_text","text":"B"},"value":"b"}]}
 ]},
 {"type":"section","text":{"type":"mrkdwn","text":"More"},"accessory":{"type":"button","text":{"type":"plain_text","text":"Details"},"value":"x"}}
]`

// Clicking a button sends Slack's block_actions: signed, form-encoded, with
// the whole message, the container, the channel, a trigger id, a
// response_url, the state of the message's menus and the action itself.
func TestBlockActionsPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ts := e.post(t, slackemu.ChannelApprovals, controls)

	code, res := e.call(t, "api/act", map[string]any{"user": slackemu.UserAlice, "surface": "message",
		"channel": slackemu.ChannelApprovals, "ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve",
		"state": map[string]any{"ab/1/r1/d1": map[string]any{"multi": map[string]any{"selected": []string{"b"}}}}})
	if code != http.StatusOK || res["ok"] != true {
		t.Fatalf("act = %d %v", code, res)
	}
	rc := e.bot.last(t)
	if rc.Path != "/slack/interactions" || rc.Header.Get("X-Slack-Request-Timestamp") == "" {
		t.Fatalf("request = %s %v", rc.Path, rc.Header)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(rc.Form.Get("payload")), &cb); err != nil {
		t.Fatal(err)
	}
	a := cb.ActionCallback.BlockActions
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != slackemu.UserAlice || cb.User.Name != "alice" ||
		cb.Team.ID != slackemu.DefaultTeamID || cb.Channel.ID != slackemu.ChannelApprovals || cb.Channel.Name != "approvals" ||
		cb.Container.Type != "message" || cb.Container.MessageTs != ts || cb.Container.ChannelID != slackemu.ChannelApprovals ||
		cb.TriggerID == "" || cb.APIAppID != "A0LOCAL" || !strings.HasPrefix(cb.ResponseURL, e.srv.URL+"/sandbox/response/") ||
		len(a) != 1 || a[0].ActionID != "approve" || a[0].BlockID != "ab/1/r1/d1" || a[0].Value != "true" ||
		get(rc.Payload, "actions").([]any)[0].(map[string]any)["style"] != "primary" || a[0].Text.Text != "Approve" || a[0].ActionTs == "" {
		t.Fatalf("payload = %s", rc.Form.Get("payload"))
	}
	if cb.Message.Timestamp != ts || cb.Message.BotID != "B0BOT" || len(cb.Message.Blocks.BlockSet) != 3 {
		t.Fatalf("message = %+v", cb.Message)
	}
	values := cb.BlockActionState.Values["ab/1/r1/d1"]
	if values["select"].SelectedOption.Value != "later" || values["date"].SelectedDate != "2027-01-02" ||
		len(values["multi"].SelectedOptions) != 1 || values["multi"].SelectedOptions[0].Text.Text != "B" {
		t.Fatalf("state.values = %+v", cb.BlockActionState.Values)
	}

	// A menu sends its pick with the option's text; a value that is not an
	// option is the page's mistake, not a payload.
	e.call(t, "api/act", map[string]any{"user": slackemu.UserBob, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": "ab/1/r1/d1", "action_id": "select", "entered": map[string]any{"selected": []string{"now"}}})
	p := e.bot.last(t).Payload
	act := get(p, "actions").([]any)[0]
	if get(act, "selected_option", "value") != "now" || get(act, "selected_option", "text", "text") != "Now" ||
		get(act, "type") != "static_select" || get(p, "state", "values", "ab/1/r1/d1", "select", "selected_option", "value") != "now" {
		t.Fatalf("select payload = %v", p)
	}
	if code, _ := e.call(t, "api/act", map[string]any{"user": slackemu.UserBob, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": "ab/1/r1/d1", "action_id": "select", "entered": map[string]any{"selected": []string{"never"}}}); code != http.StatusBadRequest {
		t.Fatalf("an unknown option answered %d", code)
	}

	// Controls without ids get Slack-like generated ones, the same in the
	// page's state and in the payload.
	st := e.state(t, slackemu.UserBob)
	last := st.Channels[0].Messages[0].Blocks[2]
	blockID, actionID := last["block_id"].(string), get(last, "accessory", "action_id").(string)
	if blockID == "" || actionID == "" {
		t.Fatalf("generated ids missing: %v", last)
	}
	e.call(t, "api/act", map[string]any{"user": slackemu.UserBob, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": blockID, "action_id": actionID})
	if act := get(e.bot.last(t).Payload, "actions").([]any)[0]; get(act, "block_id") != blockID || get(act, "value") != "x" {
		t.Fatalf("accessory action = %v", act)
	}
}

func TestActRefusals(t *testing.T) {
	t.Parallel()
	ws := slackemu.DefaultWorkspace()
	ws.Channels = append(ws.Channels, slackemu.Channel{ID: "C0SECRET", Name: "secret", IsPrivate: true, IsMember: true,
		Members: []string{slackemu.UserAlice}})
	e := newEnv(t, &ws)
	ts := e.post(t, "C0SECRET", controls)
	for name, tc := range map[string]struct {
		body map[string]any
		code int
	}{
		"not a member":   {map[string]any{"user": "U0NOBODY", "surface": "message", "channel": "C0SECRET", "ts": ts}, http.StatusBadRequest},
		"the bot itself": {map[string]any{"user": slackemu.DefaultBotUserID, "surface": "message"}, http.StatusBadRequest},
		"cannot see":     {map[string]any{"user": slackemu.UserBob, "surface": "message", "channel": "C0SECRET", "ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve"}, http.StatusForbidden},
		"no message":     {map[string]any{"user": slackemu.UserAlice, "surface": "message", "channel": "C0SECRET", "ts": "1.000001"}, http.StatusNotFound},
		"no control":     {map[string]any{"user": slackemu.UserAlice, "surface": "message", "channel": "C0SECRET", "ts": ts, "block_id": "x", "action_id": "y"}, http.StatusNotFound},
		"no modal":       {map[string]any{"user": slackemu.UserAlice, "surface": "modal", "view": "V1"}, http.StatusNotFound},
		"odd surface":    {map[string]any{"user": slackemu.UserAlice, "surface": "sidebar"}, http.StatusBadRequest},
	} {
		if code, res := e.call(t, "api/act", tc.body); code != tc.code {
			t.Errorf("%s: %d %v, want %d", name, code, res, tc.code)
		}
	}
	if e.bot.count() != 0 {
		t.Fatalf("refused actions reached the bot: %d", e.bot.count())
	}
	for _, c := range e.state(t, slackemu.UserBob).Channels {
		if c.ID == "C0SECRET" {
			t.Fatal("Bob sees a private channel he is not in")
		}
	}
}

// Slack gives up on an app after 3 seconds: a late ack is reported as
// operation_timeout, and a slash command's failure comes from Slackbot.
func TestAckDeadline(t *testing.T) {
	t.Parallel()
	e := newEnvAck(t, nil, 300*time.Millisecond)
	ts := e.post(t, slackemu.ChannelApprovals, controls)
	e.bot.stallUntilCleanup()
	_, res := e.call(t, "api/act", map[string]any{"user": slackemu.UserAlice, "surface": "message",
		"channel": slackemu.ChannelApprovals, "ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve"})
	if res["ok"] != false || res["error"] != "operation_timeout" {
		t.Fatalf("late ack = %v", res)
	}
	_, res = e.call(t, "api/command", map[string]any{"user": slackemu.UserAlice, "channel": slackemu.ChannelApprovals, "text": "/approvals"})
	if res["error"] != "operation_timeout" {
		t.Fatalf("late command = %v", res)
	}
	e.bot.set(func(received) (int, string, string) { return http.StatusInternalServerError, "", "" })
	_, res = e.call(t, "api/act", map[string]any{"user": slackemu.UserAlice, "surface": "message",
		"channel": slackemu.ChannelApprovals, "ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve"})
	if res["ok"] != false || !strings.Contains(res["error"].(string), "dispatch_failed") {
		t.Fatalf("a 500 = %v", res)
	}
	st := e.state(t, slackemu.UserAlice)
	if len(st.Ephemerals) != 1 || st.Ephemerals[0].From != "slackbot" ||
		st.Ephemerals[0].Text != `/approvals failed with the error "operation_timeout"` {
		t.Fatalf("ephemerals = %+v", st.Ephemerals)
	}
}

// A slash command is Slack's signed form; its immediate answer is shown to
// the person alone, and so are later replies to its response_url, which
// may replace the first one.
func TestSlashCommandAndResponseURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.bot.set(func(received) (int, string, string) {
		return http.StatusOK, "application/json", `{"response_type":"ephemeral","text":"list","blocks":[
		 {"type":"section","text":{"type":"mrkdwn","text":"Two requests"}},
		 {"type":"actions","block_id":"list","elements":[{"type":"button","action_id":"next","value":"p2","text":{"type":"plain_text","text":"Next page"}}]}]}`
	})
	_, res := e.call(t, "api/command", map[string]any{"user": slackemu.UserBob, "channel": slackemu.ChannelGeneral, "text": "/approvals  all "})
	if res["ok"] != true {
		t.Fatalf("command = %v", res)
	}
	f := e.bot.last(t).Form
	for k, want := range map[string]string{"command": "/approvals", "text": "all", "user_id": slackemu.UserBob, "user_name": "bob",
		"channel_id": slackemu.ChannelGeneral, "channel_name": "general", "team_id": slackemu.DefaultTeamID, "api_app_id": "A0LOCAL"} {
		if f.Get(k) != want {
			t.Errorf("form %s = %q, want %q", k, f.Get(k), want)
		}
	}
	if f.Get("trigger_id") == "" || !strings.HasPrefix(f.Get("response_url"), e.srv.URL+"/sandbox/response/") {
		t.Fatalf("form = %v", f)
	}
	bob := e.state(t, slackemu.UserBob)
	if len(bob.Ephemerals) != 1 || bob.Ephemerals[0].Text != "list" || bob.Ephemerals[0].Source != "slash command" {
		t.Fatalf("Bob's ephemerals = %+v", bob.Ephemerals)
	}
	if alice := e.state(t, slackemu.UserAlice); len(alice.Ephemerals) != 0 {
		t.Fatalf("Alice sees Bob's ephemeral: %+v", alice.Ephemerals)
	}

	// "Next page" in the ephemeral: block_actions with is_ephemeral and no
	// message; the bot replaces the list through the response_url.
	eph := bob.Ephemerals[0].ID
	e.bot.set(nil)
	e.call(t, "api/act", map[string]any{"user": slackemu.UserBob, "surface": "ephemeral", "ephemeral": eph,
		"block_id": "list", "action_id": "next"})
	p := e.bot.last(t).Payload
	if get(p, "container", "is_ephemeral") != true || p["message"] != nil || get(p, "channel", "id") != slackemu.ChannelGeneral {
		t.Fatalf("ephemeral block_actions = %v", p)
	}
	respond := func(body string) (int, string) {
		resp, err := http.Post(p["response_url"].(string), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := respond(`{"replace_original":true,"text":"page 2"}`); code != http.StatusOK {
		t.Fatalf("response_url = %d %s", code, body)
	}
	bob = e.state(t, slackemu.UserBob)
	if len(bob.Ephemerals) != 1 || bob.Ephemerals[0].Text != "page 2" || bob.Ephemerals[0].Source != "response_url" {
		t.Fatalf("after replace: %+v", bob.Ephemerals)
	}
	if code, body := respond(`{"blocks":[{"type":"section"}]}`); code != http.StatusBadRequest || !strings.Contains(body, "invalid_blocks") {
		t.Fatalf("invalid blocks = %d %s", code, body)
	}
	for range 4 {
		respond(`{"text":"more"}`)
	}
	if code, body := respond(`{"text":"sixth"}`); code != http.StatusNotFound || !strings.Contains(body, "used_url") {
		t.Fatalf("sixth use = %d %s", code, body)
	}
	if code, _ := respond(`{"text":"x"}`); code != http.StatusNotFound {
		t.Fatal("a used response_url still works")
	}
	if st := e.state(t, slackemu.UserBob); len(st.Notices) == 0 || !strings.Contains(st.Notices[0], "invalid_blocks") {
		t.Fatalf("notices = %v", st.Notices)
	}
}

func TestSlashCommandProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.call(t, "api/command", map[string]any{"user": slackemu.UserBob, "channel": slackemu.ChannelGeneral, "text": "/weather"})
	e.bot.set(func(received) (int, string, string) {
		return http.StatusOK, "application/json", `{"blocks":[{"type":"header"}]}`
	})
	e.call(t, "api/command", map[string]any{"user": slackemu.UserBob, "channel": slackemu.ChannelGeneral, "text": "/approvals"})
	e.bot.set(func(received) (int, string, string) { return http.StatusOK, "text/plain", "plain answer" })
	e.call(t, "api/command", map[string]any{"user": slackemu.UserBob, "channel": slackemu.DMChannel(slackemu.UserBob), "text": "/approvals"})
	if f := e.bot.last(t).Form; f.Get("channel_name") != "directmessage" || f.Get("channel_id") != "D0BOB" {
		t.Fatalf("DM command form = %v", f)
	}
	st := e.state(t, slackemu.UserBob)
	if len(st.Ephemerals) != 3 || !strings.Contains(st.Ephemerals[0].Text, "`/weather` is not a valid command") ||
		!strings.Contains(st.Ephemerals[1].Text, "invalid_blocks") || st.Ephemerals[2].Text != "plain answer" {
		t.Fatalf("ephemerals = %+v", st.Ephemerals)
	}
	if e.bot.count() != 2 {
		t.Fatalf("the bot got %d commands, want 2 (not /weather)", e.bot.count())
	}
	if code, _ := e.call(t, "api/command", map[string]any{"user": slackemu.UserBob, "channel": "C0NOPE", "text": "/approvals"}); code != http.StatusForbidden {
		t.Fatalf("a command in an unknown channel answered %d", code)
	}
	// Dismissing removes an ephemeral for good.
	id := st.Ephemerals[0].ID
	if code, _ := e.call(t, "api/dismiss", map[string]any{"user": slackemu.UserBob, "id": id}); code != http.StatusOK {
		t.Fatal("dismiss failed")
	}
	if len(e.state(t, slackemu.UserBob).Ephemerals) != 2 {
		t.Fatal("the dismissed ephemeral is still there")
	}
	if code, _ := e.call(t, "api/dismiss", map[string]any{"user": slackemu.UserAlice, "id": st.Ephemerals[1].ID}); code != http.StatusNotFound {
		t.Fatal("Alice dismissed Bob's ephemeral")
	}
}

// The callback inbox verifies the Standard Webhooks signature of what it
// receives, as an agent must.
func TestInbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	wh, err := standardwebhooks.NewWebhook(testCallback)
	if err != nil {
		t.Fatal(err)
	}
	send := func(path, body string, tamper bool) int {
		now := time.Now()
		sig, err := wh.Sign("msg_1", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if tamper {
			body += " "
		}
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sandbox/inbox"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("", `{"decision":"yes"}`, false); code != http.StatusNoContent {
		t.Fatalf("signed delivery answered %d", code)
	}
	if code := send("/agent-7", `{"decision":"no"}`, true); code != http.StatusUnauthorized {
		t.Fatalf("tampered delivery answered %d", code)
	}
	got := e.sb.Inbox()
	if len(got) != 2 || !got[0].Verified || got[1].Verified || got[1].VerifyNote == "" || got[1].Path != "/inbox/agent-7" ||
		got[0].Headers["Webhook-Id"] != "msg_1" || !strings.Contains(got[0].Body, `"decision": "yes"`) {
		t.Fatalf("inbox = %+v", got)
	}
	if st := e.state(t, ""); len(st.Inbox) != 2 {
		t.Fatalf("the page's inbox = %+v", st.Inbox)
	}
}

// The emulator's refusals show in the page's API log, with Slack's reasons.
func TestStateShowsRefusedCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, _, err := e.api.PostMessage(slackemu.ChannelApprovals, slack.MsgOptionBlocks(slack.NewHeaderBlock(
		slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("x", 151), false, false))))
	if err == nil {
		t.Fatal("an over-long header was accepted")
	}
	st := e.state(t, "")
	if st.Me != slackemu.UserRequester {
		t.Fatalf("default member = %s", st.Me)
	}
	c := st.Calls[len(st.Calls)-1]
	if c.Method != "chat.postMessage" || c.Error != "invalid_blocks" || !strings.Contains(string(c.Detail), "must be less than 151 characters") {
		t.Fatalf("call = %+v", c)
	}
	_, res := e.call(t, "api/settings", map[string]any{"pacing": true})
	if res["pacing"] != true || !e.state(t, "").Pacing {
		t.Fatalf("pacing = %v", res)
	}
}

func TestPagesAndPassThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{"/sandbox/": "<title>approvalbot sandbox", "/sandbox/static/app.js": "EventSource",
		"/sandbox/static/blockkit.js": "multi_static_select", "/sandbox/static/mrkdwn.js": "date_short_pretty"} {
		resp, err := client.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %d, lacks %q", path, resp.StatusCode, want)
		}
	}
	// The emulator's Web API, with its token in the header (never in the
	// query string: TestLocalModeEmulatorAPIWantsTheTokenInTheHeader).
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/sandbox/api/auth.test", nil)
	req.Header.Set("Authorization", "Bearer "+slackemu.DefaultToken)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"ok":true`) {
			t.Errorf("GET /sandbox/api/auth.test = %d %s", resp.StatusCode, b)
		}
	}
	resp, err := client.Get(e.srv.URL + "/sandbox/archives/C0APPROVALS/p1795318648030456")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "../../#/c/C0APPROVALS/p1795318648030456" {
		t.Fatalf("permalink = %d %s", resp.StatusCode, loc)
	}
	if resp, _ := client.Get(e.srv.URL + "/sandbox/api/nothing"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown API path = %d", resp.StatusCode)
	}
}

// The page's live stream says "change" when the bot posts, and ends when
// the sandbox closes.
func TestEventsStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/sandbox/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		if !lines.Scan() {
			return "<end>"
		}
		return lines.Text()
	}
	if l := next(); l != "retry: 1000" {
		t.Fatalf("first line %q", l)
	}
	e.post(t, slackemu.ChannelGeneral, `[{"type":"divider"}]`)
	for l := next(); l != "event: change"; l = next() {
		if l == "<end>" {
			t.Fatal("the stream ended before a change")
		}
	}
	e.sb.Close()
	for l := next(); l != "<end>"; l = next() {
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	emu := slackemu.New(slackemu.Options{})
	if _, err := sandbox.New(sandbox.Options{Emulator: emu, SigningSecret: "s", CallbackSecret: testCallback}); err == nil {
		t.Error("no base URL accepted")
	}
	if _, err := sandbox.New(sandbox.Options{Emulator: emu, SigningSecret: "s", CallbackSecret: "whsec_not base64!", BaseURL: "http://x"}); err == nil {
		t.Error("a bad callback secret accepted")
	}
	var nilSandbox *sandbox.Sandbox
	nilSandbox.Attach(http.NotFoundHandler()) // production mode: no sandbox, no panic
	nilSandbox.Close()
	sb, err := sandbox.New(sandbox.Options{Emulator: emu, SigningSecret: "s", CallbackSecret: testCallback, BaseURL: "http://x"})
	if err != nil {
		t.Fatal(err)
	}
	// Before Attach, actions fail as Slack's do when the app is down.
	req, _ := http.NewRequest(http.MethodPost, "/api/home", strings.NewReader(`{"user":"U0ALICE"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	sb.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), "dispatch_failed") {
		t.Fatalf("unattached = %s", rec.Body.String())
	}
}

// The inbox's address, printed at start, opens the page's inbox in a
// browser (it only takes POSTs from the bot).
func TestInboxAddressOpensTheInboxPage(t *testing.T) {
	e := newEnv(t, nil)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.srv.URL + "/sandbox/inbox")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Path != "/sandbox/" || loc.Fragment != "/inbox" {
		t.Errorf("GET /sandbox/inbox: %d, Location %q (%v)", resp.StatusCode, resp.Header.Get("Location"), loc)
	}
}
