package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// Clicks is click-ack latency at a fixed rate, the bot's and the floor's.
type Clicks struct {
	Requests int     `json:"requests"` // posted pending requests clicked on
	Recorded int     `json:"recorded"` // answers the bot holds afterwards: one per click acked
	Bot      Latency `json:"bot"`
	Floor    Latency `json:"floor"`
}

// clickAnswers are the clicks each request gets, one per decision of seed
// 000's example, so that every click records a new answer (none is a
// repeat the bot would skip, none is refused). The example has more than
// one decision, so no answer resolves it: every click finds it open.
var clickAnswers = []struct {
	decision, actionID, value string
}{
	{"d1", blocks.ActionApprove, "true"},
	{"d2", blocks.ActionReject, "false"},
	{"d3", blocks.ActionSelect, "immediate"},
	{"d4", blocks.ActionApprove, "true"},
}

// measureClicks clicks on posted pending requests at rate for d, as Slack
// sends clicks: block_actions payloads, form-encoded and signed (v0, the
// local signing secret), over loopback HTTP to /slack/interactions, against
// the bot and then the floor. It first creates enough requests for one
// click per decision each, lets the job runner post them all, and keeps the
// runner running while clicking, as in production (each recorded answer
// wakes it to update the message). Click i goes to request i mod R and
// decision i div R, so consecutive clicks touch different requests.
func (e *env) measureClicks(rate float64, d time.Duration) (Clicks, error) {
	total := max(int(rate*d.Seconds()), 1)
	r := Clicks{Requests: (total + len(clickAnswers) - 1) / len(clickAnswers)}
	posts := &postCounter{}
	in, err := e.newBot(e.prefix("clicks"), countingEmulator(0, posts), time.Millisecond)
	if err != nil {
		return r, err
	}
	defer in.Close()
	ids := make([]string, r.Requests)
	for i := range ids {
		ids[i] = fmt.Sprintf("click%d-%d", e.seq.Add(1), i)
	}
	if err := e.createAll(in.http.URL, len(ids), func(i int) []byte { return e.requestBody(ids[i]) }); err != nil {
		return r, fmt.Errorf("clicks: %w", err)
	}
	defer in.startJobs()()
	if err := waitPosts(posts, len(ids), time.Minute+time.Duration(len(ids))*10*time.Millisecond); err != nil {
		return r, fmt.Errorf("clicks: %w", err)
	}
	if err := in.waitQuiet(time.Minute); err != nil {
		return r, fmt.Errorf("clicks: %w", err)
	}
	bodies := make([][]byte, total)
	for i := range bodies {
		rec, err := in.store.Get(context.Background(), ids[i%len(ids)])
		if err != nil || !rec.Posted() {
			return r, fmt.Errorf("clicks: request %s not posted (%v)", ids[i%len(ids)], err)
		}
		a := clickAnswers[i/len(ids)]
		bodies[i], err = clickBody(rec.Slack.Channel, rec.Slack.TS, blocks.BlockID(rec.Version, rec.ID, a.decision), a.actionID, a.value, i)
		if err != nil {
			return r, err
		}
	}
	floor := e.newClickFloor(e.prefix("clickfloor"))
	defer floor.Close()
	r.Floor = clickLoop(floor.URL, rate, d, bodies)
	r.Bot = clickLoop(in.http.URL, rate, d, bodies)
	for _, id := range ids {
		rec, err := in.store.Get(context.Background(), id)
		if err != nil {
			return r, fmt.Errorf("clicks: read %s: %w", id, err)
		}
		for _, a := range rec.Answers {
			if a.Answered() {
				r.Recorded++
			}
		}
	}
	if r.Bot.Errors == r.Bot.Sent {
		return r, fmt.Errorf("clicks: every click failed")
	}
	return r, nil
}

// clickBody is the form body Slack sends for a click by Alice (a default
// reviewer) on one control of a posted message, shaped like the bot tests'
// (bot/slack_harness_test.go clickPayload); n makes its trigger id, and so
// the body, unique: a body seen before is a replay and is not applied.
func clickBody(channel, ts, blockID, actionID, value string, n int) ([]byte, error) {
	action := map[string]any{"action_id": actionID, "block_id": blockID, "type": "button", "value": value,
		"action_ts": ts}
	if actionID == blocks.ActionSelect {
		action = map[string]any{"action_id": actionID, "block_id": blockID, "type": "static_select", "action_ts": ts,
			"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": value}, "value": value}}
	}
	payload := map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": slackemu.DefaultTeamID, "domain": "local"},
		"user":       map[string]any{"id": slackemu.UserAlice, "username": "alice", "name": "alice", "team_id": slackemu.DefaultTeamID},
		"api_app_id": "A0LOCAL",
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"trigger_id": fmt.Sprintf("%d.%d.bench", time.Now().UnixNano(), n),
		"channel":    map[string]any{"id": channel, "name": "approvals"},
		"message":    map[string]any{"type": "message", "ts": ts},
		"actions":    []any{action},
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("clicks: encode payload: %w", err)
	}
	return []byte("payload=" + url.QueryEscape(string(raw))), nil
}

// clickLoop sends bodies[i] (i < rate × d) as open-loop clicks.
func clickLoop(base string, rate float64, d time.Duration, bodies [][]byte) Latency {
	c := newClient()
	defer c.CloseIdleConnections()
	return openLoop(rate, d, func(i int) func() error {
		return func() error { return sendClick(c, base, bodies[i%len(bodies)]) }
	})
}

// sendClick posts one signed interaction; nil when it was acked (200).
// It is signed as it leaves, as Slack signs, so the timestamp is fresh.
func sendClick(c *http.Client, base string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, base+"/slack/interactions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Slack-Signature", signV0(bot.LocalSigningSecret, ts, body))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("click: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// newClickFloor is the click floor: a minimal handler that verifies the v0
// signature (slack-go's verifier, as the bot uses), decodes the form and the
// payload (into map[string]any) and makes one Redis round trip (HSET of
// the clicked value under the block id and user), answering 200 as the
// bot's ack does.
func (e *env) newClickFloor(prefix string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sv, err := slack.NewSecretsVerifier(r.Header, bot.LocalSigningSecret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			http.Error(w, "invalid Slack signature", http.StatusUnauthorized)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var cb map[string]any
		if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		user, _ := cb["user"].(map[string]any)
		actions, _ := cb["actions"].([]any)
		if len(actions) == 0 || user == nil {
			http.Error(w, "no action", http.StatusBadRequest)
			return
		}
		a, _ := actions[0].(map[string]any)
		blockID, _ := a["block_id"].(string)
		uid, _ := user["id"].(string)
		if err := e.rdb.HSet(r.Context(), prefix+":floorclick:"+blockID, uid, fmt.Sprint(a["value"])).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
}

// signV0 is Slack's request signature: "v0=" + hex(HMAC-SHA256(secret,
// "v0:<timestamp>:<body>")).
func signV0(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
