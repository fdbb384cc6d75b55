package sandbox

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// commandRequest is a person typing a slash command in a channel.
type commandRequest struct {
	actingAs
	Channel string `json:"channel"`
	Text    string `json:"text"` // "/approvals mine"
}

// handleCommand is POST /api/command: the slash command form Slack posts
// to the app's Request URL, signed. The answer within the ack deadline is
// shown to the person; later ones arrive through the response_url.
func (sb *Sandbox) handleCommand(w http.ResponseWriter, r *http.Request) {
	var req commandRequest
	u, ok := sb.decodeActor(w, r, &req)
	if !ok {
		return
	}
	if !sb.canSee(u.ID, req.Channel) {
		fail(w, http.StatusForbidden, "you cannot see that channel")
		return
	}
	command, text, _ := strings.Cut(strings.TrimSpace(req.Text), " ")
	if command != sb.opts.Command {
		sb.slackbotSays(req.Channel, u.ID, "slash command", fmt.Sprintf("`%s` is not a valid command. In this workspace the "+
			"app's command is `%s`.", command, sb.opts.Command))
		writeJSON(w, http.StatusOK, actResult{OK: false, Error: "not a valid command"})
		return
	}
	form := url.Values{
		"token":                 {verificationToken},
		"team_id":               {sb.ws.TeamID},
		"team_domain":           {sb.ws.Domain},
		"channel_id":            {req.Channel},
		"channel_name":          {sb.channelName(req.Channel)},
		"user_id":               {u.ID},
		"user_name":             {u.Name},
		"command":               {command},
		"text":                  {strings.TrimSpace(text)},
		"api_app_id":            {sb.ws.AppID},
		"is_enterprise_install": {"false"},
		"response_url":          {sb.newResponseURL(target{user: u.ID, channel: req.Channel})},
		"trigger_id":            {sb.trigger(u.ID)},
	}
	a := sb.deliver(r.Context(), "/slack/commands", "application/x-www-form-urlencoded", []byte(form.Encode()))
	res := resultOf(a)
	if !res.OK {
		sb.slackbotSays(req.Channel, u.ID, "slash command", fmt.Sprintf("%s failed with the error \"%s\"", command, res.Error))
		writeJSON(w, http.StatusOK, res)
		return
	}
	if rp, ok := commandReply(a); ok {
		if bad := rp.check(); bad != "" {
			sb.note(r.Context(), command+"'s reply was refused: "+bad)
			sb.slackbotSays(req.Channel, u.ID, "slash command", fmt.Sprintf("%s failed with the error \"%s\"", command, bad))
		} else {
			sb.mu.Lock()
			sb.applyReply(r.Context(), &target{user: u.ID, channel: req.Channel}, rp, "slash command")
			sb.mu.Unlock()
		}
	}
	writeJSON(w, http.StatusOK, res)
}

// commandReply reads a command's immediate answer: JSON is a message, plain
// text is a message's text, an empty body shows nothing.
func commandReply(a ack) (reply, bool) {
	body := strings.TrimSpace(string(a.Body))
	if body == "" {
		return reply{}, false
	}
	if ct, _, _ := mime.ParseMediaType(a.Type); ct == "application/json" {
		var rp reply
		if err := json.Unmarshal(a.Body, &rp); err == nil {
			return rp, true
		}
	}
	return reply{Text: body}, true
}

// homeRequest is a person opening the app's Home tab.
type homeRequest struct {
	actingAs
}

// handleHome is POST /api/home: Slack's app_home_opened event, sent to the
// Events API endpoint each time a person opens the Home tab.
func (sb *Sandbox) handleHome(w http.ResponseWriter, r *http.Request) {
	var req homeRequest
	u, ok := sb.decodeActor(w, r, &req)
	if !ok {
		return
	}
	now := sb.opts.Now()
	sb.mu.Lock()
	eventID := fmt.Sprintf("Ev%010d", sb.st.next())
	sb.mu.Unlock()
	event := map[string]any{"type": "app_home_opened", "user": u.ID, "channel": slackemu.DMChannel(u.ID), "tab": "home", "event_ts": slackTS(now)}
	for _, v := range sb.emu.Views() {
		if v.Type == "home" && v.User == u.ID {
			if obj, err := sb.emu.ViewObject(v, nil); err == nil {
				event["view"] = obj
			}
		}
	}
	body := encodeJSON(map[string]any{
		"token": verificationToken, "team_id": sb.ws.TeamID, "api_app_id": sb.ws.AppID, "event": event,
		"type": "event_callback", "event_id": eventID, "event_time": now.Unix(),
		"authorizations": []any{map[string]any{"enterprise_id": nil, "team_id": sb.ws.TeamID, "user_id": sb.ws.BotUserID,
			"is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false,
	})
	a := sb.deliver(r.Context(), "/slack/events", "application/json", body)
	writeJSON(w, http.StatusOK, resultOf(a))
}

// settingsRequest changes how strictly the emulator plays Slack.
type settingsRequest struct {
	Pacing *bool `json:"pacing"` // one message per second per channel, else 429
}

// handleSettings is POST /api/settings.
func (sb *Sandbox) handleSettings(w http.ResponseWriter, r *http.Request) {
	var req settingsRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Pacing != nil {
		_, every := sb.emu.Pacing()
		sb.emu.SetPacing(*req.Pacing, every)
		sb.mu.Lock()
		sb.notify()
		sb.mu.Unlock()
	}
	on, every := sb.emu.Pacing()
	writeJSON(w, http.StatusOK, map[string]any{"pacing": on, "pacing_interval": every.String()})
}

// dismissRequest is a person dismissing one of their ephemerals.
type dismissRequest struct {
	actingAs
	ID string `json:"id"`
}

// handleDismiss is POST /api/dismiss.
func (sb *Sandbox) handleDismiss(w http.ResponseWriter, r *http.Request) {
	var req dismissRequest
	if !decode(w, r, &req) {
		return
	}
	if _, ok := sb.ephemeral(req.User, req.ID); !ok {
		fail(w, http.StatusNotFound, "no such message")
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.st.hidden[req.ID] = true
	sb.st.ephemerals = slices.DeleteFunc(sb.st.ephemerals, func(e Ephemeral) bool { return e.ID == req.ID })
	sb.notify()
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}
