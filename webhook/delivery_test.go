package webhook_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The library's own test vector (libraries/go/webhook_test.go,
// TestWebhookSign), produced end to end by a delivery: same key, message id,
// timestamp and payload give byte for byte the same signature.
func TestSignatureMatchesLibraryTestVector(t *testing.T) {
	t.Parallel()
	const (
		secret   = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		msgID    = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	payload := []byte(`{"test": 2432232314}`)
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.secret = secret
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.Now = func() time.Time { return time.Unix(1614265330, 0) } })
	e.create("vector", rc.srv.URL+"/hook")
	e.resolve("vector", payload, msgID)
	mustNil(t, d.Handle(t.Context(), deliverJob("vector")))

	hits := rc.got()
	if len(hits) != 1 {
		t.Fatalf("%d deliveries, want 1", len(hits))
	}
	h := hits[0]
	if got := h.Header.Get("webhook-signature"); got != expected {
		t.Errorf("webhook-signature = %q, want the library's vector %q", got, expected)
	}
	if h.Header.Get("webhook-id") != msgID || h.Header.Get("webhook-timestamp") != "1614265330" {
		t.Errorf("webhook-id %q timestamp %q", h.Header.Get("webhook-id"), h.Header.Get("webhook-timestamp"))
	}
	if !bytes.Equal(h.Body, payload) {
		t.Errorf("body %q, want the stored bytes %q exactly", h.Body, payload)
	}
	if err := verifyIndependently(secret, h.Header, h.Body); err != nil {
		t.Errorf("hand-written verifier: %v", err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	mustNil(t, err)
	if err := wh.VerifyIgnoringTimestamp(h.Body, h.Header); err != nil {
		t.Errorf("library verifier: %v", err)
	}
}

// A receiver that fails five times gets the decision on the sixth attempt:
// every attempt carries the same webhook-id, a current timestamp, a signature
// both an independent verifier and the library accept, and exactly the
// stored response bytes. GET shows the six attempts.
func TestDeliveryRetriesUntilDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 5 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	d, reg := e.deliverer(nil)
	e.create("retry-6", rc.srv.URL+"/callback?agent=pm")
	resp := responseFor("retry-6")
	e.resolve("retry-6", resp, "msg_resp-retry-6")
	started := time.Now() // no attempt is signed before this
	e.runner(d, 0)
	rec := e.waitDelivery("retry-6", store.DeliveryDelivered, time.Minute)
	if rec.Delivery.Attempts != 6 || rec.Delivery.LastError != "" || rec.Delivery.DeliveredAt.IsZero() {
		t.Errorf("delivery = %+v, want delivered on attempt 6", rec.Delivery)
	}
	e.waitQueueEmpty()

	hits := rc.got()
	if len(hits) != 6 {
		t.Fatalf("receiver got %d requests, want 6", len(hits))
	}
	wh, err := standardwebhooks.NewWebhook(e.secret)
	mustNil(t, err)
	for i, h := range hits {
		if id := h.Header.Get("webhook-id"); id != "msg_resp-retry-6" {
			t.Errorf("attempt %d: webhook-id %q, want msg_resp-retry-6 on every retry", i+1, id)
		}
		ts, err := strconv.ParseInt(h.Header.Get("webhook-timestamp"), 10, 64)
		// Signed between the runner's start and the receipt (in whole
		// seconds), however long the way from one to the other took.
		if err != nil || ts < started.Unix() || ts > h.At.Unix() {
			t.Errorf("attempt %d: webhook-timestamp %q is not the time of the attempt (started %s, received %s)",
				i+1, h.Header.Get("webhook-timestamp"), started, h.At)
		}
		if err := verifyIndependently(e.secret, h.Header, h.Body); err != nil {
			t.Errorf("attempt %d: independent verifier: %v", i+1, err)
		}
		if err := wh.Verify(h.Body, h.Header); err != nil {
			t.Errorf("attempt %d: library Verify: %v", i+1, err)
		}
		if !bytes.Equal(h.Body, resp) {
			t.Errorf("attempt %d: body %q, want the stored response bytes %q", i+1, h.Body, resp)
		}
		if h.Header.Get("Content-Type") != "application/json" || h.Header.Get("User-Agent") != "approvalbot" {
			t.Errorf("attempt %d: Content-Type %q User-Agent %q", i+1, h.Header.Get("Content-Type"), h.Header.Get("User-Agent"))
		}
		if h.Path != "/callback" {
			t.Errorf("attempt %d: path %q", i+1, h.Path)
		}
	}

	attempts, err := e.st.Deliveries(t.Context(), "retry-6")
	mustNil(t, err)
	if len(attempts) != 6 {
		t.Fatalf("%d attempts recorded, want 6", len(attempts))
	}
	for i, a := range attempts {
		wantStatus, wantErr := http.StatusServiceUnavailable, "HTTP 503"
		if i == 5 {
			wantStatus, wantErr = http.StatusOK, ""
		}
		if a.N != i+1 || a.Status != wantStatus || a.Error != wantErr || a.URL != rc.srv.URL+"/callback?agent=pm" {
			t.Errorf("attempt %d = %+v", i+1, a)
		}
		if (i < 5) != (a.NextAttemptAt != nil) {
			t.Errorf("attempt %d: next_attempt_at %v", i+1, a.NextAttemptAt)
		}
		// The schedule counts from the start of the failed attempt (its
		// recorded time), plus up to 20% jitter, never less: measured
		// there, not at the receiver, whose receipt of the earlier attempt
		// may come late on a busy machine. Due times are whole ms.
		if i > 0 {
			if gap := a.At.Sub(attempts[i-1].At); gap < 20*time.Millisecond-time.Millisecond {
				t.Errorf("attempt %d began %s after the previous one; the schedule says at least 20ms", i+1, gap)
			}
			if prev := attempts[i-1].NextAttemptAt; prev != nil && a.At.Before(prev.Add(-time.Millisecond)) {
				t.Errorf("attempt %d began at %s, before the %s its predecessor scheduled", i+1, a.At, prev)
			}
		}
	}

	// GET shows the response artifact and the attempts.
	a := e.api(nil)
	got := a.do(http.MethodGet, "/v1/requests/retry-6", tokenPM).json(t)
	cb := got["callback"].(map[string]any)
	if cb["state"] != "delivered" || cb["webhook_id"] != "msg_resp-retry-6" || cb["url"] != rc.srv.URL+"/callback?agent=pm" ||
		cb["delivered_at"] == nil || cb["next_attempt_at"] != nil || cb["attempt_count"] != 6.0 {
		t.Errorf("callback = %v", cb)
	}
	if list := cb["attempts"].([]any); len(list) != 6 || list[0].(map[string]any)["error"] != "HTTP 503" ||
		list[5].(map[string]any)["status"] != 200.0 {
		t.Errorf("callback.attempts = %v", list)
	}
	if r := got["response"].(map[string]any); r["artifact"].(map[string]any)["id"] != "resp-retry-6" {
		t.Errorf("response = %v", r)
	}

	for outcome, want := range map[string]float64{"retry": 5, "delivered": 1, "dead": 0, "gone": 0, "refused": 0} {
		if v := metricValue(t, reg, "approvalbot_callback_deliveries_total", map[string]string{"outcome": outcome}); v != want {
			t.Errorf("deliveries_total{outcome=%q} = %v, want %v", outcome, v, want)
		}
	}
	if n := metricValue(t, reg, "approvalbot_callback_delivery_duration_seconds", nil); n != 6 {
		t.Errorf("delivery duration observed %v times, want 6", n)
	}
}

