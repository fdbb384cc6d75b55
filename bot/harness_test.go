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
	"github.com/approvalbot/approvalbot/slackout"
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
		SlackChat:     &slackout.ChatEndpoint{Client: httpClient, APIURL: emu.APIURL(), Token: emu.Token()},
		RateLimitHold: 200 * time.Millisecond,
		// Listings answer in the ack however loaded the machine is; the
		// slow path (response_url) is tested in handlers.
		CommandBudget: guard,
		// Every match of a new request against standing approvals
		// finishes, however loaded the machine is.
		GrantLookupBudget: guard,
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	st, err := store.New(rdb, store.Options{Prefix: prefix, Now: deps.Now, HomeJobs: true,
		NotifyJobs: cfg.NotifyRequester, OpenCounts: cfg.Limits().CapsOpen()})
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

// testLogger writes the service's warnings and errors to the test's output,
// which go test shows only for a failing test (or with -v); TEST_LOG=debug
// adds everything else. Nothing is written once the test has cleaned up.
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	w := &testOutput{w: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// testOutput is t.Output() until the test is over.
type testOutput struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (o *testOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	return o.w.Write(p)
}

func (o *testOutput) close() { o.mu.Lock(); o.closed = true; o.mu.Unlock() }

type response struct {
	Status int
	Body   []byte
	Header http.Header
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
	return response{Status: resp.StatusCode, Body: b, Header: resp.Header}
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

// waitIdle waits until the outbox has no in-flight job and none due within
// the next minute (retries; timers due later, deadlines and escalations, are
// not work in progress): every consequence of the requests so far has
// reached the emulator.
func (h *harness) waitIdle() {
	h.t.Helper()
	h.waitOutboxEmpty(time.Minute, guard)
}

// waitDrained waits until every job due now on the harness clock has run:
// after a clock jump, what the jump made due has happened, and what it did
// not has not.
func (h *harness) waitDrained() {
	h.t.Helper()
	h.waitOutboxEmpty(0, guard)
}

// waitOutboxEmpty polls until no job is in flight and none is due within
// horizon of the harness clock, on two snapshots in a row. giveUp only
// guards against a hung test: nothing here measures how fast the machine is.
//
// Each snapshot is one MULTI/EXEC over every shard's due and in-flight sets.
// Reading them one by one is not enough: a job claimed between the read of
// "due" and the read of "in flight" (or a job that schedules another in a
// shard already read, then acks) is missed, and the test goes on while its
// last job still runs. On Redis Cluster a MULTI holds one slot, so the
// snapshot is atomic per shard only; the second snapshot covers a job that
// ran and acked between shards.
func (h *harness) waitOutboxEmpty(horizon, giveUp time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(giveUp)
	for quiet := 0; quiet < 2; {
		due, inflight := h.outboxSnapshot(horizon)
		if due == 0 && inflight == 0 {
			quiet++
			continue
		}
		quiet = 0
		if time.Now().After(deadline) {
			h.t.Fatalf("outbox still busy after %v: %d due within %v, %d in flight", giveUp, due, horizon, inflight)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outboxSnapshot counts, in one transaction (on a Cluster, one per shard),
// the jobs due within horizon of the harness clock and the jobs in flight.
func (h *harness) outboxSnapshot(horizon time.Duration) (due, inflight int64) {
	h.t.Helper()
	until := strconv.FormatInt(h.now().Add(horizon).UnixMilli(), 10)
	var dues, inflights []*redis.IntCmd
	queue := func(p redis.Pipeliner, shard int) {
		slot := h.prefix + ":{s" + twoDigits(shard) + "}:jobs:"
		dues = append(dues, p.ZCount(context.Background(), slot+"due", "-inf", until))
		inflights = append(inflights, p.ZCard(context.Background(), slot+"inflight"))
	}
	var err error
	if _, cluster := h.rdb.(*redis.ClusterClient); cluster {
		for shard := range store.Shards { // a MULTI must stay within one slot
			if _, err = h.rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error { queue(p, shard); return nil }); err != nil {
				break
			}
		}
	} else {
		_, err = h.rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
			for shard := range store.Shards {
				queue(p, shard)
			}
			return nil
		})
	}
	if err != nil {
		h.t.Fatalf("outbox snapshot: %v", err)
	}
	for i := range dues {
		due += dues[i].Val()
		inflight += inflights[i].Val()
	}
	return due, inflight
}

// waitQueue polls the outbox until cond holds (see waitOutboxEmpty for
// waiting until it is empty).
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
	v, _, _ := sample(t, reg, name, labels)
	return v
}

// histogram is the sample count and sum of a histogram series in reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	_, n, sum := sample(t, reg, name, labels)
	return n, sum
}

// sample reads the first series of a metric in reg whose labels match
// labels, as a scrape does: a counter's or gauge's value, a histogram's
// sample count and sum.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (value float64, count uint64, sum float64) {
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
				return m.GetCounter().GetValue(), 0, 0
			}
			if h := m.GetHistogram(); h != nil {
				return 0, h.GetSampleCount(), h.GetSampleSum()
			}
			return m.GetGauge().GetValue(), 0, 0
		}
	}
	return 0, 0, 0
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
