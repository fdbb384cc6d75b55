package client_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/client"
)

// dropAfterServing lets the bot handle the call, then closes the connection
// instead of answering: the call happened, the client sees a network error.
func dropAfterServing(t *testing.T, b *testBot, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	b.bot.ServeHTTP(rec, r)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_ = conn.Close()
}

// A submission whose first answer is lost (the bot stored it) and whose
// second is a 429 with Retry-After is retried with the same id and body:
// the third attempt finds it stored (200) and nothing is stored twice.
func TestSubmitRetriesIdempotently(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	var posts atomic.Int32
	var bodies sync.Map
	b.setFront(func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/requests" {
			return false
		}
		n := posts.Add(1)
		bodies.Store(n, string(body))
		switch n {
		case 1:
			dropAfterServing(t, b, w, r)
			return true
		case 2:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error": "rate limit exceeded", "limit": {"name": "rate"}}`)
			return true
		}
		return false
	})
	c := b.client()
	req := approval("") // no id: the client picks one before the first attempt
	start := time.Now()
	sub, err := c.Submit(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("the retry after a 429 with Retry-After: 1 came %s after the first attempt", elapsed)
	}
	if posts.Load() != 3 || !sub.Duplicate || sub.View == nil || sub.Status != aah.StatusPending || !strings.HasPrefix(sub.ID, "req_") {
		t.Fatalf("after %d attempts: %+v", posts.Load(), sub)
	}
	first, _ := bodies.Load(int32(1))
	for i := int32(2); i <= 3; i++ {
		if again, _ := bodies.Load(i); again != first {
			t.Errorf("attempt %d sent another body:\n%s\nvs\n%s", i, again, first)
		}
	}
	if req.ID != "" {
		t.Errorf("Submit changed the caller's request: ID %q", req.ID)
	}
	b.setFront(nil)
	list := listIDs(t, b)
	if len(list) != 1 || list[0] != sub.ID {
		t.Errorf("the bot holds %v, want only %s", list, sub.ID)
	}
	v, err := c.Get(testCtx(t), sub.ID)
	if err != nil || v.Status != aah.StatusPending || v.Agent != "agent" {
		t.Fatalf("Get: %+v, %v", v, err)
	}
}

func listIDs(t *testing.T, b *testBot) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.url+"/v1/requests", nil)
	req.Header.Set("Authorization", "Bearer "+agentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Items []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range list.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// A bot that stays unavailable: the client gives up after its attempts
// with the 503 as a typed error.
func TestSubmitGivesUpOnPersistent503(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	var posts atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		posts.Add(1)
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error": "store unavailable: timeout"}`)
		return true
	})
	_, err := b.client(client.WithRetries(3, time.Millisecond)).Submit(testCtx(t), approval("down-1"))
	var ae *client.APIError
	if !errors.As(err, &ae) || !errors.Is(err, client.ErrUnavailable) || ae.Code != "unavailable" || !strings.Contains(ae.Message, "store unavailable") {
		t.Fatalf("err = %v", err)
	}
	if posts.Load() != 3 {
		t.Errorf("%d attempts, want 3", posts.Load())
	}
}

// The API's 4xx answers are *APIError values that errors.Is matches
// against the sentinels, with the bot's message, code and field details.
func TestTypedErrors(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	ctx := testCtx(t)

	var ae *client.APIError
	bad := approval("bad-1")
	bad.Decisions = nil
	_, err := c.Submit(ctx, bad)
	if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &ae) || ae.Status != 400 || len(ae.Details) == 0 ||
		ae.Details[0].Field != "content.body.data.decisions" {
		t.Errorf("an invalid request: %v (%+v)", err, ae)
	}

	if _, err := c.Get(ctx, "never-stored"); !errors.Is(err, client.ErrNotFound) || !errors.As(err, &ae) || ae.Code != "not_found" {
		t.Errorf("an unknown id: %v", err)
	}
	if _, err := client.New(b.url, "wrong-token-0123456789").Get(ctx, "x"); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("a wrong token: %v", err)
	}

	if _, err := c.Submit(ctx, approval("taken-1")); err != nil {
		t.Fatal(err)
	}
	other := approval("taken-1")
	other.Title = "Something else"
	if _, err := c.Submit(ctx, other); !errors.Is(err, client.ErrConflict) {
		t.Errorf("an id used by another body: %v", err)
	}
	if _, err := c.Withdraw(ctx, "taken-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Withdraw(ctx, "taken-1"); !errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrNotFound) {
		t.Errorf("withdrawing twice: %v", err)
	}

	// A 429 without Retry-After (the cap of open requests) is not retried,
	// and a problem-details body (RFC 9457, keeping error and details) is
	// read like the plain one.
	var calls atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"type": "https://approvalbot.dev/problems/too-many-open", "title": "Too many open requests",
			"status": 429, "detail": "agent has 3 open", "error": "too many open requests: agent \"agent\" has 3 open",
			"limit": {"name": "open_cap", "max": 3, "open": 3}}`)
		return true
	})
	_, err = c.Submit(ctx, approval("capped-1"))
	if !errors.Is(err, client.ErrRateLimited) || !errors.As(err, &ae) || ae.Code != "open_cap" ||
		!strings.HasPrefix(ae.Message, "too many open requests") || calls.Load() != 1 {
		t.Errorf("at the open cap: %v (%d calls)", err, calls.Load())
	}
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type": "about:blank", "title": "Bad Request", "status": 400, "detail": "invalid decision request: 1 problem",
			"details": [{"field": "artifact.title", "message": "is required"}]}`)
		return true
	})
	_, err = c.Submit(ctx, approval("problem-1"))
	if !errors.As(err, &ae) || ae.Code != "invalid" || ae.Message != "invalid decision request: 1 problem" ||
		len(ae.Details) != 1 || ae.Details[0].Field != "artifact.title" {
		t.Errorf("a problem-details 400: %v", err)
	}
}

