package bot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// sendEvent posts a signed Events API request as Slack would: a JSON body,
// signed at `at`, with extra headers (X-Slack-Retry-Num on a retry).
func (h *harness) sendEvent(body []byte, at time.Time, secret string, headers map[string]string) response {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/slack/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("X-Slack-Signature", signV0(secret, at.Unix(), body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b}
}

// homeOpened is an app_home_opened event_callback shaped like the Events
// API reference's example.
func homeOpened(u slackUser, eventID string) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "gIkuvaNzQIHg97ATvDxqgjtO", "team_id": "T0LOCAL", "api_app_id": "A0LOCAL",
		"event": map[string]any{"type": "app_home_opened", "user": u.id, "channel": "D" + strings.TrimPrefix(u.id, "U"),
			"tab": "home", "event_ts": fmt.Sprintf("%d.000100", time.Now().Unix())},
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
		"authorizations": []any{map[string]any{"team_id": "T0LOCAL", "user_id": "U0BOT", "is_bot": true}},
	})
	return b
}

func (h *harness) openHome(u slackUser, eventID string, headers map[string]string) {
	h.t.Helper()
	if r := h.sendEvent(homeOpened(u, eventID), time.Now(), h.cfg.SlackSigningSecret, headers); r.Status != http.StatusOK {
		h.t.Fatalf("app_home_opened %s: %d %s", eventID, r.Status, r.Body)
	}
}

// homeTab is a published Home tab, split into its two lists.
type homeTab struct {
	raw               json.RawMessage
	waiting, answered []string
	approve           map[string]string // request id -> block id of its Approve button
}

