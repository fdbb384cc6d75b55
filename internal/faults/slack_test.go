package faults

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
)

// signV0 is Slack's v0 signature of a request body.
func signV0(ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(signingSecret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

var alice = map[string]any{"id": reviewer, "username": "alice", "name": "alice", "team_id": "T0LOCAL"}

// interaction is the form body Slack sends for an interaction payload.
func interaction(payload map[string]any) []byte {
	raw, _ := json.Marshal(payload)
	return []byte("payload=" + url.QueryEscape(string(raw)))
}

// approveBody is Alice's click on "Approve" of a request's one decision.
func approveBody(id string) []byte {
	return interaction(map[string]any{
		"type": "block_actions", "team": map[string]any{"id": "T0LOCAL", "domain": "local"}, "user": alice,
		"api_app_id": "A0LOCAL", "trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
		"channel":   map[string]any{"id": channel, "name": "approvals"},
		"container": map[string]any{"type": "message", "channel_id": channel, "is_ephemeral": false},
		"actions": []any{map[string]any{"action_id": blocks.ActionApprove, "block_id": blocks.BlockID(1, id, "d1"),
			"type": "button", "value": "true", "action_ts": fmt.Sprint(time.Now().Unix()) + ".000001"}},
	})
}

// commentBody is Alice's comment dialog on the decision, submitted.
func commentBody(id, text string) []byte {
	ref := blocks.ModalRef{RequestID: id, DecisionID: "d1", Channel: channel}
	return interaction(map[string]any{
		"type": "view_submission", "team": map[string]any{"id": "T0LOCAL", "domain": "local"}, "user": alice,
		"view": map[string]any{"id": "V0MODAL", "type": "modal", "callback_id": blocks.ModalComment,
			"private_metadata": ref.Encode(), "state": map[string]any{"values": map[string]any{
				blocks.BlockComment: map[string]any{blocks.ActionText: map[string]any{"type": "plain_text_input", "value": text}}}}},
	})
}

// slashBody is Alice typing "/approvals all".
func (w *world) slashBody() []byte {
	v := url.Values{}
	for k, val := range map[string]string{
		"token": "gIkuvaNzQIHg97ATvDxqgjtO", "team_id": "T0LOCAL", "team_domain": "local", "channel_id": channel,
		"channel_name": "approvals", "user_id": reviewer, "user_name": "alice", "command": "/approvals", "text": "all",
		"response_url": w.recv.srv.URL + "/slash", "trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
		"api_app_id": "A0LOCAL",
	} {
		v.Set(k, val)
	}
	return []byte(v.Encode())
}

// resolve is Alice approving a request until the bot has it resolved: a
// click that reached no bot, or that the bot acked without recording (its
// Redis did not answer in time; she is told to try again), is clicked again.
func (w *world) resolve(id string, i int) {
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		b := w.liveBot(i)
		if b == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		status, _, took := w.sendSlack(b, "/slack/interactions", approveBody(id))
		if status == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		w.mu.Lock()
		w.clickAck = append(w.clickAck, took)
		w.mu.Unlock()
		if status != http.StatusOK {
			w.t.Errorf("click on %s answered %d", id, status)
			return
		}
		if code, view := w.get(id); code == http.StatusOK && view["status"] == "resolved" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Errorf("%s: not resolved within %v", id, guard)
}

// resolveAll resolves requests from conc reviewers' windows at once.
func (w *world) resolveAll(ids []string, conc int) *sync.WaitGroup {
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			w.resolve(id, i)
		})
	}
	return &wg
}

// stateOf is what a replay must not change about a request: its view (the
// answers, status, response and callback) and its audit chain.
type stateOf struct {
	view  map[string]any
	audit int
}

func (w *world) state(id string) stateOf {
	_, view := w.get(id)
	_, audit := w.get(id + "/audit")
	entries, _ := audit["entries"].([]any)
	return stateOf{view: view, audit: len(entries)}
}

// replay sends every signed Slack request captured so far again, byte for
// byte, and asserts that none changed any request's view or audit chain.
// It returns how many were replayed.
func (w *world) replay() int {
	w.t.Helper()
	w.mu.Lock()
	captured := append([]signedRequest(nil), w.captured...)
	ids := append([]string(nil), w.order...)
	w.mu.Unlock()
	before := map[string]stateOf{}
	for _, id := range ids {
		if w.reqs[id].acked {
			before[id] = w.state(id)
		}
	}
	for i, s := range captured {
		b := w.liveBot(i)
		status, body, _ := w.sendSigned(b, s)
		if status != http.StatusOK || len(strings.TrimSpace(string(body))) != 0 {
			w.t.Errorf("replay of %s: %d %q, want an empty 200 (a replay is acked and ignored)", s.path, status, body)
		}
	}
	w.waitIdle()
	for id, was := range before {
		now := w.state(id)
		if now.audit != was.audit {
			w.t.Errorf("%s: the replays added %d audit entries", id, now.audit-was.audit)
		}
		if !reflect.DeepEqual(now.view, was.view) {
			w.t.Errorf("%s: the replays changed the request:\nbefore %v\nafter  %v", id, was.view, now.view)
		}
	}
	return len(captured)
}
