package faults

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/examples"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	signingSecret  = "faults-signing-secret"
	callbackSecret = "whsec_ZmF1bHRzLWNhbGxiYWNrLXNlY3JldC0wMTIzNDU2Nzg5"
	agentToken     = "faults-agent-token-0123456789"
	channel        = slackemu.ChannelApprovals // by id, so lookups after a crash can read its history
	reviewer       = slackemu.UserAlice
)

// world is one scenario's deployment: a private Redis, the Slack emulator
// on a listener, the agents' callback receiver, and the bot processes.
type world struct {
	t      *testing.T
	dir    string
	redis  *redistest.Server
	rdb    *redis.Client
	emu    *slackemu.Server
	emuSrv *httptest.Server
	recv   *receiver
	bots   []*botProc

	slackDelay    sync.Map     // method → time.Duration: Slack answers that late
	slackInflight atomic.Int32 // delayed Slack calls in progress
	lateFirst     atomic.Int32 // the next chat.postMessage calls that act lateBy late
	redisOutage   atomic.Bool  // Redis is frozen or down (or just was)

	mu       sync.Mutex
	reqs     map[string]*request
	order    []string
	posts    map[string]int // request id → chat.postMessage calls that took effect
	captured []signedRequest
	clickAck []time.Duration
	intake   []time.Duration // every intake answer's latency, 2xx or 503
	retries  int             // intake tries answered 503 or not reached
}

// request is what the test knows of one request as its agent saw it.
type request struct {
	id       string
	body     []byte
	acked    bool // some POST answered 2xx
	attempts int
	resolve  bool // a reviewer resolves it
}

// signedRequest is a Slack request as sent, for replaying byte for byte.
type signedRequest struct {
	path, ts, sig string
	body          []byte
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), reqs: map[string]*request{}, posts: map[string]int{}}
	// Every acknowledged write is on disk before Redis answers, so a
	// SIGKILLed Redis restarted on the same directory keeps it.
	w.redis = redistest.StartServer(t, "", "--appendonly", "yes", "--appendfsync", "always")
	w.rdb = redis.NewClient(&redis.Options{Addr: w.redis.Addr})
	t.Cleanup(func() { _ = w.rdb.Close() })
	w.emu = slackemu.New(slackemu.Options{OnMessage: w.onMessage})
	w.emuSrv = httptest.NewServer(http.HandlerFunc(w.serveSlack))
	t.Cleanup(w.emuSrv.Close)
	w.recv = newReceiver(t)
	return w
}

// serveSlack is the emulator, late by the method's delay. The body is read
// first, so a call whose caller dies while it waits still takes effect, as
// a request Slack received does.
func (w *world) serveSlack(rw http.ResponseWriter, r *http.Request) {
	method := path.Base(r.URL.Path)
	var d time.Duration
	if v, ok := w.slackDelay.Load(method); ok {
		d = v.(time.Duration)
	}
	if method == "chat.postMessage" && w.lateFirst.Add(-1) >= 0 {
		d = lateBy
	}
	if d > 0 {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		w.slackInflight.Add(1)
		time.Sleep(d) // the fault itself, not a wait for a condition
		w.slackInflight.Add(-1)
	}
	w.emu.ServeHTTP(rw, r)
}

// lateBy is how late Slack acts on the posts lateFirst names: past the 3.75 s
// the bot waits for a Slack call (3/4 of its 5 s lease).
const lateBy = 6 * time.Second

// onMessage counts the request messages Slack accepted (updates aside).
func (w *world) onMessage(m slackemu.Message) {
	if m.Edited > 0 {
		return
	}
	if id := requestOf(m); id != "" {
		w.mu.Lock()
		w.posts[id]++
		w.mu.Unlock()
	}
}

// requestOf is the request a message is the message of, from its metadata.
func requestOf(m slackemu.Message) string {
	var md struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	if json.Unmarshal(m.Metadata, &md) != nil || md.EventType != "approvalbot_request" {
		return ""
	}
	id, _ := md.EventPayload["request_id"].(string)
	return id
}

// messagesByRequest are the request messages in the channel now.
func (w *world) messagesByRequest() map[string][]slackemu.Message {
	out := map[string][]slackemu.Message{}
	for _, m := range w.emu.Messages(channel) {
		if id := requestOf(m); id != "" {
			out[id] = append(out[id], m)
		}
	}
	return out
}

// newRequests registers n requests named prefix-NNN: seed 000's example cut
// to its first decision (one approval resolves it), called back at the
// receiver.
func (w *world) newRequests(prefix string, n int, resolve bool) []string {
	w.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
		raw, err := examples.Request(time.Now(), examples.Options{ID: ids[i], ResponseURL: w.recv.srv.URL + "/callback"})
		if err != nil {
			w.t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			w.t.Fatal(err)
		}
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:1]
		body, _ := json.Marshal(doc)
		w.mu.Lock()
		w.reqs[ids[i]] = &request{id: ids[i], body: body, resolve: resolve}
		w.order = append(w.order, ids[i])
		w.mu.Unlock()
	}
	return ids
}

// liveBot is a running bot, preferring the i-th.
func (w *world) liveBot(i int) *botProc {
	for k := range w.bots {
		if b := w.bots[(i+k)%len(w.bots)]; b.alive() {
			return b
		}
	}
	return nil
}

