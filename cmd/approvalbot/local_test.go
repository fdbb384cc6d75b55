//go:build !nolocal

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/examples"
)

// `go run ./cmd/approvalbot` with no configuration posts AND answers ten
// requests in one channel: the README's quickstart, past its first message.
// The bot is this package's run, wired exactly as main runs it (embedded
// store, Slack emulator, sandbox); the requests are the README recipe's
// (examples package), answered through the sandbox's own API as a person in
// the browser does. Local mode paces posts at one a second per channel, so
// this takes about ten seconds; nothing here races the clock: every wait is
// for a condition, bounded only to fail instead of hanging.
// (Not parallel: it sets environment variables.)
func TestLocalModePostsAndAnswersTenRequestsInOneChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about ten seconds (local mode posts one message a second per channel)")
	}
	base := startLocalBot(t)
	const n = 10
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("local-ten-%02d", i)
		resp, body, err := examples.Submit(t.Context(), time.Now(), examples.Options{
			BotURL: base, ID: ids[i], ResponseURL: base + "/sandbox/inbox"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", ids[i], resp.StatusCode, body)
		}
	}

	for _, id := range ids {
		var rec apiRecord
		waitFor(t, id+" posted", func() string {
			if rec = getRecord(t, base, id); rec.Slack.State != "posted" {
				return "slack state " + rec.Slack.State
			}
			return ""
		})
		if rec.Slack.Channel != "C0APPROVALS" {
			t.Fatalf("%s posted to %q, want every request in C0APPROVALS", id, rec.Slack.Channel)
		}
		// Alice approves the three approvals, Bob picks the launch timing and
		// submits, each through the control in the message as it stands.
		act(t, base, "U0ALICE", rec.Slack.TS, id, blocks.ActionApproveAll, nil)
		act(t, base, "U0BOB", rec.Slack.TS, id, blocks.ActionSelect, map[string]any{"selected": []string{"next_month"}})
		act(t, base, "U0BOB", rec.Slack.TS, id, blocks.ActionSubmit, nil)
	}

	for _, id := range ids {
		waitFor(t, id+" resolved and its response delivered", func() string {
			if rec := getRecord(t, base, id); rec.Status != "resolved" || rec.Callback.State != "delivered" {
				return fmt.Sprintf("status %s, callback %s", rec.Status, rec.Callback.State)
			}
			return ""
		})
	}
	var state struct {
		Inbox []struct {
			Body     string
			Verified bool
		}
	}
	getJSON(t, base+"/sandbox/api/state?user=U0ALICE", &state)
	for _, id := range ids {
		found := false
		for _, d := range state.Inbox {
			found = found || (d.Verified && strings.Contains(d.Body, `"request_id": "`+id+`"`))
		}
		if !found {
			t.Errorf("the sandbox's inbox has no verified decision response for %s", id)
		}
	}
}

// startLocalBot runs run() with no configuration but a free loopback
// LISTEN_ADDR, until the test ends, and returns its base URL.
func startLocalBot(t *testing.T) string {
	t.Helper()
	// No configuration at all: every setting bot.Config reads is unset.
	typ := reflect.TypeFor[bot.Config]()
	for i := range typ.NumField() {
		if k := typ.Field(i).Tag.Get("envconfig"); k != "" {
			t.Setenv(k, "") // restores the value after the test
			_ = os.Unsetenv(k)
		}
	}
	t.Setenv("LOG_LEVEL", "warn")
	for attempt := 1; ; attempt++ {
		// A free port, released for run to listen on: another process may
		// take it in between, so a failure to listen is retried.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		t.Setenv("LISTEN_ADDR", addr)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx) }()
		base := "http://" + addr
		if err := waitHealthy(base, done); err != nil {
			cancel()
			if attempt < 5 && strings.Contains(err.Error(), "listen on") {
				continue
			}
			t.Fatalf("local bot did not start: %v", err)
		}
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
		return base
	}
}

// waitHealthy waits for /healthz to answer, or for run to end.
func waitHealthy(base string, done <-chan error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("run ended: %w", err)
		default:
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no /healthz within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// apiRecord is the part of GET /v1/requests/{id} the test reads.
type apiRecord struct {
	Status string `json:"status"`
	Slack  struct {
		State   string `json:"state"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	} `json:"slack"`
	Callback struct {
		State string `json:"state"`
	} `json:"callback"`
}

func getRecord(t *testing.T, base, id string) apiRecord {
	t.Helper()
	var rec apiRecord
	getJSON(t, base+"/v1/requests/"+id, &rec)
	return rec
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

// act uses a control of request id's message in #approvals as user does in
// the sandbox's page: POST /sandbox/api/act, which signs and sends the bot
// the block_actions payload Slack would. When the bot updated the message
// between reading it and acting (the previous answer's update), the sandbox
// finds no such control and sends nothing: act reads the message again, as
// the page does on the update.
func act(t *testing.T, base, user, ts, id, actionID string, entered map[string]any) {
	t.Helper()
	for range 100 {
		status, res := tryAct(t, base, user, ts, id, actionID, entered)
		if status == http.StatusNotFound && strings.Contains(res.Error, "may have changed") {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if status != http.StatusOK || !res.OK {
			t.Fatalf("%s: %s as %s: HTTP %d, %+v", id, actionID, user, status, res)
		}
		return
	}
	t.Fatalf("%s: %s as %s: the message kept changing under the click", id, actionID, user)
}

type actResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

func tryAct(t *testing.T, base, user, ts, id, actionID string, entered map[string]any) (int, actResult) {
	t.Helper()
	var state struct {
		Channels []struct {
			ID       string
			Messages []struct {
				TS     string
				Blocks []struct {
					BlockID  string `json:"block_id"`
					Elements []struct {
						ActionID string `json:"action_id"`
					}
				}
			}
		}
	}
	getJSON(t, base+"/sandbox/api/state?user="+user, &state)
	blockID := ""
	for _, c := range state.Channels {
		for _, m := range c.Messages {
			if c.ID != "C0APPROVALS" || m.TS != ts {
				continue
			}
			for _, b := range m.Blocks {
				for _, e := range b.Elements {
					if e.ActionID == actionID && strings.Contains(b.BlockID, "/"+id+"/") {
						blockID = b.BlockID
					}
				}
			}
		}
	}
	if blockID == "" {
		t.Fatalf("%s: no %s control in message %s", id, actionID, ts)
	}
	body, _ := json.Marshal(map[string]any{"user": user, "surface": "message", "channel": "C0APPROVALS", "ts": ts,
		"block_id": blockID, "action_id": actionID, "entered": entered})
	resp, err := http.Post(base+"/sandbox/api/act", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res actResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("%s: %s as %s: HTTP %d, %v", id, actionID, user, resp.StatusCode, err)
	}
	return resp.StatusCode, res
}

// waitFor polls until notYet says nothing (it says what is still missing);
// the bound only turns a hang into a failure (ten paced posts take about
// ten seconds).
func waitFor(t *testing.T, what string, notYet func() string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		missing := notYet()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 3 minutes (%s)", what, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --help says what this build does with no configuration: local mode.
func TestLocalHelpSaysSo(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := runCLI(context.Background(), []string{"--help"}, &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "LOCAL MODE") || !strings.Contains(out.String(), "/sandbox/") {
		t.Errorf("exit %d, help:\n%s", code, out.String())
	}
}
