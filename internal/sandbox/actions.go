package sandbox

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// actRequest is a person using a control in the page.
type actRequest struct {
	actingAs
	Surface   string    `json:"surface"` // "message", "ephemeral", "home" or "modal"
	Channel   string    `json:"channel"` // message, ephemeral
	TS        string    `json:"ts"`      // message
	Ephemeral string    `json:"ephemeral"`
	View      string    `json:"view"` // modal
	BlockID   string    `json:"block_id"`
	ActionID  string    `json:"action_id"`
	Entered   entered   `json:"entered"` // what a menu, date or time picker was set to
	State     pageState `json:"state"`   // the surface's other controls
}

// actResult tells the page how the bot answered.
type actResult struct {
	OK     bool              `json:"ok"`
	Error  string            `json:"error,omitempty"` // what Slack would show instead
	AckMS  int64             `json:"ack_ms"`
	Errors map[string]string `json:"errors,omitempty"` // modal field errors
	Closed bool              `json:"closed,omitempty"` // the modal closed
}

func resultOf(a ack) actResult {
	res := actResult{OK: a.failure() == "", Error: a.failure(), AckMS: a.Elapsed.Milliseconds()}
	return res
}

// surface is where a control lives, with what a payload says about it.
type surface struct {
	blocks  blockList
	fields  map[string]any // payload fields describing the surface
	respond *target        // where a response_url answers; nil: none
	only    func(b map[string]any) bool
}

// handleAct is POST /api/act: a click, a menu or a date picked. It sends
// the bot a block_actions payload as Slack would, and reports the ack.
func (sb *Sandbox) handleAct(w http.ResponseWriter, r *http.Request) {
	var req actRequest
	u, ok := sb.decodeActor(w, r, &req)
	if !ok {
		return
	}
	surf, status, msg := sb.locate(r.Context(), req)
	if msg != "" {
		fail(w, status, "%s", msg)
		return
	}
	block, el, ok := surf.blocks.find(req.BlockID, req.ActionID)
	if !ok {
		fail(w, http.StatusNotFound, "no control %s/%s there (the message may have changed)", req.BlockID, req.ActionID)
		return
	}
	action, err := actionObject(block, el, req.Entered, sb.opts.Now())
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	// The control's own new value is part of the state Slack sends.
	if el["type"] != "button" && el["type"] != "overflow" {
		if req.State == nil {
			req.State = pageState{}
		}
		bid, aid := block["block_id"].(string), el["action_id"].(string)
		if req.State[bid] == nil {
			req.State[bid] = map[string]entered{}
		}
		req.State[bid][aid] = req.Entered
	}
	values, err := surf.blocks.stateValues(req.State, surf.only)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	payload := sb.envelope("block_actions", u)
	for k, v := range surf.fields {
		payload[k] = v
	}
	payload["trigger_id"] = sb.trigger(u.ID)
	payload["actions"] = []any{action}
	if view, ok := payload["view"].(map[string]any); ok {
		view["state"] = map[string]any{"values": values}
	} else {
		payload["state"] = map[string]any{"values": values}
	}
	if surf.respond != nil {
		t := *surf.respond
		t.user = u.ID
		payload["response_url"] = sb.newResponseURL(t)
	}
	a, err := sb.deliverPayload(r.Context(), payload)
	if err != nil {
		fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, resultOf(a))
}

