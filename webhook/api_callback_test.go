package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/approvalbot/approvalbot/webhook"
)

// longPollAPI is an API whose long polls are woken by one change feed.
func (e *env) longPollAPI() (*api, *webhook.Waiters) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	w := webhook.NewWaiters(e.st.SubscribeChanges(ctx, 1).Consumers[0])
	return e.api(func(o *webhook.Options) { o.Waiters = w }), w
}

// waitWaiters waits until n long polls are registered.
func waitWaiters(t *testing.T, w *webhook.Waiters, n int) {
	t.Helper()
	guard := time.Now().Add(time.Minute)
	for w.Len() != n {
		if time.Now().After(guard) {
			t.Fatalf("%d waiters registered, want %d", w.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A long poll returns as soon as another goroutine resolves the request,
// with the response artifact.
func TestLongPollReturnsOnResolution(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, w := e.longPollAPI()
	e.create("lp-resolve", "")
	type result struct {
		r    response
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r, err := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-resolve?wait=30s", tokenPM)
		done <- result{r, err, time.Since(start)}
	}()
	waitWaiters(t, w, 1)
	e.resolve("lp-resolve", responseFor("lp-resolve"), "")
	select {
	case res := <-done:
		mustNil(t, res.err)
		got := res.r.json(t)
		if res.r.Status != http.StatusOK || got["status"] != "resolved" {
			t.Fatalf("long poll: %d %s", res.r.Status, res.r.Body)
		}
		if got["response"].(map[string]any)["artifact"].(map[string]any)["id"] != "resp-lp-resolve" {
			t.Errorf("response = %v", got["response"])
		}
		if got["callback"] != nil {
			t.Errorf("callback = %v for a request without response_url", got["callback"])
		}
		// Answering before its 30s wait ran out, it was woken, not timed out.
		if res.took >= 30*time.Second {
			t.Errorf("long poll took %s: it sat out its wait", res.took)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long poll did not return after the request resolved")
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d waiters left registered", n)
	}
}

// Without a change the long poll answers after the wait, with the pending
// state; a partial change wakes it without ending it; a closed request
// answers at once.
func TestLongPollTimesOutWithCurrentState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, w := e.longPollAPI()
	e.create("lp-idle", "")
	start := time.Now()
	r := a.do(http.MethodGet, "/v1/requests/lp-idle?wait=300ms", tokenPM)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("wait=300ms answered after %s", took)
	}
	if r.Status != http.StatusOK || r.json(t)["status"] != "pending" {
		t.Errorf("%d %s, want the pending request", r.Status, r.Body)
	}

	// A change that leaves the request open wakes the waiter, which waits on.
	done := make(chan response, 1)
	start = time.Now()
	go func() {
		r, _ := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-idle?wait=400ms", tokenPM)
		done <- r
	}()
	waitWaiters(t, w, 1)
	_, err := e.st.Update(t.Context(), "lp-idle", func(store.Record) (*store.Change, error) {
		return &store.Change{Bump: true}, nil // a change the message shows; the request stays open
	})
	mustNil(t, err)
	if r := <-done; r.json(t)["status"] != "pending" {
		t.Errorf("woken by a change that kept it open: %s", r.Body)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("a change that kept the request open ended the wait after %s", took)
	}

	// Closed already: no wait at all.
	e.resolve("lp-idle", responseFor("lp-idle"), "")
	start = time.Now()
	if r := a.do(http.MethodGet, "/v1/requests/lp-idle?wait=60s", tokenPM); r.json(t)["status"] != "resolved" {
		t.Errorf("%s", r.Body)
	}
	if took := time.Since(start); took >= 60*time.Second {
		t.Errorf("a resolved request was held %s, its whole wait", took)
	}
	// Withdrawn also ends a wait.
	e.create("lp-withdraw", "")
	done2 := make(chan response, 1)
	go func() {
		r, _ := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-withdraw?wait=30s", tokenPM)
		done2 <- r
	}()
	waitWaiters(t, w, 1)
	if r := a.do(http.MethodDelete, "/v1/requests/lp-withdraw", tokenPM); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	select {
	case r := <-done2:
		if r.json(t)["status"] != "withdrawn" {
			t.Errorf("%s", r.Body)
		}
	case <-time.After(time.Minute): // the wait is 30s
		t.Fatal("withdrawal did not end the long poll")
	}
}

// 200 agents long-polling one request share the process's one Redis
// subscription, and all of them get the resolution.
func TestManyLongPollsShareOneSubscription(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, w := e.longPollAPI()
	e.create("lp-many", "")
	const n = 200
	var wg sync.WaitGroup
	results := make(chan response, n)
	for range n {
		wg.Go(func() {
			r, err := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-many?wait=30s", tokenPM)
			if err != nil {
				t.Errorf("long poll: %v", err)
			}
			results <- r
		})
	}
	waitWaiters(t, w, n)
	if subs := redistest.NumSub(t, e.rdb, e.prefix+":changes"); subs != 1 {
		t.Errorf("%d subscriptions to the change feed for %d waiters, want 1", subs, n)
	}
	start := time.Now()
	e.resolve("lp-many", responseFor("lp-many"), "")
	wg.Wait()
	close(results)
	if took := time.Since(start); took >= 30*time.Second {
		t.Errorf("waiters took %s to return: they sat out their wait", took)
	}
	count := 0
	for r := range results {
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"status":"resolved"`) {
			t.Errorf("a waiter got %d %s", r.Status, r.Body)
			break
		}
		count++
	}
	if count != n {
		t.Errorf("%d waiters returned resolved, want %d", count, n)
	}
}

func TestLongPollBadWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _ := e.longPollAPI()
	e.create("lp-bad", "")
	for _, wait := range []string{"soon", "-1s", "61s", "2m", "61", "1h"} {
		r := a.do(http.MethodGet, "/v1/requests/lp-bad?wait="+wait, tokenPM)
		if r.Status != http.StatusBadRequest {
			t.Errorf("wait=%s: %d, want 400", wait, r.Status)
			continue
		}
		details, _ := r.json(t)["details"].([]any)
		if len(details) != 1 || details[0].(map[string]any)["field"] != "wait" {
			t.Errorf("wait=%s: %s, want a problem with field wait", wait, r.Body)
		}
	}
	for _, wait := range []string{"0", "0s", "100ms"} {
		if r := a.do(http.MethodGet, "/v1/requests/lp-bad?wait="+wait, tokenPM); r.Status != http.StatusOK {
			t.Errorf("wait=%s: %d %s", wait, r.Status, r.Body)
		}
	}
	e.resolve("lp-bad", responseFor("lp-bad"), "") // closed: valid waits answer at once
	for _, wait := range []string{"1", "60", "60s", "1m"} {
		if r := a.do(http.MethodGet, "/v1/requests/lp-bad?wait="+wait, tokenPM); r.Status != http.StatusOK {
			t.Errorf("wait=%s: %d %s", wait, r.Status, r.Body)
		}
	}
	// Without Waiters, wait is ignored.
	plain := e.api(nil)
	e.create("lp-plain", "")
	start := time.Now()
	if r := plain.do(http.MethodGet, "/v1/requests/lp-plain?wait=60s", tokenPM); r.Status != http.StatusOK {
		t.Errorf("%d %s", r.Status, r.Body)
	}
	if took := time.Since(start); took >= 60*time.Second {
		t.Errorf("wait without Waiters held the request %s, the whole wait", took)
	}
}

// When the change feed ends (shutdown), waiting polls are released at once.
func TestWaitersReleaseOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	changes := make(chan string)
	w := webhook.NewWaiters(changes)
	a := e.api(func(o *webhook.Options) { o.Waiters = w })
	e.create("lp-shutdown", "")
	done := make(chan response, 1)
	go func() {
		r, _ := a.doErr(context.Background(), http.MethodGet, "/v1/requests/lp-shutdown?wait=60s", tokenPM)
		done <- r
	}()
	waitWaiters(t, w, 1)
	close(changes)
	select {
	case r := <-done:
		if r.Status != http.StatusOK || r.json(t)["status"] != "pending" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	case <-time.After(time.Minute): // its wait
		t.Fatal("the long poll was not released")
	}
	<-w.Done()
	start := time.Now()
	a.do(http.MethodGet, "/v1/requests/lp-shutdown?wait=60s", tokenPM)
	if took := time.Since(start); took >= 60*time.Second {
		t.Errorf("a long poll after shutdown waited %s, its whole wait", took)
	}
}

// auditView is the body of GET /v1/requests/{id}/audit.
type auditView struct {
	Entries  []store.AuditEntry `json:"entries"`
	Verified bool               `json:"verified"`
	Problem  string             `json:"problem"`
	BrokenAt int64              `json:"broken_at"`
}

// auditOf GETs a request's audit as agent "pm".
func (a *api) auditOf(id string) (response, auditView) {
	a.t.Helper()
	r := a.do(http.MethodGet, "/v1/requests/"+id+"/audit", tokenPM)
	var v auditView
	mustNil(a.t, json.Unmarshal(r.Body, &v))
	return r, v
}

// auditKey is the Redis key of a request's audit chain.
func (e *env) auditKey(id string) string {
	e.t.Helper()
	// redistest.Keys asks every master of a Cluster, not one node.
	keys := redistest.Keys(e.t, e.rdb, e.prefix+":*:audit:"+id)
	if len(keys) != 1 {
		e.t.Fatalf("audit keys %v", keys)
	}
	return keys[0]
}

// The audit endpoint returns the request's chain, verified; an entry edited
// in Redis is detected and named.
func TestAuditEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.api(nil)
	e.create("audited", "https://agent.example.com/hook")
	e.resolve("audited", responseFor("audited"), "msg_audited")
	if _, err := e.st.Redeliver(t.Context(), "audited", "agent:pm"); err != nil {
		t.Fatal(err)
	}
	if r := a.do(http.MethodGet, "/v1/requests/audited/audit", tokenOther); r.Status != http.StatusForbidden {
		t.Errorf("another agent: %d", r.Status)
	}
	if r := a.do(http.MethodGet, "/v1/requests/nope/audit", tokenPM); r.Status != http.StatusNotFound {
		t.Errorf("unknown id: %d", r.Status)
	}
	r, got := a.auditOf("audited")
	var events []string
	for _, en := range got.Entries {
		events = append(events, en.Event)
	}
	if r.Status != http.StatusOK || !got.Verified || got.Problem != "" ||
		strings.Join(events, ",") != "requested,resolved,redelivery_requested" {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}

	// Tamper with the second entry.
	key := e.auditKey("audited")
	raw, err := e.rdb.LIndex(t.Context(), key, 1).Result()
	mustNil(t, err)
	var entry map[string]any
	mustNil(t, json.Unmarshal([]byte(raw), &entry))
	actor := "actor"
	if _, compact := entry["a"]; compact { // the store's compact form (store/auditcompact.go)
		actor = "a"
	}
	entry[actor] = "human:U0SOMEONEELSE"
	forged, _ := json.Marshal(entry)
	mustNil(t, e.rdb.LSet(t.Context(), key, 1, forged).Err())

	r, got = a.auditOf("audited")
	if r.Status != http.StatusOK || got.Verified || got.BrokenAt != 2 || !strings.Contains(got.Problem, "entry 2") {
		t.Errorf("after tampering: %d %s, want verified=false naming entry 2", r.Status, r.Body)
	}
	if len(got.Entries) != 3 || got.Entries[1].Actor != "human:U0SOMEONEELSE" {
		t.Errorf("entries = %+v", got.Entries)
	}
}

// Entries removed from the end of a request's chain leave a chain whose
// every hash still verifies; the endpoint checks the chain ends at the head
// the request records, as "approvalbot audit verify" does, and says so.
func TestAuditEndpointNoticesEntriesRemovedFromTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.api(nil)
	e.create("truncated", "https://agent.example.com/hook")
	e.resolve("truncated", responseFor("truncated"), "msg_truncated")
	mustNil(t, e.rdb.RPop(t.Context(), e.auditKey("truncated")).Err()) // drop "resolved"

	r, got := a.auditOf("truncated")
	if r.Status != http.StatusOK || got.Verified || got.BrokenAt != 2 || !strings.Contains(got.Problem, "removed from its end") {
		t.Errorf("after removing the last entry: %d %s, want verified=false, broken at 2, saying entries were removed", r.Status, r.Body)
	}
	if len(got.Entries) != 1 {
		t.Errorf("entries = %+v, want the one left", got.Entries)
	}
}

type wakeCounter struct {
	mu sync.Mutex
	n  int
}

func (w *wakeCounter) Wake() { w.mu.Lock(); w.n++; w.mu.Unlock() }

func (w *wakeCounter) WakeFor(string) { w.Wake() }

func (w *wakeCounter) count() int { w.mu.Lock(); defer w.mu.Unlock(); return w.n }

// Redelivery: only the owner; 409 until there is a decision to deliver; 202
// with the request view once there is, the delivery pending again and the
// job runner woken.
func TestRedeliverEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wake := &wakeCounter{}
	a := e.api(func(o *webhook.Options) { o.Jobs = wake })
	e.create("redeliver", "https://agent.example.com/hook")
	e.create("redeliver-polls", "")
	path := "/v1/requests/redeliver/redeliver"
	view := a.do(http.MethodGet, "/v1/requests/redeliver", tokenPM).json(t)
	if cb := view["callback"].(map[string]any); cb["state"] != "waiting" || cb["url"] != "https://agent.example.com/hook" ||
		cb["attempts"] == nil || len(cb["attempts"].([]any)) != 0 || view["response"] != nil {
		t.Errorf("before resolution: callback = %v, response = %v", cb, view["response"])
	}
	if r := a.do(http.MethodPost, path, tokenOther); r.Status != http.StatusForbidden {
		t.Errorf("another agent: %d %s", r.Status, r.Body)
	}
	if r := a.do(http.MethodPost, path, tokenPM); r.Status != http.StatusConflict {
		t.Errorf("before resolution: %d %s", r.Status, r.Body)
	}
	if r := a.do(http.MethodPost, "/v1/requests/nope/redeliver", tokenPM); r.Status != http.StatusNotFound {
		t.Errorf("unknown id: %d", r.Status)
	}
	if r := a.do(http.MethodPost, path, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.Status)
	}
	e.resolve("redeliver-polls", responseFor("redeliver-polls"), "")
	if r := a.do(http.MethodPost, "/v1/requests/redeliver-polls/redeliver", tokenPM); r.Status != http.StatusConflict {
		t.Errorf("resolved without response_url: %d %s", r.Status, r.Body)
	}
	e.resolve("redeliver", responseFor("redeliver"), "msg_resp-redeliver")
	// The resolution's job and a failed attempt: retrying, next attempt later.
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) {
		o.AllowPrivate = false
		o.Schedule = []time.Duration{time.Hour}
		o.Transport = roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusBadGateway, Body: http.NoBody, Header: http.Header{}}, nil
		})
	})
	mustNil(t, d.Handle(t.Context(), deliverJob("redeliver")))
	view = a.do(http.MethodGet, "/v1/requests/redeliver", tokenPM).json(t)
	cb := view["callback"].(map[string]any)
	if cb["state"] != "retrying" || cb["next_attempt_at"] == nil || cb["last_error"] != "HTTP 502" || len(cb["attempts"].([]any)) != 1 {
		t.Errorf("callback before redelivery = %v", cb)
	}

	before := wake.count()
	r := a.do(http.MethodPost, path, tokenPM)
	if r.Status != http.StatusAccepted {
		t.Fatalf("after resolution: %d %s", r.Status, r.Body)
	}
	got := r.json(t)
	cb = got["callback"].(map[string]any)
	if got["id"] != "redeliver" || got["status"] != "resolved" || cb["state"] != "pending" ||
		cb["next_attempt_at"] != nil || cb["webhook_id"] != "msg_resp-redeliver" || len(cb["attempts"].([]any)) != 1 {
		t.Errorf("202 body = %s", r.Body)
	}
	if n := wake.count() - before; n != 1 {
		t.Errorf("the job runner was woken %d times, want once", n)
	}
	if !e.deliverScheduled("redeliver") {
		t.Error("no deliver job scheduled")
	}
	if got["response"] == nil {
		t.Error("202 body has no response")
	}
	// The list shows the callback summary, without the attempts.
	list := a.do(http.MethodGet, "/v1/requests", tokenPM).json(t)
	for _, it := range list["items"].([]any) {
		item := it.(map[string]any)
		if item["id"] == "redeliver" {
			cb := item["callback"].(map[string]any)
			if cb["state"] != "pending" || cb["attempts"] != nil || cb["attempt_count"] != 1.0 {
				t.Errorf("list callback = %v", cb)
			}
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// *store.Store is what the API and the deliverer run on.
var (
	_ webhook.Store         = (*store.Store)(nil)
	_ webhook.DeliveryStore = (*store.Store)(nil)
)
