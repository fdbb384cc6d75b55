package client_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/client"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// The in-process bot these tests talk to: the real service (intake, long
// polls, event streams, decision API, signed callbacks, job runner) over
// the test Redis (redistest: REDIS_URL, a redis-server from PATH, or the
// embedded store) and the Slack emulator.

// testSecret is the bot's CALLBACK_SECRET in these tests.
const testSecret = "whsec_Y2xpZW50LXRlc3QtY2FsbGJhY2stc2VjcmV0LTAxMjM0NQ=="

// Tokens: the agent that submits, and the reviewers who decide through the
// decision API (the default reviewers, as in local mode).
const (
	agentToken = "agent-token-0123456789abcdef"
	aliceToken = "alice-api-token-0123456789"
	bobToken   = "bob-api-token-0123456789"
)

// guard only stops a hung test; nothing measures the machine's speed by it.
const guard = 2 * time.Minute

type testBot struct {
	t   *testing.T
	url string
	srv *httptest.Server
	// front, when set, sees every API call before the bot does (fault
	// injection); it returns true when it answered the call itself.
	mu    sync.Mutex
	front func(w http.ResponseWriter, r *http.Request, body []byte) bool
	bot   http.Handler
}

func startBot(t *testing.T) *testBot {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	cfg := bot.Config{
		SlackBotToken:        emu.Token(),
		SlackSigningSecret:   "test-signing-secret",
		CallbackSecret:       testSecret,
		CallbackAllowPrivate: true, // the tests' agents listen on loopback
		SlackDefaultChannel:  "#approvals",
		SlackPostInterval:    50 * time.Millisecond,
		IntakeMaxBodyBytes:   1 << 20,
		WorkerConcurrency:    2,
		JobLease:             time.Minute,
		JobMaxAttempts:       5,
		JobPollInterval:      20 * time.Millisecond,
		DefaultReviewers:     slices.Clone(bot.LocalDefaultReviewers),
		StoreRequestTimeout:  guard,
	}
	cfg, err := cfg.WithTokens("agent:" + agentToken)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = cfg.WithDeciders("U0ALICE:"+aliceToken+",U0BOB:"+bobToken, nil); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := bot.NewMetrics(reg)
	st, err := store.New(rdb, store.Options{Prefix: prefix, HomeJobs: true, OpenCounts: cfg.Limits().CapsOpen()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bot.NewService(bot.Deps{
		Metrics: metrics, Registry: reg, Logger: slog.New(slog.DiscardHandler), Store: st, Config: cfg,
		Slack:         slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client())),
		RateLimitHold: 200 * time.Millisecond, CommandBudget: guard,
	})
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBot{t: t, bot: svc.Handler()}
	tb.srv = httptest.NewServer(http.HandlerFunc(tb.serve))
	tb.url = tb.srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.RunJobs(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		tb.srv.CloseClientConnections()
		tb.srv.Close()
		svc.Close()
		_ = emu.Close()
	})
	return tb
}

func (b *testBot) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	front := b.front
	b.mu.Unlock()
	if front != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if front(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	b.bot.ServeHTTP(w, r)
}

// setFront installs a fault injector in front of the bot.
func (b *testBot) setFront(f func(w http.ResponseWriter, r *http.Request, body []byte) bool) {
	b.mu.Lock()
	b.front = f
	b.mu.Unlock()
}

// client is the agent's client of this bot, retrying quickly.
func (b *testBot) client(opts ...client.Option) *client.Client {
	return client.New(b.url, agentToken, append([]client.Option{client.WithRetries(5, 10*time.Millisecond)}, opts...)...)
}

// decide calls a decision endpoint as a reviewer, as a dashboard would.
func (b *testBot) decide(id, verb, token, body string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/v1/requests/"+id+"/"+verb, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("POST %s/%s: %d %s", id, verb, resp.StatusCode, got)
	}
}

// approval is a one-decision request.
func approval(id string) *client.Request {
	return &client.Request{ID: id, Title: "Ship it", AgentID: "test-agent", Deadline: time.Now().Add(time.Hour),
		Decisions: []client.Decision{{ID: "ship", Type: "approval", Prompt: "Ship v2?", Required: true}}}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}
