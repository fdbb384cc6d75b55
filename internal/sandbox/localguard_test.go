package sandbox_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// A local bot acts for whoever reaches it: the sandbox's page API clicks as
// any member. A web page the developer opens must not reach it, neither by
// a cross-site request (a text/plain POST needs no preflight) nor by DNS
// rebinding (its own name resolved to 127.0.0.1, so the browser calls it
// same-origin, with that name as Host). The page itself, and clients that
// are not browsers, still work.
func TestLocalModeRefusesWebPages(t *testing.T) {
	base, _, st := localBot(t)
	id := postExample(t, base)
	deadline := time.Now().Add(time.Minute)
	for {
		rec, err := st.Get(context.Background(), id)
		if err == nil && rec.Posted() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not posted: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec, _ := st.Get(context.Background(), id)
	act := `{"user":"` + slackemu.UserAlice + `","surface":"message","channel":"` + rec.Slack.Channel + `","ts":"` +
		rec.Slack.TS + `","block_id":"ab/1/` + id + `/d1","action_id":"approve"}`
	host := strings.TrimPrefix(base, "http://")
	rebound := "attacker.example:" + host[strings.LastIndex(host, ":")+1:]
	send := func(method, path, body string, header map[string]string) int {
		t.Helper()
		return statusOf(t, method, base+path, body, header)
	}
	answered := func() bool {
		rec, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return len(rec.Answers) > 0
	}

	crossSite := map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"}
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"rebound name reads the workspace", http.MethodGet, "/sandbox/api/state?user=" + slackemu.UserAlice, "",
			map[string]string{"Host": rebound}, http.StatusForbidden},
		{"rebound name clicks as Alice", http.MethodPost, "/sandbox/api/act", act,
			map[string]string{"Host": rebound, "Content-Type": "application/json", "Origin": "http://" + rebound,
				"Sec-Fetch-Site": "same-origin"}, http.StatusForbidden},
		{"cross-site text/plain click", http.MethodPost, "/sandbox/api/act", act,
			merge(crossSite, map[string]string{"Content-Type": "text/plain"}), http.StatusForbidden},
		{"cross-site Slack interaction", http.MethodPost, "/slack/interactions", "payload=%7B%7D",
			merge(crossSite, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), http.StatusForbidden},
		{"cross-site intake", http.MethodPost, "/v1/requests", "{}",
			merge(crossSite, map[string]string{"Content-Type": "text/plain"}), http.StatusForbidden},
		{"a click that is not JSON", http.MethodPost, "/sandbox/api/act", act,
			map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		if got := send(tc.method, tc.path, tc.body, tc.header); got != tc.want {
			t.Errorf("%s: %s %s answered %d, want %d", tc.name, tc.method, tc.path, got, tc.want)
		}
		if answered() {
			t.Fatalf("%s: an answer was recorded", tc.name)
		}
	}

	// The page itself: same origin, JSON.
	page := map[string]string{"Content-Type": "application/json", "Origin": base, "Sec-Fetch-Site": "same-origin",
		"Referer": base + "/sandbox/"}
	if got := send(http.MethodGet, "/sandbox/api/state?user="+url.QueryEscape(slackemu.UserAlice), "", page); got != http.StatusOK {
		t.Errorf("the page reading its state: %d", got)
	}
	if got := send(http.MethodPost, "/sandbox/api/act", act, page); got != http.StatusOK {
		t.Fatalf("the page's click: %d", got)
	}
	if !answered() {
		t.Error("the page's click recorded no answer")
	}
}

// statusOf sends a request with header (its "Host" as the request's Host)
// and returns the status it is answered.
func statusOf(t *testing.T, method, target, body string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// The emulator's Web API under /sandbox/api/<method> posts, updates and
// deletes messages: a web page must not reach it with a GET (an <img>),
// which carries the public token in its query string. Only a token in the
// Authorization header is taken, and another site's page loading anything
// from here is refused.
func TestLocalModeEmulatorAPIWantsTheTokenInTheHeader(t *testing.T) {
	base, setup, _ := localBot(t)
	q := url.Values{"token": {slackemu.DefaultToken}, "channel": {slackemu.ChannelApprovals}, "text": {"Forged by a web page"}}
	get := func(path string, header map[string]string) int {
		t.Helper()
		return statusOf(t, http.MethodGet, base+path, "", header)
	}
	img := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
	if got := get("/sandbox/api/chat.postMessage?"+q.Encode(), img); got != http.StatusForbidden {
		t.Errorf("another site's <img>: %d, want 403", got)
	}
	if got := get("/sandbox/api/chat.postMessage?"+q.Encode(), nil); got != http.StatusUnauthorized {
		t.Errorf("the token in the query string: %d, want 401", got)
	}
	for _, m := range setup.Emulator.Messages(slackemu.ChannelApprovals) {
		if strings.Contains(m.Text, "Forged") {
			t.Fatalf("a GET posted as the bot: %q", m.Text)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + slackemu.DefaultToken}
	if got := get("/sandbox/api/conversations.history?channel="+slackemu.ChannelApprovals, auth); got != http.StatusOK {
		t.Errorf("the token in the header: %d, want 200", got)
	}
	nav := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
	if got := get("/sandbox/", nav); got != http.StatusOK {
		t.Errorf("following a link to the sandbox from another site: %d, want 200", got)
	}
}