// locate finds the surface an action comes from and checks the person can
// see it. On failure it returns an HTTP status and a message.
func (sb *Sandbox) locate(ctx context.Context, req actRequest) (surface, int, string) {
	switch req.Surface {
	case "message":
		if !sb.canSee(req.User, req.Channel) {
			return surface{}, http.StatusForbidden, "you cannot see that channel"
		}
		m, ok := sb.emu.Message(req.Channel, req.TS)
		if !ok {
			return surface{}, http.StatusNotFound, "that message no longer exists"
		}
		bl, err := decodeBlocks(m.Blocks)
		if err != nil {
			return surface{}, http.StatusInternalServerError, err.Error()
		}
		msg := sb.emu.MessageObject(m)
		msg["blocks"] = bl
		return surface{blocks: bl, respond: &target{channel: m.Channel, messageTS: m.TS}, fields: map[string]any{
			"container": map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false},
			"channel":   map[string]any{"id": m.Channel, "name": sb.channelName(m.Channel)},
			"message":   msg,
		}}, 0, ""
	case "ephemeral":
		e, ok := sb.ephemeral(req.User, req.Ephemeral)
		if !ok {
			return surface{}, http.StatusNotFound, "that message is gone"
		}
		bl, err := decodeBlocks(e.Blocks)
		if err != nil {
			return surface{}, http.StatusInternalServerError, err.Error()
		}
		// Slack sends no "message" for ephemerals: the app never had one.
		return surface{blocks: bl, respond: &target{channel: e.Channel, ephemeral: e.ID}, fields: map[string]any{
			"container": map[string]any{"type": "message", "message_ts": e.TS, "channel_id": e.Channel, "is_ephemeral": true},
			"channel":   map[string]any{"id": e.Channel, "name": sb.channelName(e.Channel)},
		}}, 0, ""
	case "home", "modal":
		v, ok := sb.viewFor(req.User, req.Surface, req.View)
		if !ok {
			return surface{}, http.StatusNotFound, "that view is not open"
		}
		bl, err := viewBlocks(v.JSON)
		if err != nil {
			return surface{}, http.StatusInternalServerError, err.Error()
		}
		obj, err := sb.emu.ViewObject(v, nil)
		if err != nil {
			return surface{}, http.StatusInternalServerError, err.Error()
		}
		obj["blocks"] = bl
		return surface{blocks: bl, fields: map[string]any{
			"container": map[string]any{"type": "view", "view_id": v.ID},
			"view":      obj,
		}}, 0, ""
	}
	sb.log.DebugContext(ctx, "sandbox: unknown surface", "surface", req.Surface)
	return surface{}, http.StatusBadRequest, "unknown surface " + req.Surface
}

// viewFor returns user's Home tab, or a modal open for user.
func (sb *Sandbox) viewFor(user, kind, id string) (slackemu.View, bool) {
	if kind == "home" {
		for _, v := range sb.emu.Views() {
			if v.Type == "home" && v.User == user {
				return v, true
			}
		}
		return slackemu.View{}, false
	}
	for _, v := range sb.openModals(user) {
		if v.ID == id {
			return v, true
		}
	}
	return slackemu.View{}, false
}

// ephemeral finds one of user's ephemerals, the sandbox's or the
// emulator's (chat.postEphemeral).
func (sb *Sandbox) ephemeral(user, id string) (Ephemeral, bool) {
	for _, e := range sb.ephemerals(user) {
		if e.ID == id {
			return e, true
		}
	}
	return Ephemeral{}, false
}

// ephemerals lists what user alone sees, oldest first.
func (sb *Sandbox) ephemerals(user string) []Ephemeral {
	var out []Ephemeral
	sb.mu.Lock()
	for _, e := range sb.st.ephemerals {
		if e.User == user {
			out = append(out, e)
		}
	}
	hidden := make(map[string]bool, len(sb.st.hidden))
	for k := range sb.st.hidden {
		hidden[k] = true
	}
	sb.mu.Unlock()
	for _, e := range sb.emu.Ephemerals("", user) {
		id := "e" + e.TS
		if hidden[id] {
			continue
		}
		out = append(out, Ephemeral{ID: id, Channel: e.Channel, User: e.User, TS: e.TS, From: "bot",
			Source: "chat.postEphemeral", Text: e.Text, Blocks: e.Blocks, PostedAt: e.PostedAt})
	}
	slices.SortStableFunc(out, func(a, b Ephemeral) int { return a.PostedAt.Compare(b.PostedAt) })
	return out
}

// encodeJSON is json.Marshal for values built here, which always encode.
func encodeJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
