package sandbox_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/sandbox"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

const (
	testSecret   = "test-signing-secret"
	testCallback = "whsec_dGVzdC1jYWxsYmFjay1zZWNyZXQtMDEyMzQ1Njc4OQ=="
)

// received is one request the fake bot got, its signature verified.
type received struct {
	Path    string
	Header  http.Header
	Body    []byte
	Form    url.Values
	Payload map[string]any // interactions: the decoded payload
}

// fakeBot stands in for approvalbot's /slack/* endpoints: it checks each
// request's v0 signature as the real handlers do, records it, and answers
// with reply (default: 200, empty).
type fakeBot struct {
	t     *testing.T
	mu    sync.Mutex
	got   []received
	stall chan struct{} // when set, requests get no answer until it closes
	reply func(rc received) (status int, contentType, body string)
}

func (f *fakeBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sv, err := slack.NewSecretsVerifier(r.Header, testSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		f.t.Errorf("%s: signature does not verify: %v", r.URL.Path, err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rc := received{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		rc.Form, _ = url.ParseQuery(string(body))
		if p := rc.Form.Get("payload"); p != "" {
			if err := json.Unmarshal([]byte(p), &rc.Payload); err != nil {
				f.t.Errorf("payload is not JSON: %v", err)
			}
		}
	}
	f.mu.Lock()
	f.got = append(f.got, rc)
	stall, reply := f.stall, f.reply
	f.mu.Unlock()
	if stall != nil {
		<-stall
	}
	status, ctype, out := http.StatusOK, "", ""
	if reply != nil {
		status, ctype, out = reply(rc)
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

func (f *fakeBot) last(t *testing.T) received {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		t.Fatal("the bot received nothing")
	}
	return f.got[len(f.got)-1]
}

func (f *fakeBot) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func (f *fakeBot) set(reply func(received) (int, string, string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stall, f.reply = nil, reply
}

// stallUntilCleanup makes the bot answer nothing until the test ends: later
// than any ack deadline, however fast or slow the machine.
func (f *fakeBot) stallUntilCleanup() {
	f.mu.Lock()
	defer f.mu.Unlock()
	stall := make(chan struct{})
	f.stall = stall
	f.t.Cleanup(func() { close(stall) })
}

// env is a sandbox over an emulator, served on a test listener, with a
// fake bot attached and a Slack client acting as the bot.
type env struct {
	sb  *sandbox.Sandbox
	emu *slackemu.Server
	bot *fakeBot
	srv *httptest.Server
	api *slack.Client
}

// newEnv's ack deadline is a minute: long enough that no bot answer misses
// it on a loaded machine. Tests of the deadline itself use newEnvAck.
func newEnv(t *testing.T, ws *slackemu.Workspace) *env {
	t.Helper()
	return newEnvAck(t, ws, time.Minute)
}

func newEnvAck(t *testing.T, ws *slackemu.Workspace, ackTimeout time.Duration) *env {
	t.Helper()
	emu := slackemu.New(slackemu.Options{Workspace: ws, StrictTriggers: true})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sb, err := sandbox.New(sandbox.Options{Emulator: emu, SigningSecret: testSecret, CallbackSecret: testCallback,
		BaseURL: srv.URL + "/sandbox/", AckTimeout: ackTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	mux.Handle("/sandbox/", http.StripPrefix("/sandbox", sb))
	bot := &fakeBot{t: t}
	sb.Attach(bot)
	api := slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	return &env{sb: sb, emu: emu, bot: bot, srv: srv, api: api}
}

// call POSTs JSON to the sandbox's page API and decodes the answer.
func (e *env) call(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(e.srv.URL+"/sandbox/"+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// state is the page's state for user.
type state struct {
	Me       string `json:"me"`
	Channels []struct {
		ID       string `json:"id"`
		DM       bool   `json:"dm"`
		Messages []struct {
			TS     string           `json:"ts"`
			Blocks []map[string]any `json:"blocks"`
		} `json:"messages"`
	} `json:"channels"`
	Ephemerals []struct {
		ID, Channel, User, From, Source, Text string
		Blocks                                []map[string]any
	} `json:"ephemerals"`
	Home   *struct{ ID string } `json:"home"`
	Modals []struct {
		ID     string            `json:"id"`
		Errors map[string]string `json:"errors"`
	} `json:"modals"`
	Inbox []sandbox.Delivery `json:"inbox"`
	Calls []struct {
		Method string          `json:"method"`
		Error  string          `json:"error"`
		Detail json.RawMessage `json:"detail"`
	} `json:"calls"`
	Notices []string `json:"notices"`
	Pacing  bool     `json:"pacing"`
}

func (e *env) state(t *testing.T, user string) state {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/sandbox/api/state?user=" + url.QueryEscape(user))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st state
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// post has the bot post blocks to channel and returns the message ts.
func (e *env) post(t *testing.T, channel, blocks string) string {
	t.Helper()
	var bl slack.Blocks
	if err := json.Unmarshal([]byte(blocks), &bl); err != nil {
		t.Fatal(err)
	}
	_, ts, err := e.api.PostMessage(channel, slack.MsgOptionBlocks(bl.BlockSet...), slack.MsgOptionText("fallback", false))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// get digs into decoded JSON: get(x, "a", "b") is x["a"]["b"].
func get(x any, keys ...string) any {
	for _, k := range keys {
		m, _ := x.(map[string]any)
		x = m[k]
	}
	return x
}
