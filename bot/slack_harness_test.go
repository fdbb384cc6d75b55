package bot_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
)

// signV0 signs a Slack request body with the v0 scheme:
// "v0=" + hex(HMAC-SHA256(secret, "v0:<timestamp>:<body>")).
func signV0(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// The signer the tests use is Slack's: it reproduces the documented vector.
func TestSignerMatchesSlacksTestVector(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/slash_command.signing_vector.body")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := os.ReadFile("testdata/slash_command.signing_vector.meta")
	vals := map[string]string{}
	for _, line := range strings.Split(string(meta), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			vals[k] = v
		}
	}
	ts, _ := strconv.ParseInt(vals["X-Slack-Request-Timestamp"], 10, 64)
	if got := signV0(vals["signing_secret"], ts, body); got != vals["X-Slack-Signature"] {
		t.Fatalf("signV0 = %s, want Slack's %s", got, vals["X-Slack-Signature"])
	}
}

// slackUser is a member of the emulated workspace acting in Slack.
type slackUser struct{ id, name string }

var (
	alice   = slackUser{"U0ALICE", "Alice Reviewer"}
	bob     = slackUser{"U0BOB", "Bob Reviewer"}
	mallory = slackUser{"U0MALLORY", "Mallory Outsider"}
)

// sendInteraction posts a signed interaction payload as Slack would:
// form-encoded, one field "payload", signed now.
func (h *harness) sendInteraction(payload any) response {
	h.t.Helper()
	return h.sendInteractionAt(payload, time.Now(), h.cfg.SlackSigningSecret)
}

func (h *harness) sendInteractionAt(payload any, at time.Time, secret string) response {
	h.t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		h.t.Fatal(err)
	}
	body := []byte("payload=" + url.QueryEscape(string(raw)))
	req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/slack/interactions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("X-Slack-Signature", signV0(secret, at.Unix(), body))
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b}
}

// messageOf finds the posted message of a request.
func (h *harness) messageOf(id string) (channel, ts string) {
	h.t.Helper()
	rec, err := h.store.Get(ctxTimeout(h.t, guard), id)
	if err != nil || !rec.Posted() {
		h.t.Fatalf("request %s is not posted (%v)", id, err)
	}
	return rec.Slack.Channel, rec.Slack.TS
}

// blockID is the block id of a decision's controls in the current message.
func (h *harness) blockID(id, decision string) string {
	h.t.Helper()
	rec, err := h.store.Get(ctxTimeout(h.t, guard), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return blocks.BlockID(rec.Version, id, decision)
}

// action is one element of a block_actions payload's "actions".
type action map[string]any

func button(actionID, value string) action {
	return action{"action_id": actionID, "type": "button", "value": value, "action_ts": "1700000000.000001"}
}

func staticSelect(value string) action {
	return action{"action_id": blocks.ActionSelect, "type": "static_select", "action_ts": "1700000000.000002",
		"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": value}, "value": value}}
}

// click sends a block_actions payload shaped like Slack's (see
// testdata/block_actions_message.docs.json) for one control of a request.
func (h *harness) click(u slackUser, id, decision string, a action) response {
	h.t.Helper()
	return h.sendInteraction(h.clickPayload(u, id, decision, a))
}

// clickPayload is the block_actions payload of a click on one control of a
// request's message, whichever way it is sent.
func (h *harness) clickPayload(u slackUser, id, decision string, a action) map[string]any {
	h.t.Helper()
	channel, ts := h.messageOf(id)
	a["block_id"] = h.blockID(id, decision)
	return map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": "T0LOCAL", "domain": "local"},
		"user":       map[string]any{"id": u.id, "username": strings.ToLower(strings.Fields(u.name)[0]), "name": strings.Fields(u.name)[0], "team_id": "T0LOCAL"},
		"api_app_id": "A0LOCAL",
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
		"channel":    map[string]any{"id": channel, "name": "approvals"},
		"message":    map[string]any{"type": "message", "ts": ts},
		"actions":    []any{a},
	}
}

// submitModal sends a view_submission for a modal approvalbot opened.
func (h *harness) submitModal(u slackUser, callbackID string, ref blocks.ModalRef, values map[string]map[string]any) response {
	h.t.Helper()
	return h.sendInteraction(submitPayload(u, callbackID, ref, values))
}

// submitPayload is the view_submission payload of a modal approvalbot opened.
func submitPayload(u slackUser, callbackID string, ref blocks.ModalRef, values map[string]map[string]any) map[string]any {
	return map[string]any{
		"type": "view_submission",
		"team": map[string]any{"id": "T0LOCAL", "domain": "local"},
		"user": map[string]any{"id": u.id, "username": strings.ToLower(strings.Fields(u.name)[0]), "name": strings.Fields(u.name)[0]},
		"view": map[string]any{"id": "V0MODAL", "type": "modal", "callback_id": callbackID,
			"private_metadata": ref.Encode(), "state": map[string]any{"values": values}},
	}
}

func textInput(value string) map[string]any {
	return map[string]any{"type": "plain_text_input", "value": value}
}

var _ = bot.LocalSigningSecret
