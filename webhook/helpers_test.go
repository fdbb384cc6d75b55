package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Tokens of the two agents every test API accepts.
const (
	tokenPM    = "pm-token-0123456789abcdef"
	tokenOther = "other-token-0123456789abcdef"
)

// env is one test's real Redis, store and (on demand) API server.
type env struct {
	t      *testing.T
	rdb    redis.UniversalClient
	prefix string
	st     *store.Store
	secret string
	now    func() time.Time // the store's clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWithClock(t, time.Now)
}

// newEnvWithClock is newEnv whose store (and resolutions) read now.
func newEnvWithClock(t *testing.T, now func() time.Time) *env {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	st, err := store.New(rdb, store.Options{Prefix: prefix, Now: now, OpenCounts: true})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, rdb: rdb, prefix: prefix, st: st, secret: newSecret(t), now: now}
}

func newSecret(t *testing.T) string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// deliverer builds a Deliverer over the env's store. Unless edit says
// otherwise it allows private targets (the receivers listen on loopback) and
// uses the real, guarded transport.
func (e *env) deliverer(edit func(*webhook.DelivererOptions)) (*webhook.Deliverer, *prometheus.Registry) {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	opts := webhook.DelivererOptions{Store: e.st, Secret: e.secret, AllowPrivate: true, Registerer: reg,
		Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond,
			20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}}
	if edit != nil {
		edit(&opts)
	}
	d, err := webhook.NewDeliverer(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return d, reg
}

// noop acks the jobs these tests do not care about (the Slack post of every
// created request).
type noop struct{}

func (noop) Handle(context.Context, store.Job) error  { return nil }
func (noop) GaveUp(context.Context, store.Job, error) {}
func deliverJob(id string) store.Job {
	return store.Job{ID: store.JobID(store.JobDeliver, id), Kind: store.JobDeliver, RequestID: id, Attempt: 1}
}
func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runner starts a job runner (a "process") with the deliverer until the test
// ends; stop ends it early.
func (e *env) runner(d *webhook.Deliverer, lease time.Duration) (r *jobs.Runner, stop func()) {
	e.t.Helper()
	return e.runnerOn(e.st, d, lease, e.now)
}