// 410 Gone stops the delivery at once; nothing is scheduled again.
func TestGoneIsNeverRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	d, reg := e.deliverer(nil)
	e.create("gone", rc.srv.URL)
	e.resolve("gone", responseFor("gone"), "msg_gone")
	mustNil(t, d.Handle(t.Context(), deliverJob("gone")))
	rec, err := e.st.Get(t.Context(), "gone")
	mustNil(t, err)
	if rec.Delivery.State != store.DeliveryGone || rec.Delivery.Attempts != 1 || rec.Delivery.LastError != "HTTP 410" {
		t.Errorf("delivery = %+v, want gone after 1 attempt", rec.Delivery)
	}
	// The resolution's own job is still due (Handle was called directly);
	// running it finds nothing left to do.
	mustNil(t, d.Handle(t.Context(), deliverJob("gone")))
	if n := len(rc.got()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	if v := metricValue(t, reg, "approvalbot_callback_deliveries_total", map[string]string{"outcome": "gone"}); v != 1 {
		t.Errorf("deliveries_total{gone} = %v", v)
	}
}

// A 3xx is a failed attempt; the redirect is never followed.
func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusFound)
	})
	d, _ := e.deliverer(nil)
	e.create("redirect", rc.srv.URL)
	e.resolve("redirect", responseFor("redirect"), "msg_redirect")
	mustNil(t, d.Handle(t.Context(), deliverJob("redirect")))
	rec, err := e.st.Get(t.Context(), "redirect")
	mustNil(t, err)
	if rec.Delivery.State != store.DeliveryRetrying || !strings.Contains(rec.Delivery.LastError, "HTTP 302") {
		t.Errorf("delivery = %+v, want a failed attempt (HTTP 302) to retry", rec.Delivery)
	}
	if n := len(target.got()); n != 0 {
		t.Errorf("the redirect target was hit %d times", n)
	}
	if !e.deliverScheduled("redirect") {
		t.Error("no retry scheduled")
	}
}

