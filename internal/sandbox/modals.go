package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// openModals lists the modals open for user, bottom of the stack first:
// the views the bot opened (views.open, views.push) with a trigger id of
// one of user's actions, and that the page has not closed.
func (sb *Sandbox) openModals(user string) []slackemu.View {
	views := sb.emu.Views()
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var out []slackemu.View
	for _, v := range views {
		if v.Type == "modal" && sb.st.triggers[v.TriggerID] == user && !sb.st.closed[v.ID] {
			out = append(out, v)
		}
	}
	return out
}

// top is user's topmost open modal, if it is id.
func (sb *Sandbox) top(user, id string) (slackemu.View, bool) {
	open := sb.openModals(user)
	if len(open) == 0 || open[len(open)-1].ID != id {
		return slackemu.View{}, false
	}
	return open[len(open)-1], true
}

// closeViews closes the given view, or with all set its whole stack.
func (sb *Sandbox) closeViews(user string, v slackemu.View, all bool) {
	open := sb.openModals(user)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for _, o := range open {
		if o.ID == v.ID || (all && o.RootViewID == v.RootViewID) {
			sb.st.closed[o.ID] = true
			delete(sb.st.viewErrors, o.ID)
		}
	}
	sb.notify()
}

// submitRequest is a person pressing a modal's submit button.
type submitRequest struct {
	actingAs
	View  string    `json:"view"`
	State pageState `json:"state"`
}

// handleSubmit is POST /api/submit. Like Slack's client, it first checks
// what Slack checks itself (required inputs, lengths, numbers) and shows
// those errors without asking the bot; then it sends view_submission and
// applies the bot's response_action.
func (sb *Sandbox) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	u, ok := sb.decodeActor(w, r, &req)
	if !ok {
		return
	}
	v, ok := sb.top(u.ID, req.View)
	if !ok {
		fail(w, http.StatusConflict, "that dialog is no longer the open one")
		return
	}
	bl, err := viewBlocks(v.JSON)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if errs := clientChecks(bl, req.State); len(errs) > 0 {
		sb.setViewErrors(v.ID, errs)
		writeJSON(w, http.StatusOK, actResult{OK: true, Errors: errs})
		return
	}
	values, err := bl.stateValues(req.State, nil)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	obj, err := sb.emu.ViewObject(v, values)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	obj["blocks"] = bl
	payload := sb.envelope("view_submission", u)
	payload["trigger_id"] = sb.trigger(u.ID)
	payload["view"] = obj
	payload["response_urls"] = []any{}
	a, err := sb.deliverPayload(r.Context(), payload)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	res := resultOf(a)
	if !res.OK {
		// Slack keeps the modal open and says it had trouble connecting.
		res.Error = "We had some trouble connecting. Try again? (" + res.Error + ")"
		writeJSON(w, http.StatusOK, res)
		return
	}
	res.Errors, res.Closed = sb.applyResponseAction(r.Context(), u.ID, v, a.Body)
	writeJSON(w, http.StatusOK, res)
}

// applyResponseAction does what Slack does with a view_submission's answer:
// nothing in the body closes the modal; "errors" shows field errors;
// "clear" closes the whole stack. "update" and "push" need a view Slack
// would render, which the emulator only accepts through the Web API, so
// the sandbox notes them and keeps the modal open.
func (sb *Sandbox) applyResponseAction(ctx context.Context, user string, v slackemu.View, body []byte) (map[string]string, bool) {
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if len(strings.TrimSpace(string(body))) == 0 || json.Unmarshal(body, &resp) != nil || resp.ResponseAction == "" {
		sb.closeViews(user, v, false)
		return nil, true
	}
	switch resp.ResponseAction {
	case "errors":
		sb.setViewErrors(v.ID, resp.Errors)
		return resp.Errors, false
	case "clear":
		sb.closeViews(user, v, true)
		return nil, true
	default:
		sb.log.InfoContext(ctx, "sandbox: response_action not emulated", "response_action", resp.ResponseAction)
		sb.note(ctx, fmt.Sprintf("the bot answered a view_submission with response_action %q, which the sandbox does not emulate",
			resp.ResponseAction))
		return nil, false
	}
}