// runnerOn is runner draining q, with due times on the clock now.
func (e *env) runnerOn(q jobs.Queue, d *webhook.Deliverer, lease time.Duration, now func() time.Time) (r *jobs.Runner, stop func()) {
	e.t.Helper()
	r, err := jobs.NewRunner(q, jobs.Options{
		Handlers:     map[string]jobs.Handler{store.JobDeliver: d, store.JobPost: noop{}, store.JobSync: noop{}},
		PollInterval: 10 * time.Millisecond, Lease: lease, Now: now,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	e.t.Cleanup(stop)
	return r, stop
}

// create stores a pending request of agent "pm".
func (e *env) create(id, responseURL string) store.Record {
	e.t.Helper()
	doc := fmt.Sprintf(`{"artifact":{"id":%q,"type":"decision/request"},"content":{"title":"Ship it?"}}`, id)
	rec, created, err := e.st.Create(context.Background(), store.NewRequest{ID: id, Agent: "pm",
		Document: json.RawMessage(doc), BodyHash: "hash-" + id, Channel: "#approvals", ResponseURL: responseURL})
	if err != nil || !created {
		e.t.Fatalf("create %s: created=%v err=%v", id, created, err)
	}
	return rec
}

// responseFor is a decision/response artifact for request id.
func responseFor(id string) []byte {
	return []byte(fmt.Sprintf(`{"artifact":{"id":"resp-%s","type":"decision/response"},"content":{"body":{"request_id":%q,`+
		`"answers":[{"decision_id":"go","value":true,"note":"<ok> & \u00e9"}]}}}`, id, id))
}

// resolve does what the resolution code does, in one Update: the response,
// the delivery state and webhook id, the deliver job, the audit entry.
func (e *env) resolve(id string, response []byte, webhookID string) store.Record {
	e.t.Helper()
	now := e.now()
	rec, err := e.st.Update(context.Background(), id, func(rec store.Record) (*store.Change, error) {
		if !rec.Status.Open() {
			return nil, store.ErrNotOpen
		}
		// A response_url schedules the delivery, with the webhook id.
		return &store.Change{Status: aah.StatusResolved, Bump: true,
			Resolution: &store.Resolution{Response: response, At: now, Deliver: rec.ResponseURL != "", WebhookID: webhookID},
			Audit:      []store.AuditEvent{{Event: "resolved", Actor: "human:U0REVIEWER", Data: map[string]any{"outcome": "approved"}}}}, nil
	})
	if err != nil {
		e.t.Fatalf("resolve %s: %v", id, err)
	}
	return rec
}

// waitFor waits until request id satisfies cond, woken by the store's change
// feed (with a slow re-check in case a notification is missed).
func (e *env) waitFor(id string, within time.Duration, cond func(store.Record) bool) store.Record {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	changes := e.st.SubscribeChanges(ctx, 1).Consumers[0]
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		rec, err := e.st.Get(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if cond(rec) {
			return rec
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("request %s: condition not met within %s; delivery = %+v", id, within, rec.Delivery)
		case <-changes:
		case <-tick.C:
		}
	}
}

func (e *env) waitDelivery(id, state string, within time.Duration) store.Record {
	e.t.Helper()
	return e.waitFor(id, within, func(r store.Record) bool { return r.Delivery.State == state })
}

// waitQueueEmpty waits until no job is due, in flight or scheduled later.
func (e *env) waitQueueEmpty() {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute) // a guard against a hung test only
	for {
		d, err := e.st.Depth(context.Background())
		mustNil(e.t, err)
		if d.Due == 0 && d.InFlight == 0 && e.scheduled() == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job queue still busy: %+v", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scheduled counts jobs in every shard's due set, including future ones.
func (e *env) scheduled() int64 {
	var n int64
	for shard := range store.Shards {
		c, err := e.rdb.ZCard(context.Background(), fmt.Sprintf("%s:{s%02d}:jobs:due", e.prefix, shard)).Result()
		mustNil(e.t, err)
		n += c
	}
	return n
}

// deliverScheduled reports whether request id has a deliver job due.
func (e *env) deliverScheduled(id string) bool {
	for shard := range store.Shards {
		_, err := e.rdb.ZScore(context.Background(), fmt.Sprintf("%s:{s%02d}:jobs:due", e.prefix, shard),
			store.JobID(store.JobDeliver, id)).Result()
		if err == nil {
			return true
		}
	}
	return false
}

// hit is one request a receiver got.
type hit struct {
	At     time.Time
	Header http.Header
	Body   []byte
	Path   string
}

// receiver is an agent's callback endpoint on loopback. respond answers the
// n-th request (1-based); nil answers 200.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	hits    []hit
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func newTLSReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.hits = append(rc.hits, hit{At: time.Now(), Header: r.Header.Clone(), Body: body, Path: r.URL.Path})
	n := len(rc.hits)
	respond := rc.respond
	rc.mu.Unlock()
	if respond != nil {
		respond(n, w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) setRespond(f func(n int, w http.ResponseWriter, r *http.Request)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.respond = f
}

// verifyIndependently checks a Standard Webhooks signature by hand, without
// the library: v1,base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>")), the key
// being the base64 after "whsec_".
func verifyIndependently(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no signature matches " + want)
}

// api serves the agent API over the env's store.
type api struct {
	*env
	srv *httptest.Server
}

func (e *env) api(edit func(*webhook.Options)) *api {
	e.t.Helper()
	tokens, err := webhook.ParseTokens("pm:" + tokenPM + ",other:" + tokenOther)
	mustNil(e.t, err)
	opts := webhook.Options{Store: e.st, Lifecycle: approval.New(e.st, approval.Options{Now: e.now}),
		Tokens: tokens, DefaultChannel: "#approvals"}
	if edit != nil {
		edit(&opts)
	}
	a, err := webhook.New(opts)
	mustNil(e.t, err)
	mux := http.NewServeMux()
	a.Register(mux)
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return &api{env: e, srv: srv}
}

type response struct {
	Status int
	Body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not JSON (%v): %s", err, r.Body)
	}
	return m
}

func (a *api) do(method, path, token string) response {
	a.t.Helper()
	r, err := a.doErr(context.Background(), method, path, token)
	mustNil(a.t, err)
	return r
}

// doErr is do for other goroutines: it reports instead of failing.
func (a *api) doErr(ctx context.Context, method, path, token string) (response, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.srv.URL+path, bytes.NewReader(nil))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b}, err
}

// metricValue reads one sample from a registry.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	mustNil(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
		}
	}
	return 0
}