func parseHome(t testing.TB, raw json.RawMessage) homeTab {
	t.Helper()
	var v struct {
		Type   string          `json:"type"`
		Blocks json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Type != "home" {
		t.Fatalf("not a home view (%v): %s", err, raw)
	}
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Text     *struct{ Text string }
		Elements []struct {
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(v.Blocks, &bs); err != nil {
		t.Fatal(err)
	}
	h := homeTab{raw: raw, approve: map[string]string{}}
	list := &h.waiting
	for _, b := range bs {
		switch {
		case b.Type == "section" && b.Text != nil && strings.Contains(b.Text.Text, "Recently answered"):
			list = &h.answered
		case b.Type == "section" && b.Text != nil && strings.Contains(b.Text.Text, "\n"):
			if m := listedID.FindStringSubmatch(b.Text.Text); m != nil {
				*list = append(*list, m[1])
			}
		case b.Type == "actions":
			if id, _, _, ok := blocks.ParseBlockID(b.BlockID); ok {
				for _, e := range b.Elements {
					if e.ActionID == blocks.ActionApprove {
						h.approve[id] = b.BlockID
					}
				}
			}
		}
	}
	return h
}

// waitHome waits until u's published Home tab satisfies cond.
func (h *harness) waitHome(u slackUser, what string, cond func(homeTab) bool) homeTab {
	h.t.Helper()
	var got homeTab
	err := h.emu.WaitFor(ctxTimeout(h.t, guard), func(sn *slackemu.Snapshot) bool {
		raw, ok := sn.HomeView(u.id)
		if !ok {
			return false
		}
		got = parseHome(h.t, raw)
		return cond(got)
	})
	if err != nil {
		h.t.Fatalf("Home tab of %s never %s; last: waiting %v, answered %v\n%s", u.id, what, got.waiting, got.answered, got.raw)
	}
	if errs := slackemu.ValidateView(got.raw); len(errs) > 0 {
		h.t.Fatalf("invalid Home tab: %v", errs)
	}
	return got
}

// publishesPerUser waits for n views.publish calls, and a moment more for
// any that should not come, and counts them by user.
func (h *harness) publishesPerUser(n int) map[string]int {
	h.t.Helper()
	if _, err := h.emu.WaitForCalls(ctxTimeout(h.t, guard), "views.publish", n); err != nil {
		h.t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	perUser := map[string]int{}
	for _, c := range h.emu.CallsTo("views.publish") {
		perUser[c.Params["user_id"]]++
	}
	return perUser
}

func TestEventsURLVerificationAndSignature(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	r := h.sendEvent(body, time.Now(), h.cfg.SlackSigningSecret, nil)
	if r.Status != http.StatusOK || r.json(t)["challenge"] != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification: %d %s", r.Status, r.Body)
	}
	if r := h.sendEvent(body, time.Now(), "not-the-secret", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("forged signature: %d %s", r.Status, r.Body)
	}
	if r := h.sendEvent(body, time.Now().Add(-10*time.Minute), h.cfg.SlackSigningSecret, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("stale signature: %d %s", r.Status, r.Body)
	}
	if r := h.sendEvent(homeOpened(alice, "Ev0FORGED"), time.Now(), "not-the-secret", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("forged event: %d", r.Status)
	}
	if r := h.sendEvent([]byte(`not json`), time.Now(), h.cfg.SlackSigningSecret, nil); r.Status != http.StatusBadRequest {
		t.Errorf("malformed body: %d", r.Status)
	}
	if n := len(h.emu.CallsTo("views.publish")); n != 0 {
		t.Errorf("views.publish calls = %d, want 0", n)
	}
}

func TestHomeTabListsMyPendingRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	forAlice := h.accept(simple(t, "home-l-alice", []string{"U0ALICE"}, "C0APPROVALS"))
	forBoth := h.accept(simple(t, "home-l-both", []string{"U0BOB", "U0ALICE"}, "C0APPROVALS"))
	forBob := h.accept(simple(t, "home-l-bob", []string{"U0BOB"}, "C0APPROVALS"))
	h.waitIdle()

	h.openHome(alice, "Ev0HOMEL1", nil)
	home := h.waitHome(alice, "listed Alice's requests", func(ht homeTab) bool { return len(ht.waiting) > 0 })
	if !sameSet(home.waiting, []string{forAlice, forBoth}) || slices.Contains(home.waiting, forBob) {
		t.Errorf("waiting = %v, want %v and %v", home.waiting, forAlice, forBoth)
	}
	if len(home.answered) != 0 {
		t.Errorf("answered = %v", home.answered)
	}
	for _, id := range []string{forAlice, forBoth} {
		if home.approve[id] != h.blockID(id, "d1") {
			t.Errorf("%s: Approve block %q, want %q", id, home.approve[id], h.blockID(id, "d1"))
		}
	}
	for _, want := range []string{"Waiting for you", "Approve Marketing Strategy", "Recently answered by you"} {
		if !contains(string(home.raw), want) {
			t.Errorf("Home tab lacks %q", want)
		}
	}
	// Bob's own tab lists his two; Mallory's says nothing waits.
	h.openHome(bob, "Ev0HOMEL2", nil)
	if got := h.waitHome(bob, "listed Bob's requests", func(ht homeTab) bool { return len(ht.waiting) > 0 }); !sameSet(got.waiting, []string{forBoth, forBob}) {
		t.Errorf("bob waiting = %v", got.waiting)
	}
	h.openHome(mallory, "Ev0HOMEL3", nil)
	h.waitHome(mallory, "said nothing waits", func(ht homeTab) bool {
		return len(ht.waiting) == 0 && contains(string(ht.raw), "Nothing is waiting for you")
	})
}

func TestEventRetriesAreDeduplicated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.openHome(alice, "Ev0DUP1", nil)
	h.openHome(alice, "Ev0DUP1", map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
	// A later, distinct event is published; by then a duplicate would have been too.
	h.openHome(bob, "Ev0DUP2", nil)
	if perUser := h.publishesPerUser(2); perUser[alice.id] != 1 || perUser[bob.id] != 1 {
		t.Errorf("views.publish per user = %v, want one each", perUser)
	}
}

func TestApproveFromHomeTab(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	first := h.accept(simple(t, "home-a-1", []string{"U0ALICE"}, "C0APPROVALS"))
	second := h.accept(simple(t, "home-a-2", []string{"U0ALICE", "U0BOB"}, "C0APPROVALS"))
	h.waitIdle()
	h.openHome(alice, "Ev0HOMEA1", nil)
	h.openHome(bob, "Ev0HOMEA2", nil)
	home := h.waitHome(alice, "listed both", func(ht homeTab) bool { return len(ht.waiting) == 2 })
	h.waitHome(bob, "listed the shared one", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{second}) })

	click := func(id string) {
		t.Helper()
		a := button(blocks.ActionApprove, "true")
		a["block_id"] = home.approve[id]
		r := h.sendInteraction(map[string]any{
			"type":       "block_actions",
			"team":       map[string]any{"id": "T0LOCAL", "domain": "local"},
			"user":       map[string]any{"id": alice.id, "username": "alice", "name": "Alice", "team_id": "T0LOCAL"},
			"api_app_id": "A0LOCAL",
			"container":  map[string]any{"type": "view", "view_id": "V0HOME"},
			"trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
			"view": map[string]any{"id": "V0HOME", "team_id": "T0LOCAL", "type": "home", "callback_id": blocks.HomeCallbackID,
				"state": map[string]any{"values": map[string]any{}}, "hash": "1700000000.00000001"},
			"actions": []any{a},
		})
		if r.Status != http.StatusOK {
			t.Fatalf("click: %d %s", r.Status, r.Body)
		}
	}
	click(first)
	rec, err := h.store.Get(ctxTimeout(t, guard), first)
	if err != nil || rec.Status != aah.StatusResolved || rec.Answers["d1"].By.ID != alice.id {
		t.Fatalf("after the click: %v %+v %v", rec.Status, rec.Answers, err)
	}
	home = h.waitHome(alice, "dropped the approved request", func(ht homeTab) bool {
		return slices.Equal(ht.waiting, []string{second}) && slices.Equal(ht.answered, []string{first})
	})
	// The request Bob shares is answered too: his tab follows.
	click(second)
	h.waitHome(alice, "emptied", func(ht homeTab) bool {
		return len(ht.waiting) == 0 && slices.Equal(ht.answered, []string{second, first})
	})
	h.waitHome(bob, "dropped the shared request", func(ht homeTab) bool { return len(ht.waiting) == 0 })
	// Mallory never opened her tab: nothing is published for her.
	if _, ok := h.emu.HomeView(mallory.id); ok {
		t.Error("a Home tab was published for a user who never opened it")
	}
}