// Retry-After longer than the schedule's wait postpones the next attempt.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	d, _ := e.deliverer(nil)
	e.create("retry-after", rc.srv.URL)
	e.resolve("retry-after", responseFor("retry-after"), "msg_ra")
	e.runner(d, 0)
	e.waitDelivery("retry-after", store.DeliveryDelivered, time.Minute)
	attempts, err := e.st.Deliveries(t.Context(), "retry-after")
	mustNil(t, err)
	if len(attempts) != 2 || attempts[0].NextAttemptAt == nil {
		t.Fatalf("attempts = %+v", attempts)
	}
	if wait := attempts[0].NextAttemptAt.Sub(attempts[0].At); wait < time.Second {
		t.Errorf("next attempt scheduled %s after the first, want ≥ 1s (Retry-After: 1)", wait)
	}
	// Jobs are due to the millisecond.
	if gap := attempts[1].At.Sub(attempts[0].At); gap < time.Second-time.Millisecond {
		t.Errorf("second attempt came %s after the first, want ≥ 1s", gap)
	}
	hits := rc.got()
	if gap := hits[1].At.Sub(hits[0].At); gap < 990*time.Millisecond {
		t.Errorf("the receiver saw the retry %s after the 429", gap)
	}
}

// Retry-After counts from the answer, so an agent that took 700 ms to say
// "429, Retry-After: 1" is not asked again 300 ms later.
func TestRetryAfterCountsFromTheAnswer(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	got := webhook.NextAttemptAfter429(time.Millisecond, start, 700*time.Millisecond, "1")
	if want := start.Add(1700 * time.Millisecond); got.Before(want) {
		t.Errorf("next attempt at +%s, want ≥ +%s (answer at +700ms, Retry-After: 1)", got.Sub(start), want.Sub(start))
	}
	// A schedule step longer than Retry-After still governs.
	got = webhook.NextAttemptAfter429(time.Minute, start, 700*time.Millisecond, "1")
	if got.Sub(start) < 50*time.Second {
		t.Errorf("next attempt at +%s, want the schedule's minute (jittered)", got.Sub(start))
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"1": time.Second, " 120 ": 2 * time.Minute, "0": 0, "999999999999": 24 * time.Hour,
		"Mon, 16 Feb 2026 10:00:30 GMT": 30 * time.Second, "Mon, 16 Feb 2026 09:00:00 GMT": 0,
		"Wed, 18 Feb 2026 10:00:00 GMT": 24 * time.Hour,
	} {
		if got, ok := webhook.ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("Retry-After %q = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-1", "soon", "1.5"} {
		if got, ok := webhook.ParseRetryAfter(in, now); ok {
			t.Errorf("Retry-After %q accepted as %s", in, got)
		}
	}
}

func TestDefaultScheduleSpansADay(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for _, d := range webhook.DefaultDeliverySchedule {
		total += d
	}
	if n := len(webhook.DefaultDeliverySchedule) + 1; total < 24*time.Hour || n != 11 {
		t.Errorf("default schedule: %d attempts over %s, want 11 over at least 24h", n, total)
	}
	// Jitter only lengthens a delay, so the retries always span the total.
	for range 1000 {
		if j := webhook.Jitter(time.Minute); j < time.Minute || j > 72*time.Second {
			t.Fatalf("jitter(1m) = %s, want from 1m to 1m12s", j)
		}
	}
}

// When the schedule runs out the delivery is dead and dead-lettered; a
// redelivery then delivers it, with the same webhook-id.
func TestExhaustedScheduleIsDeadThenRedelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	d, reg := e.deliverer(func(o *webhook.DelivererOptions) {
		o.Schedule = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}
	})
	e.create("dead", rc.srv.URL)
	e.resolve("dead", responseFor("dead"), "msg_resp-dead")
	runner, _ := e.runner(d, 0)
	rec := e.waitDelivery("dead", store.DeliveryDead, time.Minute)
	if rec.Delivery.Attempts != 3 || rec.Delivery.LastError != "HTTP 500" {
		t.Errorf("delivery = %+v, want dead after 3 attempts", rec.Delivery)
	}
	e.waitQueueEmpty()
	var dead []store.DeadJob
	for shard := range store.Shards {
		jobs, err := e.st.DeadJobs(t.Context(), shard)
		mustNil(t, err)
		for _, j := range jobs {
			if j.ID == store.JobID(store.JobDeliver, "dead") {
				dead = append(dead, j)
			}
		}
	}
	if len(dead) != 1 || dead[0].Attempts != 3 || dead[0].Error != "HTTP 500" {
		t.Errorf("dead-letter entries = %+v, want one for deliver:dead", dead)
	}
	if v := metricValue(t, reg, "approvalbot_callback_deliveries_total", map[string]string{"outcome": "dead"}); v != 1 {
		t.Errorf("deliveries_total{dead} = %v", v)
	}

	// The agent fixes its endpoint and asks again.
	rc.setRespond(nil)
	a := e.api(func(o *webhook.Options) { o.Jobs = runner })
	if r := a.do(http.MethodPost, "/v1/requests/dead/redeliver", tokenPM); r.Status != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	rec = e.waitDelivery("dead", store.DeliveryDelivered, time.Minute)
	if rec.Delivery.Attempts != 4 {
		t.Errorf("delivered on attempt %d, want 4 (attempt numbers continue)", rec.Delivery.Attempts)
	}
	hits := rc.got()
	if len(hits) != 4 {
		t.Fatalf("%d requests, want 4", len(hits))
	}
	for _, h := range hits {
		if h.Header.Get("webhook-id") != "msg_resp-dead" {
			t.Errorf("webhook-id %q changed", h.Header.Get("webhook-id"))
		}
	}
	if err := verifyIndependently(e.secret, hits[3].Header, hits[3].Body); err != nil {
		t.Error(err)
	}
}