var client = &http.Client{Timeout: 30 * time.Second}

// submit is an agent submitting until its request is acknowledged: a
// refused connection (the bot is down) or a 503 (Redis is) is retried
// with the identical body, which answers 200 if an earlier try was stored.
func (w *world) submit(id string, i int) {
	w.mu.Lock()
	r := w.reqs[id]
	w.mu.Unlock()
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		b := w.liveBot(i)
		if b == nil {
			time.Sleep(20 * time.Millisecond) // no bot up: wait for the restart
			continue
		}
		req, _ := http.NewRequest(http.MethodPost, b.url+"/v1/requests", bytes.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+agentToken)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		w.mu.Lock()
		r.attempts++
		w.mu.Unlock()
		if err != nil {
			w.mu.Lock()
			w.retries++
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		w.mu.Lock()
		w.intake = append(w.intake, took)
		switch resp.StatusCode {
		case http.StatusAccepted, http.StatusOK:
			r.acked = true
		case http.StatusServiceUnavailable:
			w.retries++
		}
		w.mu.Unlock()
		switch resp.StatusCode {
		case http.StatusAccepted, http.StatusOK:
			return
		case http.StatusServiceUnavailable:
			time.Sleep(100 * time.Millisecond)
		default:
			w.t.Errorf("POST %s: %d %s", id, resp.StatusCode, msg)
			return
		}
	}
	w.t.Errorf("POST %s: not acknowledged within %v", id, guard)
}

// submitAll runs one agent goroutine per request, at most conc at once.
func (w *world) submitAll(ids []string, conc int) *sync.WaitGroup {
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			w.submit(id, i)
		})
	}
	return &wg
}

// sendSlack signs body as Slack does (v0) and POSTs it to a bot's endpoint.
// It returns the status, or 0 when the bot could not be reached. What a
// bot acked outside a Redis outage is kept for the replay: a request that
// reached no bot, or one acked while Redis was down (its answer not
// recorded: the reviewer is told to try again), would be news to the bot,
// not a replay.
func (w *world) sendSlack(b *botProc, endpoint string, body []byte) (int, []byte, time.Duration) {
	ts := fmt.Sprint(time.Now().Unix())
	s := signedRequest{path: endpoint, ts: ts, sig: signV0(ts, body), body: body}
	outage := w.redisOutage.Load()
	status, msg, took := w.sendSigned(b, s)
	if status == http.StatusOK && !outage && !w.redisOutage.Load() {
		w.mu.Lock()
		w.captured = append(w.captured, s)
		w.mu.Unlock()
	}
	return status, msg, took
}

func (w *world) sendSigned(b *botProc, s signedRequest) (int, []byte, time.Duration) {
	req, _ := http.NewRequest(http.MethodPost, b.url+s.path, bytes.NewReader(s.body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", s.ts)
	req.Header.Set("X-Slack-Signature", s.sig)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, time.Since(start)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, msg, time.Since(start)
}

// get is GET /v1/requests/{id} (or a path below it) on a live bot.
func (w *world) get(p string) (int, map[string]any) {
	w.t.Helper()
	deadline := time.Now().Add(guard)
	for {
		if b := w.liveBot(0); b != nil {
			req, _ := http.NewRequest(http.MethodGet, b.url+"/v1/requests/"+p, nil)
			req.Header.Set("Authorization", "Bearer "+agentToken)
			if resp, err := client.Do(req); err == nil {
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					return resp.StatusCode, m
				}
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("GET %s: no answer within %v", p, guard)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// receiver is the agents' callback endpoint: it checks every delivery's
// Standard Webhooks signature and records it, and may answer late.
type receiver struct {
	srv      *httptest.Server
	wh       *standardwebhooks.Webhook
	delay    atomic.Int64 // nanoseconds before answering
	inflight atomic.Int32

	mu  sync.Mutex
	got map[string][]delivery // by request id
}

type delivery struct {
	webhookID, bodyHash string
	valid               bool
}

func newReceiver(t *testing.T) *receiver {
	wh, err := standardwebhooks.NewWebhook(callbackSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{wh: wh, got: map[string][]delivery{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path != "/callback" { // a slash command's response_url
			rw.WriteHeader(http.StatusOK)
			return
		}
		var resp struct {
			Content struct {
				Body struct {
					Data struct {
						RequestID string `json:"request_id"`
					} `json:"data"`
				} `json:"body"`
			} `json:"content"`
		}
		_ = json.Unmarshal(body, &resp)
		sum := sha256.Sum256(body)
		d := delivery{webhookID: req.Header.Get("webhook-id"), bodyHash: hex.EncodeToString(sum[:]),
			valid: wh.Verify(body, req.Header) == nil}
		r.mu.Lock()
		r.got[resp.Content.Body.Data.RequestID] = append(r.got[resp.Content.Body.Data.RequestID], d)
		r.mu.Unlock()
		if delay := time.Duration(r.delay.Load()); delay > 0 {
			r.inflight.Add(1)
			time.Sleep(delay) // the fault: a slow agent
			r.inflight.Add(-1)
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries(id string) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got[id]...)
}

func (r *receiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.got {
		n += len(d)
	}
	return n
}

// reached is how many requests were delivered at least once.
func (r *receiver) reached() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}