// Wait long-polls through polls that end with the request still open and
// through a 503, and returns the request once a reviewer decided it.
func TestWaitResumesUntilDecided(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	var polls, failed atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method != http.MethodGet || r.URL.Query().Get("wait") == "" {
			return false
		}
		if polls.Add(1) == 2 && failed.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	c := b.client(client.WithPollWait(300 * time.Millisecond))
	ctx := testCtx(t)
	sub, err := c.Submit(ctx, approval("wait-1"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *client.View, 1)
	go func() {
		v, err := c.Wait(ctx, sub.ID)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	for polls.Load() < 4 { // two polls over, one refused: still waiting
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case v := <-done:
		t.Fatalf("Wait returned before the decision: %+v", v)
	default:
	}
	b.decide(sub.ID, "answers", aliceToken, `{"answers": {"ship": true}, "comment": "go"}`)
	v := <-done
	if v == nil || v.Status != aah.StatusResolved || v.Response == nil {
		t.Fatalf("Wait: %+v", v)
	}
	data := v.Response.Content.Body.Data
	if data.OverallStatus != aah.OverallAllApproved || len(data.Responses) != 1 || !*data.Responses[0].Approved ||
		v.Response.Source.AgentID != "human:U0ALICE" {
		t.Errorf("response: %s", v.ResponseJSON)
	}
}

// WaitEvents follows the event stream, resuming after a refused connection,
// and sees every event up to the close.
func TestWaitEvents(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	var streams atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if !strings.HasSuffix(r.URL.Path, "/events") || streams.Add(1) != 1 {
			return false
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	c := b.client()
	ctx := testCtx(t)
	sub, err := c.Submit(ctx, approval("events-1"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var types []string
	done := make(chan *client.View, 1)
	go func() {
		v, err := c.WaitEvents(ctx, sub.ID, func(e client.Event) {
			mu.Lock()
			types = append(types, e.Type)
			mu.Unlock()
		})
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	for {
		mu.Lock()
		n := len(types)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.decide(sub.ID, "answers", bobToken, `{"answers": {"ship": false}, "comment": "not today"}`)
	v := <-done
	mu.Lock()
	defer mu.Unlock()
	if v == nil || v.Status != aah.StatusResolved || v.Response.Content.Body.Data.OverallStatus != aah.OverallAllRejected {
		t.Fatalf("WaitEvents: %+v", v)
	}
	if strings.Join(types, ",") != "input:requested,input:received,resolved" || streams.Load() < 2 {
		t.Errorf("events %v over %d connections", types, streams.Load())
	}
}

// Withdraw closes an open request; Wait then returns it withdrawn.
func TestWithdraw(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	ctx := testCtx(t)
	sub, err := c.Submit(ctx, approval("withdraw-1"))
	if err != nil {
		t.Fatal(err)
	}
	// The first DELETE withdraws it but its answer is lost: the retry's 409
	// is recognised as this call's own success.
	var deletes atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method == http.MethodDelete && deletes.Add(1) == 1 {
			dropAfterServing(t, b, w, r)
			return true
		}
		return false
	})
	v, err := c.Withdraw(ctx, sub.ID)
	if err != nil || v.Status != aah.StatusWithdrawn || deletes.Load() != 2 {
		t.Fatalf("Withdraw: %+v, %v (%d DELETEs)", v, err, deletes.Load())
	}
	if v, err = c.Wait(ctx, sub.ID); err != nil || v.Status != aah.StatusWithdrawn || v.Response != nil {
		t.Fatalf("Wait: %+v, %v", v, err)
	}
}

// A request submitted as a document of the agent's own, without an id,
// gets one before the first attempt; with one, it is sent byte for byte.
func TestSubmitJSON(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	doc, err := approval("").Document(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(doc, &m)
	delete(m["artifact"].(map[string]any), "id")
	noID, _ := json.Marshal(m)
	sub, err := c.SubmitJSON(testCtx(t), noID)
	if err != nil || !strings.HasPrefix(sub.ID, "req_") {
		t.Fatalf("SubmitJSON: %+v, %v", sub, err)
	}
	withID := strings.Replace(string(doc), `"id":""`, `"id":"own-1"`, 1)
	for i, want := range []bool{false, true} { // again: the identical body answers 200
		sub, err = c.SubmitJSON(testCtx(t), []byte(withID))
		if err != nil || sub.ID != "own-1" || sub.Duplicate != want {
			t.Fatalf("SubmitJSON %d: %+v, %v", i, sub, err)
		}
	}
}

// A proxy's 502 in front of the bot is retried like a network error.
func TestGetRetriesABadGateway(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	if _, err := c.Submit(testCtx(t), approval("proxy-1")); err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int32
	b.setFront(func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method == http.MethodGet && gets.Add(1) <= 2 {
			http.Error(w, "upstream connect error", http.StatusBadGateway)
			return true
		}
		return false
	})
	v, err := c.Get(testCtx(t), "proxy-1")
	if err != nil || v.ID != "proxy-1" || gets.Load() != 3 {
		t.Fatalf("Get: %+v, %v after %d attempts", v, err, gets.Load())
	}
}