func (sb *Sandbox) setViewErrors(id string, errs map[string]string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.st.viewErrors[id] = errs
	sb.notify()
}

// clientChecks are the checks Slack's client makes before it sends a
// view_submission: required inputs filled, text lengths, number ranges.
func clientChecks(bl blockList, ps pageState) map[string]string {
	errs := map[string]string{}
	for _, b := range bl {
		if b["type"] != "input" {
			continue
		}
		bid, _ := b["block_id"].(string)
		el, _ := b["element"].(map[string]any)
		aid, _ := el["action_id"].(string)
		e, set := ps.get(bid, aid)
		var text string
		var filled bool
		if set {
			if e.Value != nil {
				text = *e.Value
			}
			filled = text != "" || len(e.Selected) > 0 || e.Date != "" || e.Time != ""
		} else {
			text, _ = el["initial_value"].(string)
			filled = text != "" || el["initial_option"] != nil || el["initial_options"] != nil ||
				el["initial_date"] != nil || el["initial_time"] != nil || el["initial_user"] != nil
		}
		optional, _ := b["optional"].(bool)
		if !filled {
			if !optional {
				errs[bid] = "Please complete this required field."
			}
			continue
		}
		if msg := checkInput(el, text); msg != "" {
			errs[bid] = msg
		}
	}
	return errs
}

// checkInput checks a text or number input's constraints.
func checkInput(el map[string]any, text string) string {
	switch el["type"] {
	case "plain_text_input":
		n := utf8.RuneCountInString(text)
		if lo, ok := el["min_length"].(float64); ok && float64(n) < lo {
			return fmt.Sprintf("Please enter at least %d characters.", int(lo))
		}
		if hi, ok := el["max_length"].(float64); ok && float64(n) > hi {
			return fmt.Sprintf("Please enter no more than %d characters.", int(hi))
		}
	case "number_input":
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		decimal, _ := el["is_decimal_allowed"].(bool)
		if err != nil || (!decimal && f != float64(int64(f))) {
			if decimal {
				return "Please enter a number."
			}
			return "Please enter a whole number."
		}
		if lo, ok := numberOf(el["min_value"]); ok && f < lo {
			return fmt.Sprintf("Please enter a number that is %v or more.", el["min_value"])
		}
		if hi, ok := numberOf(el["max_value"]); ok && f > hi {
			return fmt.Sprintf("Please enter a number that is %v or less.", el["max_value"])
		}
	}
	return ""
}

func numberOf(x any) (float64, bool) {
	switch v := x.(type) {
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// closeRequest is a person dismissing a modal.
type closeRequest struct {
	actingAs
	View string `json:"view"`
}

// handleClose is POST /api/close: the modal closes; if it asked for it
// (notify_on_close), the bot gets a view_closed payload.
func (sb *Sandbox) handleClose(w http.ResponseWriter, r *http.Request) {
	var req closeRequest
	u, ok := sb.decodeActor(w, r, &req)
	if !ok {
		return
	}
	v, ok := sb.top(u.ID, req.View)
	if !ok {
		writeJSON(w, http.StatusOK, actResult{OK: true, Closed: true})
		return
	}
	sb.closeViews(u.ID, v, false)
	var props struct {
		NotifyOnClose bool `json:"notify_on_close"`
	}
	_ = json.Unmarshal(v.JSON, &props)
	if !props.NotifyOnClose {
		writeJSON(w, http.StatusOK, actResult{OK: true, Closed: true})
		return
	}
	obj, err := sb.emu.ViewObject(v, nil)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	payload := sb.envelope("view_closed", u)
	payload["view"] = obj
	payload["is_cleared"] = false
	a, err := sb.deliverPayload(r.Context(), payload)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	res := resultOf(a)
	res.Closed = true
	writeJSON(w, http.StatusOK, res)
}
