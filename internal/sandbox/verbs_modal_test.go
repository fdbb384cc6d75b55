package sandbox_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// The verb modals' elements: a users select, a number input with bounds,
// a static select, radio buttons and checkboxes. The sandbox shows them,
// checks what Slack's client checks, and sends the state Slack sends
// (selected_user, value, selected_option, selected_options).
const verbModal = `{"type":"modal","callback_id":"ab_escalate","private_metadata":"{\"r\":\"r1\",\"d\":\"_request\"}",
 "title":{"type":"plain_text","text":"Escalate"},"submit":{"type":"plain_text","text":"Escalate"},
 "blocks":[
  {"type":"input","block_id":"escalate_user","optional":true,"label":{"type":"plain_text","text":"Escalate to a person"},
   "element":{"type":"users_select","action_id":"user","placeholder":{"type":"plain_text","text":"Pick a person"}}},
  {"type":"input","block_id":"param:replicas","label":{"type":"plain_text","text":"replicas"},
   "element":{"type":"number_input","action_id":"value","is_decimal_allowed":false,"initial_value":"6","min_value":"1","max_value":"10"}},
  {"type":"input","block_id":"param:region","label":{"type":"plain_text","text":"region"},
   "element":{"type":"static_select","action_id":"value","options":[{"text":{"type":"plain_text","text":"eu"},"value":"eu"},{"text":{"type":"plain_text","text":"us"},"value":"us"}],
    "initial_option":{"text":{"type":"plain_text","text":"eu"},"value":"eu"}}},
  {"type":"input","block_id":"param:drain","label":{"type":"plain_text","text":"drain"},
   "element":{"type":"radio_buttons","action_id":"value","options":[{"text":{"type":"plain_text","text":"Yes (true)"},"value":"true"},{"text":{"type":"plain_text","text":"No (false)"},"value":"false"}],
    "initial_option":{"text":{"type":"plain_text","text":"Yes (true)"},"value":"true"}}},
  {"type":"input","block_id":"flags","optional":true,"label":{"type":"plain_text","text":"Flags"},
   "element":{"type":"checkboxes","action_id":"value","options":[{"text":{"type":"plain_text","text":"A"},"value":"a"},{"text":{"type":"plain_text","text":"B"},"value":"b"}]}}]}`

func TestVerbModalElements(t *testing.T) {
	t.Parallel()
	if errs := slackemu.ValidateView([]byte(verbModal)); len(errs) > 0 {
		t.Fatalf("the emulator refuses the modal: %v", errs)
	}
	e := newEnv(t, nil)
	ts := e.post(t, slackemu.ChannelApprovals, controls)
	var view slack.ModalViewRequest
	if err := json.Unmarshal([]byte(verbModal), &view); err != nil {
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
	modals := e.state(t, slackemu.UserAlice).Modals
	if len(modals) != 1 {
		t.Fatalf("modals: %v", modals)
	}
	id := modals[0].ID
	e.bot.set(nil)

	// Out of bounds: refused as Slack's client refuses it, the bot not called.
	sent := e.bot.count()
	_, res := e.call(t, "api/submit", map[string]any{"user": slackemu.UserAlice, "view": id, "state": map[string]any{
		"param:replicas": map[string]any{"value": map[string]any{"value": "40"}}}})
	if get(res, "errors", "param:replicas") != "Please enter a number that is 10 or less." || e.bot.count() != sent {
		t.Fatalf("out of bounds: %v", res)
	}
	_, res = e.call(t, "api/submit", map[string]any{"user": slackemu.UserAlice, "view": id, "state": map[string]any{
		"escalate_user":  map[string]any{"user": map[string]any{"selected": []string{slackemu.UserManager}}},
		"param:replicas": map[string]any{"value": map[string]any{"value": "4"}},
		"param:region":   map[string]any{"value": map[string]any{"selected": []string{"us"}}},
		"param:drain":    map[string]any{"value": map[string]any{"selected": []string{"false"}}},
		"flags":          map[string]any{"value": map[string]any{"selected": []string{"a", "b"}}},
	}})
	if res["closed"] != true {
		t.Fatalf("submit: %v", res)
	}
	values := get(e.bot.last(t).Payload, "view", "state", "values")
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"escalate_user", "user", "selected_user"}, slackemu.UserManager},
		{[]string{"escalate_user", "user", "type"}, "users_select"},
		{[]string{"param:replicas", "value", "value"}, "4"},
		{[]string{"param:region", "value", "selected_option", "value"}, "us"},
		{[]string{"param:drain", "value", "selected_option", "value"}, "false"},
	} {
		if got := get(values, c.path...); got != c.want {
			t.Errorf("%v = %v, want %v (state %v)", c.path, got, c.want, values)
		}
	}
	if opts, _ := get(values, "flags", "value", "selected_options").([]any); len(opts) != 2 {
		t.Errorf("checkboxes: %v", get(values, "flags"))
	}
}
