package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/examples"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// testCallbackSecret signs the decision responses the tests receive.
const testCallbackSecret = "whsec_dGVzdC1jYWxsYmFjay1zZWNyZXQtMDEyMzQ1Njc4OQ=="

// guard is how long a test waits for something that must happen before it
// gives up. It only stops a hung test: no test measures the machine's speed
// with it, so it can be generous for a saturated CI machine.
const guard = time.Minute

// Tokens of the two agents every harness accepts.
const (
	tokenPM    = "pm-token-0123456789abcdef"
	tokenOther = "other-token-0123456789abcdef"
)

// harness is one approvalbot over real Redis and the Slack emulator.
type harness struct {
	t      testing.TB
	emu    *slackemu.Server
	rdb    redis.UniversalClient
	prefix string
	store  *store.Store
	svc    *bot.Service
	http   *httptest.Server
	reg    *prometheus.Registry
	cfg    bot.Config
	now    func() time.Time // the store's clock
}

type harnessOption func(*configT, *depsT)

// newHarness builds a service. Its job runner is not started: call
// startJobs, so tests can also play a process that crashed before posting.
func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	return newHarnessOn(t, rdb, prefix, emu, opts...)
}

// newHarnessOn builds another process over the same Redis and emulator.
func newHarnessOn(t testing.TB, rdb redis.UniversalClient, prefix string, emu *slackemu.Server, opts ...harnessOption) *harness {
	t.Helper()
	cfg := bot.Config{
		SlackBotToken:        emu.Token(),
		SlackSigningSecret:   "test-signing-secret",
		CallbackSecret:       testCallbackSecret,
		CallbackAllowPrivate: true, // the tests' agents listen on loopback
		SlackDefaultChannel:  "#approvals",
		SlackPostInterval:    50 * time.Millisecond,
		IntakeMaxBodyBytes:   1 << 20,
		WorkerConcurrency:    4,
		// Long enough that no slow machine overruns a lease mid-job (the
		// crash tests expire leases on an injected clock instead).
		JobLease:        time.Minute,
		JobMaxAttempts:  5,
		JobPollInterval: 20 * time.Millisecond,
		// Who decides requests that name nobody, as in local mode: without
		// anyone, intake refuses them.
		DefaultReviewers: slices.Clone(bot.LocalDefaultReviewers),
		// No request fails its deadline however loaded the machine is;
		// the brownout tests shorten it.
		StoreRequestTimeout: guard,
	}
	cfg, err := cfg.WithTokens("pm:" + tokenPM + ",other:" + tokenOther)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := bot.NewMetrics(reg)
	httpClient := emu.Client()
	httpClient.Transport = metrics.InstrumentTransport(httpClient.Transport)
	deps := bot.Deps{
		Metrics: metrics, Registry: reg, Logger: testLogger(t),
		Slack:         slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(httpClient)),
		RateLimitHold: 200 * time.Millisecond,
		// Listings answer in the ack however loaded the machine is; the
		// slow path (response_url) is tested in handlers.
		CommandBudget: guard,
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	st, err := store.New(rdb, store.Options{Prefix: prefix, Now: deps.Now, HomeJobs: true})
	if err != nil {
		t.Fatal(err)
	}
	deps.Store, deps.Config = st, cfg
	svc, err := bot.NewService(deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Close)
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &harness{t: t, emu: emu, rdb: rdb, prefix: prefix, store: st, svc: svc, http: srv, reg: reg, cfg: cfg, now: now}
}

// startJobs runs the job runner until the test ends (or stop is called).
func (h *harness) startJobs() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = h.svc.RunJobs(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	h.t.Cleanup(stop)
	return stop
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type response struct {
	Status int
	Body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not JSON (%v): %s", err, r.Body)
	}
	return m
}

func (h *harness) do(method, path, token, contentType string, body []byte) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b}
}

func (h *harness) post(body []byte) response {
	return h.do(http.MethodPost, "/v1/requests", tokenPM, "application/json", body)
}

func (h *harness) get(id string) map[string]any {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/requests/"+id, tokenPM, "", nil)
	if r.Status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", id, r.Status, r.Body)
	}
	return r.json(h.t)
}

// waitIdle waits until the outbox has no due or in-flight job, which is when
// every consequence of the requests so far has reached the emulator.
func (h *harness) waitIdle() {
	h.t.Helper()
	h.waitQueue(func(d store.QueueDepth) bool { return d.Due == 0 && d.InFlight == 0 && !h.scheduledLater() })
}

// waitDrained waits until every job due now on the harness clock has run:
// after a clock jump, what the jump made due has happened, and what it did
// not has not.
func (h *harness) waitDrained() {
	h.t.Helper()
	h.waitQueue(func(d store.QueueDepth) bool { return d.Due == 0 && d.InFlight == 0 })
}

// waitQueue polls the outbox until cond holds. The minute it allows is only a
// guard against a hung test: nothing here measures how fast the machine is.
func (h *harness) waitQueue(cond func(store.QueueDepth) bool) {
	h.t.Helper()
	giveUp := time.Now().Add(guard)
	for {
		d, err := h.store.Depth(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		if cond(d) {
			return
		}
		if time.Now().After(giveUp) {
			h.t.Fatalf("outbox never reached the expected state: %+v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scheduledLater reports jobs due within the next minute (retries), which
// Depth's "due now" count leaves out; timers due later (deadlines,
// escalations) are not work in progress.
func (h *harness) scheduledLater() bool {
	soon := strconv.FormatInt(h.now().Add(time.Minute).UnixMilli(), 10)
	for shard := range store.Shards {
		key := h.prefix + ":{s" + twoDigits(shard) + "}:jobs:due"
		if n, _ := h.rdb.ZCount(context.Background(), key, "-inf", soon).Result(); n > 0 {
			return true
		}
	}
	return false
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// exampleNow is when the test binary started: every example(t) of a run is
// the same document, as resubmissions of one request must be.
var exampleNow = time.Now()

// example is examples/marketing-strategy.json, seed 000's example request,
// with its dates moved to now as the README's recipe moves them, so the
// tests keep passing after the file's own deadline has passed.
func example(t testing.TB) []byte {
	t.Helper()
	b, err := examples.Request(exampleNow, examples.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleWith returns the example with its id replaced and edits applied to
// the decoded document.
func exampleWith(t testing.TB, id string, edit func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(example(t), &doc); err != nil {
		t.Fatal(err)
	}
	doc["artifact"].(map[string]any)["id"] = id
	if edit != nil {
		edit(doc)
	}
	b, _ := json.Marshal(doc)
	return b
}

func setChannel(channel string) func(map[string]any) {
	return func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"channel": channel}}
	}
}

func postCalls(emu *slackemu.Server) (ok, failed int) {
	for _, c := range emu.CallsTo("chat.postMessage") {
		if c.Status == http.StatusOK && c.Error == "" {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Short names for harness options.
type (
	configT = bot.Config
	depsT   = bot.Deps
)

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// fakeClock is the clock of a harness whose timers a test drives: the store,
// intake, decisions and the runner all read it. It runs like real time
// (pacing and retries keep working) and a test jumps it forward with Set.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.offset)
}

// Set jumps the clock forward to t.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := time.Until(t); d > c.offset {
		c.offset = d
	}
}

func withClock(c *fakeClock) harnessOption {
	return func(_ *configT, d *depsT) { d.Now = c.Now }
}
