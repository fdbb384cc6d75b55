package mcpserver_test

import (
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

// The in-process bot these tests talk to, as client/'s tests do: the real
// service (intake, long polls, event streams, the decision API, /mcp, the
// job runner) over the test Redis and the Slack emulator.

const (
	agentToken = "agent-token-0123456789abcdef"
	otherToken = "other-token-0123456789abcdef"
	aliceToken = "alice-api-token-0123456789"
	bobToken   = "bob-api-token-0123456789"
)

// guard only stops a hung test; nothing measures the machine's speed by it.
const guard = 2 * time.Minute

type testBot struct {
	t   *testing.T
	url string
	// logs is the bot's log (JSON lines, level info).
	logs *syncBuffer
	// close is the service's Close, as Run calls it at shutdown.
	close func()
}

func startBot(t *testing.T) *testBot {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	cfg := bot.Config{
		SlackBotToken:       emu.Token(),
		SlackSigningSecret:  "test-signing-secret",
		CallbackSecret:      "whsec_Y2xpZW50LXRlc3QtY2FsbGJhY2stc2VjcmV0LTAxMjM0NQ==",
		SlackDefaultChannel: "#approvals",
		SlackPostInterval:   50 * time.Millisecond,
		IntakeMaxBodyBytes:  1 << 20,
		WorkerConcurrency:   2,
		JobLease:            time.Minute,
		JobMaxAttempts:      5,
		JobPollInterval:     20 * time.Millisecond,
		DefaultReviewers:    slices.Clone(bot.LocalDefaultReviewers),
		StoreRequestTimeout: guard,
	}
	cfg, err := cfg.WithTokens("agent:" + agentToken + ",other:" + otherToken)
	if err != nil {
		t.Fatal(err)
	}
	// Agent "other" may have one open request (INTAKE_MAX_OPEN_OVERRIDES).
	if cfg, err = cfg.WithLimits("120/m:60", "", 1000, "other:1"); err != nil {
		t.Fatal(err)
	}
	if cfg, err = cfg.WithDeciders("U0ALICE:"+aliceToken+",U0BOB:"+bobToken, nil); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	st, err := store.New(rdb, store.Options{Prefix: prefix, HomeJobs: true, OpenCounts: cfg.Limits().CapsOpen()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bot.NewService(bot.Deps{
		Metrics: bot.NewMetrics(reg), Registry: reg, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Store: st, Config: cfg,
		Slack:         slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client())),
		RateLimitHold: 200 * time.Millisecond, CommandBudget: guard,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.RunJobs(ctx) })
	t.Cleanup(func() {
		svc.Close()
		cancel()
		wg.Wait()
		srv.CloseClientConnections()
		srv.Close()
		_ = emu.Close()
	})
	return &testBot{t: t, url: srv.URL, close: svc.Close, logs: logs}
}

// client is the agent's Go client of this bot.
func (b *testBot) client() *client.Client {
	return client.New(b.url, agentToken, client.WithRetries(5, 10*time.Millisecond))
}

// decide calls a decision endpoint as a reviewer.
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

// waitStored waits until the request is stored (the MCP call submitted it).
func (b *testBot) waitStored(ctx context.Context, id string) {
	b.t.Helper()
	c := b.client()
	for {
		if _, err := c.Get(ctx, id); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("request %s never stored: %v", id, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