// An attempt that outlasts Timeout fails as "timeout" and is retried.
// The receiver answers only after a minute, so an attempt that was not cut
// off at its 100ms would end delivered, not timed out, however fast the
// machine is.
func TestSlowReceiverTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.Timeout = 100 * time.Millisecond })
	e.create("slow", rc.srv.URL)
	e.resolve("slow", responseFor("slow"), "msg_slow")
	mustNil(t, d.Handle(t.Context(), deliverJob("slow")))
	rec, err := e.st.Get(t.Context(), "slow")
	mustNil(t, err)
	if rec.Delivery.State != store.DeliveryRetrying || rec.Delivery.LastError != "timeout" {
		t.Errorf("delivery = %+v, want retrying after a timeout", rec.Delivery)
	}
}

// A process that resolved requests and died before delivering loses
// nothing: a fresh runner delivers each once.
func TestCrashBetweenResolutionAndDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	for _, id := range []string{"crash-a", "crash-b"} {
		e.create(id, rc.srv.URL+"/"+id)
		e.resolve(id, responseFor(id), "msg_"+id) // no deliverer ever runs in this "process"
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("delivered %d before any runner started", n)
	}
	d, _ := e.deliverer(nil)
	e.runner(d, 0)
	for _, id := range []string{"crash-a", "crash-b"} {
		e.waitDelivery(id, store.DeliveryDelivered, time.Minute)
	}
	e.waitQueueEmpty()
	perPath := map[string]int{}
	for _, h := range rc.got() {
		perPath[h.Path]++
	}
	if perPath["/crash-a"] != 1 || perPath["/crash-b"] != 1 || len(perPath) != 2 {
		t.Errorf("deliveries per request = %v, want one each", perPath)
	}
}

