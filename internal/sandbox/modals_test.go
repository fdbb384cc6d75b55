package sandbox_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

const modal = `{"type":"modal","callback_id":"ab_input","private_metadata":"{\"r\":\"r1\"}","notify_on_close":true,
 "title":{"type":"plain_text","text":"Your answer"},"submit":{"type":"plain_text","text":"Submit"},
 "blocks":[
  {"type":"input","block_id":"value","label":{"type":"plain_text","text":"Budget"},
   "element":{"type":"number_input","action_id":"value","is_decimal_allowed":false,"min_value":"10","max_value":"100"}},
  {"type":"input","block_id":"comment","optional":true,"label":{"type":"plain_text","text":"Comment"},
   "element":{"type":"plain_text_input","action_id":"text","multiline":true,"max_length":5}}]}`

// A modal the bot opens with a person's trigger id appears for that person
// only; submitting checks what Slack's client checks, then sends
// view_submission and applies the response_action.
func TestModalSubmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ts := e.post(t, slackemu.ChannelApprovals, controls)
	var view slack.ModalViewRequest
	if err := json.Unmarshal([]byte(modal), &view); err != nil {
		t.Fatal(err)
	}
	e.bot.set(func(rc received) (int, string, string) {
		if get(rc.Payload, "type") == "block_actions" {
			if _, err := e.api.OpenView(get(rc.Payload, "trigger_id").(string), view); err != nil {
				t.Errorf("views.open: %v", err)
			}
		}
		return http.StatusOK, "", ""
	})
	e.call(t, "api/act", map[string]any{"user": slackemu.UserAlice, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve"})
	alice := e.state(t, slackemu.UserAlice)
	if len(alice.Modals) != 1 || len(e.state(t, slackemu.UserBob).Modals) != 0 {
		t.Fatalf("modals: Alice %v, Bob %v", alice.Modals, e.state(t, slackemu.UserBob).Modals)
	}
	id := alice.Modals[0].ID
	sent := e.bot.count()

	submit := func(value, comment string) map[string]any {
		t.Helper()
		_, res := e.call(t, "api/submit", map[string]any{"user": slackemu.UserAlice, "view": id, "state": map[string]any{
			"value": map[string]any{"value": map[string]any{"value": value}}, "comment": map[string]any{"text": map[string]any{"value": comment}}}})
		return res
	}
	for value, want := range map[string]string{"": "Please complete this required field.", "abc": "Please enter a whole number.",
		"1.5": "Please enter a whole number.", "5": "Please enter a number that is 10 or more.", "500": "Please enter a number that is 100 or less."} {
		if res := submit(value, ""); get(res, "errors", "value") != want {
			t.Errorf("value %q: %v, want %q", value, res, want)
		}
	}
	if res := submit("50", "too long"); get(res, "errors", "comment") != "Please enter no more than 5 characters." {
		t.Errorf("long comment: %v", res)
	}
	if e.bot.count() != sent {
		t.Fatal("a submission Slack's client refuses reached the bot")
	}

	// The bot refuses with response_action errors: the modal stays open
	// with the message on the field.
	e.bot.set(func(received) (int, string, string) {
		return http.StatusOK, "application/json", `{"response_action":"errors","errors":{"value":"Not this month."}}`
	})
	if res := submit("50", "ok"); get(res, "errors", "value") != "Not this month." || res["closed"] == true {
		t.Fatalf("bot errors: %v", res)
	}
	p := e.bot.last(t).Payload
	if get(p, "type") != "view_submission" || get(p, "view", "id") != id || get(p, "view", "callback_id") != "ab_input" ||
		get(p, "view", "private_metadata") != `{"r":"r1"}` || get(p, "view", "state", "values", "value", "value", "value") != "50" ||
		get(p, "view", "state", "values", "comment", "text", "type") != "plain_text_input" || get(p, "user", "id") != slackemu.UserAlice {
		t.Fatalf("view_submission = %v", p)
	}
	if st := e.state(t, slackemu.UserAlice); len(st.Modals) != 1 || st.Modals[0].Errors["value"] != "Not this month." {
		t.Fatalf("modal after errors = %+v", st.Modals)
	}
	// An empty answer closes it.
	e.bot.set(nil)
	if res := submit("60", ""); res["closed"] != true {
		t.Fatalf("accepted submission: %v", res)
	}
	if p := e.bot.last(t).Payload; get(p, "view", "state", "values", "comment", "text", "value") != nil {
		t.Fatalf("an empty optional input must be null: %v", get(p, "view", "state", "values"))
	}
	if st := e.state(t, slackemu.UserAlice); len(st.Modals) != 0 {
		t.Fatalf("modal still open: %+v", st.Modals)
	}
	if code, _ := e.call(t, "api/submit", map[string]any{"user": slackemu.UserAlice, "view": id}); code != http.StatusConflict {
		t.Fatal("a closed modal accepted a submission")
	}
}

// Closing a modal that asked for notify_on_close sends view_closed.
func TestModalClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var view slack.ModalViewRequest
	_ = json.Unmarshal([]byte(modal), &view)
	trigger := ""
	e.bot.set(func(rc received) (int, string, string) {
		trigger, _ = get(rc.Payload, "trigger_id").(string)
		return http.StatusOK, "", ""
	})
	ts := e.post(t, slackemu.ChannelApprovals, controls)
	e.call(t, "api/act", map[string]any{"user": slackemu.UserBob, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": "ab/1/r1/d1", "action_id": "approve"})
	resp, err := e.api.OpenView(trigger, view)
	if err != nil {
		t.Fatal(err)
	}
	_, res := e.call(t, "api/close", map[string]any{"user": slackemu.UserBob, "view": resp.View.ID})
	if res["closed"] != true || get(e.bot.last(t).Payload, "type") != "view_closed" || get(e.bot.last(t).Payload, "is_cleared") != false {
		t.Fatalf("close = %v, payload %v", res, e.bot.last(t).Payload)
	}
	if len(e.state(t, slackemu.UserBob).Modals) != 0 {
		t.Fatal("the closed modal is still open")
	}
}

// Opening the Home tab is the app_home_opened event, signed JSON to
// /slack/events; the published tab shows and its controls act from a view.
func TestHomeTab(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, res := e.call(t, "api/home", map[string]any{"user": slackemu.UserManager})
	rc := e.bot.last(t)
	var ev struct {
		EventID string `json:"event_id"`
		Event   struct{ Type, User, Channel, Tab string }
	}
	_ = json.Unmarshal(rc.Body, &ev)
	if res["ok"] != true || rc.Path != "/slack/events" || ev.EventID == "" || ev.Event.Type != "app_home_opened" ||
		ev.Event.User != slackemu.UserManager || ev.Event.Channel != "D0MANAGER" || ev.Event.Tab != "home" {
		t.Fatalf("event = %s", rc.Body)
	}
	var bl slack.Blocks
	_ = json.Unmarshal([]byte(controls), &bl)
	if _, err := e.api.PublishView(slackemu.UserManager, slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: bl}, ""); err != nil {
		t.Fatal(err)
	}
	st := e.state(t, slackemu.UserManager)
	if st.Home == nil || e.state(t, slackemu.UserAlice).Home != nil {
		t.Fatalf("home = %+v", st.Home)
	}
	e.call(t, "api/act", map[string]any{"user": slackemu.UserManager, "surface": "home", "block_id": "ab/1/r1/d1", "action_id": "approve"})
	p := e.bot.last(t).Payload
	if get(p, "container", "type") != "view" || get(p, "view", "type") != "home" || get(p, "view", "id") != st.Home.ID || p["response_url"] != nil {
		t.Fatalf("home block_actions = %v", p)
	}
}
