package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/slack-go/slack"
)

// A request with the review extension's controls: a request menu, an
// Approve asking to confirm, a date-and-time picker.
const reviewControls = `[
 {"type":"actions","block_id":"ab/1/r1/when","elements":[
   {"type":"button","action_id":"approve","value":"true","style":"primary","text":{"type":"plain_text","text":"Approve"},
    "confirm":{"title":{"type":"plain_text","text":"Approve an irreversible action?"},"text":{"type":"plain_text","text":"It cannot be undone."},
     "confirm":{"type":"plain_text","text":"Approve"},"deny":{"type":"plain_text","text":"Cancel"},"style":"danger"}},
   {"type":"datetimepicker","action_id":"date","initial_date_time":1772409600}
 ]},
 {"type":"actions","block_id":"ab/1/r1/_request","elements":[
   {"type":"overflow","action_id":"verbs","options":[
     {"text":{"type":"plain_text","text":"Defer with guidance…"},"value":"defer"},
     {"text":{"type":"plain_text","text":"Abort the run…"},"value":"abort"}]}
 ]}
]`

// The menu and the picker send what Slack sends: the overflow's picked
// option (and no state, it has none), the picker's moment in unix seconds
// in the action and in state.values.
func TestReviewControlPayloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ts := e.post(t, slackemu.ChannelApprovals, reviewControls)
	act := func(blockID, actionID string, entered map[string]any) (slack.InteractionCallback, map[string]any) {
		t.Helper()
		body := map[string]any{"user": slackemu.UserAlice, "surface": "message", "channel": slackemu.ChannelApprovals,
			"ts": ts, "block_id": blockID, "action_id": actionID}
		if entered != nil {
			body["entered"] = entered
		}
		if code, res := e.call(t, "api/act", body); code != http.StatusOK || res["ok"] != true {
			t.Fatalf("act %s = %d %v", actionID, code, res)
		}
		rc := e.bot.last(t)
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(rc.Form.Get("payload")), &cb); err != nil {
			t.Fatal(err)
		}
		return cb, rc.Payload
	}

	cb, p := act("ab/1/r1/_request", "verbs", map[string]any{"selected": []string{"abort"}})
	a := cb.ActionCallback.BlockActions
	if len(a) != 1 || a[0].Type != "overflow" || a[0].ActionID != "verbs" || a[0].BlockID != "ab/1/r1/_request" ||
		a[0].SelectedOption.Value != "abort" || a[0].SelectedOption.Text.Text != "Abort the run…" || a[0].ActionTs == "" {
		t.Fatalf("overflow action = %s", mustJSON(t, get(p, "actions")))
	}
	if get(p, "state", "values", "ab/1/r1/_request") != nil {
		t.Errorf("an overflow menu has state: %v", get(p, "state", "values"))
	}
	if code, _ := e.call(t, "api/act", map[string]any{"user": slackemu.UserAlice, "surface": "message", "channel": slackemu.ChannelApprovals,
		"ts": ts, "block_id": "ab/1/r1/_request", "action_id": "verbs", "entered": map[string]any{"selected": []string{"escalate"}}}); code != http.StatusBadRequest {
		t.Errorf("a verb the menu does not offer answered %d", code)
	}

	cb, p = act("ab/1/r1/when", "date", map[string]any{"date_time": 1772461800})
	a = cb.ActionCallback.BlockActions
	if len(a) != 1 || a[0].Type != "datetimepicker" || a[0].SelectedDateTime != 1772461800 {
		t.Fatalf("datetimepicker action = %s", mustJSON(t, get(p, "actions")))
	}
	if got := cb.BlockActionState.Values["ab/1/r1/when"]["date"].SelectedDateTime; got != 1772461800 {
		t.Errorf("state.values moment = %d", got)
	}

	// A click elsewhere reports the picker's initial moment as its state.
	_, p = act("ab/1/r1/when", "approve", nil)
	if v := get(p, "state", "values", "ab/1/r1/when", "date", "selected_date_time"); v != 1772409600.0 {
		t.Errorf("untouched picker state = %v, want its initial moment", v)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// In the page (headless Chromium): the request menu sends the verb picked;
// Approve shows its danger dialog, sends nothing when cancelled and the
// click once confirmed; the date-and-time picker sends its moment.
func TestBrowserReviewControls(t *testing.T) {
	chromium := chromiumPath(t)
	e := newEnv(t, nil)
	got := make(chan received, 8)
	e.bot.set(func(rc received) (int, string, string) { got <- rc; return http.StatusOK, "", "" })
	e.post(t, slackemu.ChannelApprovals, reviewControls)

	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.Env("TZ=UTC"), chromedp.NoSandbox, chromedp.DisableGPU)...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if ex, ok := ev.(*runtime.EventExceptionThrown); ok {
			t.Errorf("page script error: %s", ex.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(stepCtx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// next is the payload the page's last action sent.
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case rc := <-got:
			return rc.Payload
		case <-time.After(20 * time.Second): // a guard only
			t.Fatalf("%s: the bot received nothing", what)
			return nil
		}
	}
	const msg = `.msg[data-channel="C0APPROVALS"]`
	change := func(sel, value string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q;
			s.dispatchEvent(new Event("change")); })()`, sel, value))
	}

	// Clicks run in the page: the pane re-renders after every action, so a
	// node found a moment before may be gone.
	click := func(sel string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const b = document.querySelector(%q); if (b) b.click(); return !!b; })()`, sel),
			chromedp.WithPollingTimeout(20*time.Second))
	}

	step("open the channel as Alice",
		chromedp.Navigate(e.srv.URL+"/sandbox/?user=U0ALICE#/c/C0APPROVALS"),
		chromedp.WaitVisible(chromedp.CSS(msg+` [data-action-id="verbs"]`)))
	step("pick Abort in the request menu", change(msg+` select[data-action-id="verbs"]`, "abort"))
	if p := next("overflow"); get(p, "actions").([]any)[0].(map[string]any)["selected_option"].(map[string]any)["value"] != "abort" {
		t.Errorf("overflow payload = %v", p["actions"])
	}

	step("Approve asks first; cancelled, nothing is sent",
		click(msg+` [data-action-id="approve"]`),
		chromedp.WaitVisible(chromedp.CSS(`.confirm-yes.danger`)),
		click(`.confirm .modal-foot button:first-child`),
		chromedp.WaitNotPresent(chromedp.CSS(`.confirm`)))
	step("Approve again, confirmed",
		click(msg+` [data-action-id="approve"]`),
		chromedp.WaitVisible(chromedp.CSS(`.confirm-yes`)),
		click(`.confirm-yes`))
	if p := next("approve"); get(p, "actions").([]any)[0].(map[string]any)["action_id"] != "approve" {
		t.Errorf("the confirmed click sent %v", p["actions"])
	}

	step("the picker shows its initial moment, then a new one is picked",
		chromedp.Poll[chromedp.Void](`document.querySelector('input[type="datetime-local"][data-action-id="date"]').value === "2026-03-02T00:00"`,
			chromedp.WithPollingTimeout(20*time.Second)),
		change(`input[type="datetime-local"][data-action-id="date"]`, "2026-03-02T14:30"))
	p := next("datetimepicker")
	if a := get(p, "actions").([]any)[0].(map[string]any); a["type"] != "datetimepicker" || a["selected_date_time"] != 1772461800.0 {
		t.Errorf("datetimepicker payload = %v", a)
	}
	if len(got) != 0 {
		t.Errorf("the cancelled Approve was sent too: %d extra payloads", len(got))
	}
}