// A worker that claimed the deliver job and died holds its lease; once the
// lease runs out another runner delivers, once.
//
// The lease runs out on the store's injected clock, so the machine's speed
// decides nothing: the live runner sweeps every shard while the dead
// worker's lease holds (and delivers nothing), then the clock passes the
// lease and it delivers. Its own lease is long enough never to be overrun.
func TestCrashWhileHoldingTheDeliverJob(t *testing.T) {
	t.Parallel()
	clk := &manualClock{now: time.Now()}
	e := newEnvWithClock(t, clk.Now)
	rc := newReceiver(t, nil)
	e.create("held", rc.srv.URL)
	e.resolve("held", responseFor("held"), "msg_held")
	// A worker claims the jobs (the Slack post and the delivery) and dies.
	var stale []store.Job
	const lease = time.Minute
	for shard := range store.Shards {
		jobs, err := e.st.Claim(t.Context(), shard, 10, lease)
		mustNil(t, err)
		for _, j := range jobs {
			if j.Kind == store.JobDeliver {
				stale = append(stale, j)
			}
		}
	}
	if len(stale) != 1 {
		t.Fatalf("claimed %d deliver jobs, want 1", len(stale))
	}
	d, _ := e.deliverer(nil)
	claims := &countingQueue{Queue: e.st, more: make(chan struct{}, 1)}
	e.runnerOn(claims, d, 10*time.Minute, clk.Now)
	// Two full sweeps of the shards: the live runner has looked at the
	// delivery's shard at least once since the dead worker claimed it.
	guard := time.After(time.Minute)
	for claims.n.Load() < 2*store.Shards {
		select {
		case <-claims.more:
		case <-guard:
			t.Fatal("the live runner stopped claiming")
		}
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("delivered %d times before the dead worker's lease ran out", n)
	}
	clk.Advance(lease + time.Second)
	e.waitDelivery("held", store.DeliveryDelivered, time.Minute)
	e.waitQueueEmpty()
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
	if err := e.st.Ack(context.Background(), stale[0]); err == nil {
		t.Error("the dead worker's stale lease could still ack the job")
	}
}

// countingQueue counts Claims (and signals more after each), so a test can
// tell that a runner has swept the shards.
type countingQueue struct {
	jobs.Queue
	n    atomic.Int64
	more chan struct{}
}

func (q *countingQueue) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error) {
	jobs, err := q.Queue.Claim(ctx, shard, max, lease)
	q.n.Add(1)
	select {
	case q.more <- struct{}{}:
	default:
	}
	return jobs, err
}

// manualClock is a store clock that only moves when the test says.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestNewDelivererValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, opts := range map[string]webhook.DelivererOptions{
		"no store":      {Secret: e.secret},
		"no secret":     {Store: e.st},
		"bad secret":    {Store: e.st, Secret: "whsec_not base64!"},
		"empty secret":  {Store: e.st, Secret: "whsec_"},
		"zero wait":     {Store: e.st, Secret: e.secret, Schedule: []time.Duration{time.Second, 0}},
		"negative wait": {Store: e.st, Secret: e.secret, Schedule: []time.Duration{-time.Second}},
	} {
		if _, err := webhook.NewDeliverer(opts); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "not base64!") {
			t.Errorf("%s: the error echoes the secret: %v", name, err)
		}
	}
}

// Nothing to do: no response yet, no response_url, already delivered, or
// the request is gone.
func TestHandleWithNothingToDeliver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	d, _ := e.deliverer(nil)
	e.create("open", rc.srv.URL)
	e.create("polls", "")
	e.resolve("polls", responseFor("polls"), "msg_polls")
	for _, id := range []string{"open", "polls", "missing"} {
		if err := d.Handle(t.Context(), deliverJob(id)); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	e.create("twice", rc.srv.URL)
	e.resolve("twice", responseFor("twice"), "msg_twice")
	mustNil(t, d.Handle(t.Context(), deliverJob("twice")))
	mustNil(t, d.Handle(t.Context(), deliverJob("twice")))
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d deliveries, want 1 (only \"twice\", once)", n)
	}
}

// A runner shutting down mid attempt records nothing: the job runs again
// later as the same attempt.
func TestShutdownMidAttemptRecordsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	arrived := make(chan struct{}, 1)
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	d, _ := e.deliverer(nil)
	e.create("shutdown", rc.srv.URL)
	e.resolve("shutdown", responseFor("shutdown"), "msg_shutdown")
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-arrived; cancel() }()
	if err := d.Handle(ctx, deliverJob("shutdown")); err == nil {
		t.Error("an abandoned attempt was acked")
	}
	rec, err := e.st.Get(t.Context(), "shutdown")
	mustNil(t, err)
	attempts, err := e.st.Deliveries(t.Context(), "shutdown")
	mustNil(t, err)
	if rec.Delivery.State != store.DeliveryPending || rec.Delivery.Attempts != 0 || len(attempts) != 0 {
		t.Errorf("delivery = %+v, attempts = %+v: an abandoned attempt was recorded", rec.Delivery, attempts)
	}
}

// An agent with its own callback secret (CALLBACK_SECRETS) gets its
// deliveries signed with it, not with CALLBACK_SECRET: an agent holding
// only the shared secret cannot sign, so cannot forge, what it verifies.
// Agents without one are signed for with CALLBACK_SECRET.
func TestDeliveriesAreSignedWithTheAgentsOwnSecret(t *testing.T) {
	t.Parallel()
	own := "whsec_" + base64.StdEncoding.EncodeToString([]byte("pm's own key, 32 bytes long.."))
	for name, tc := range map[string]struct {
		secrets map[string]string
		want    func(e *env) string
	}{
		"its own":         {map[string]string{"pm": own}, func(*env) string { return own }},
		"another agent's": {map[string]string{"other": own}, func(e *env) string { return e.secret }},
		"none of its own": {nil, func(e *env) string { return e.secret }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.AgentSecrets = tc.secrets })
			e.create("own-key", rc.srv.URL+"/callback")
			e.resolve("own-key", responseFor("own-key"), "msg_resp-own-key")
			e.runner(d, 0)
			e.waitDelivery("own-key", store.DeliveryDelivered, time.Minute)
			hits := rc.got()
			if len(hits) != 1 {
				t.Fatalf("receiver got %d requests, want 1", len(hits))
			}
			want := tc.want(e)
			if err := verifyIndependently(want, hits[0].Header, hits[0].Body); err != nil {
				t.Errorf("not signed with the expected secret: %v", err)
			}
			for _, other := range []string{e.secret, own} {
				if other != want && verifyIndependently(other, hits[0].Header, hits[0].Body) == nil {
					t.Errorf("also verifies with a secret it must not be signed with")
				}
			}
		})
	}
	e := newEnv(t)
	if _, err := webhook.NewDeliverer(webhook.DelivererOptions{Store: e.st, Secret: e.secret,
		AgentSecrets: map[string]string{"pm": "whsec_not base64!"}}); err == nil || strings.Contains(err.Error(), "not base64!") {
		t.Errorf("a bad agent secret: %v; want refused without echoing it", err)
	}
}
