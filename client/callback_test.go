package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/client"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The bot's own signed delivery reaches a CallbackHandler, which verifies
// it and hands over the decision response.
func TestCallbackHandlerReceivesTheBotsDelivery(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	got := make(chan *aah.Response, 1)
	ids := make(chan string, 1)
	agent := httptest.NewServer(client.CallbackHandler(testSecret, func(ctx context.Context, r *aah.Response) error {
		ids <- client.WebhookID(ctx)
		got <- r
		return nil
	}))
	t.Cleanup(agent.Close)
	c := b.client()
	ctx := testCtx(t)
	req := approval("callback-1")
	req.ResponseURL = agent.URL + "/decisions"
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	b.decide("callback-1", "answers", aliceToken, `{"answers": {"ship": true}}`)
	select {
	case r := <-got:
		if r.Content.Body.Data.RequestID != "callback-1" || r.Content.Body.Data.OverallStatus != aah.OverallAllApproved {
			t.Errorf("response: %+v", r.Content.Body.Data)
		}
		if id := <-ids; id != "msg_"+r.Artifact.ID {
			t.Errorf("webhook id %q, response %s", id, r.Artifact.ID)
		}
	case <-ctx.Done():
		t.Fatal("no delivery")
	}
	for ctx.Err() == nil { // the bot records the 204 as delivered
		v, err := c.Get(ctx, "callback-1")
		if err != nil {
			t.Fatal(err)
		}
		if v.Callback != nil && v.Callback.State == "delivered" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the delivery was never recorded as delivered")
}

// signed returns a POST of body signed as the bot signs (the Standard
// Webhooks library, with secret) at ts.
func signed(t *testing.T, secret, msgID string, ts time.Time, body []byte) *http.Request {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(msgID, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/decisions", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(standardwebhooks.HeaderWebhookID, msgID)
	r.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return r
}

// sampleResponse is a decision response as the bot builds it.
func sampleResponse(t *testing.T) []byte {
	t.Helper()
	req, err := aah.Parse([]byte(`{"aah_version": "0.1", "artifact": {"id": "sig-1", "type": "decision/request", "title": "Ship it"},
		"source": {"agent_id": "a"}, "content": {"body": {"schema": "aah:decision/request@1.0",
		"data": {"decisions": [{"id": "ship", "type": "approval", "prompt": "Ship?", "required": true}]}}}}`), aah.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	return aah.BuildResponse(req, map[string]aah.Answer{"ship": {DecisionID: "ship", Value: yes, By: aah.Person{ID: "U0ALICE", Name: "alice"}}},
		aah.ResponseOptions{ID: "aah_decision_resp_1", ResolvedBy: aah.Person{ID: "U0ALICE", Name: "alice"}}).JSON()
}

// Good signatures pass; a tampered body, a wrong secret, a stale or future
// timestamp, missing headers and a replay are refused before fn runs.
func TestCallbackHandlerVerifies(t *testing.T) {
	t.Parallel()
	var calls int
	failNext := false
	h := client.CallbackHandler(testSecret, func(ctx context.Context, r *aah.Response) error {
		calls++
		if failNext {
			failNext = false
			return errors.New("database down")
		}
		return nil
	})
	body := sampleResponse(t)
	now := time.Now()
	serve := func(r *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	tampered := bytes.Replace(body, []byte(`"approved":true`), []byte(`"approved":false`), 1)
	if bytes.Equal(tampered, body) {
		t.Fatal("the sample has no approval to tamper with")
	}
	forged := signed(t, testSecret, "msg_2", now, body)
	forged.Header.Set(standardwebhooks.HeaderWebhookSignature, "v1,"+"AAAA"+forged.Header.Get(standardwebhooks.HeaderWebhookSignature)[7:])
	noHeaders := signed(t, testSecret, "msg_3", now, body)
	noHeaders.Header.Del(standardwebhooks.HeaderWebhookSignature)
	otherKey := "whsec_" + "b3RoZXItc2VjcmV0LW9mLXNvbWVvbmUtZWxzZQ=="

	for _, tc := range []struct {
		name string
		req  *http.Request
		want int
	}{
		{"good", signed(t, testSecret, "msg_1", now, body), http.StatusNoContent},
		{"replayed", signed(t, testSecret, "msg_1", now, body), http.StatusConflict},
		{"retried (new timestamp)", signed(t, testSecret, "msg_1", now.Add(time.Second), body), http.StatusNoContent},
		{"tampered body", signed(t, testSecret, "msg_2", now, body), http.StatusUnauthorized}, // body swapped below
		{"forged signature", forged, http.StatusUnauthorized},
		{"missing signature", noHeaders, http.StatusUnauthorized},
		{"another secret", signed(t, otherKey, "msg_4", now, body), http.StatusUnauthorized},
		{"stale", signed(t, testSecret, "msg_5", now.Add(-10*time.Minute), body), http.StatusUnauthorized},
		{"from the future", signed(t, testSecret, "msg_6", now.Add(10*time.Minute), body), http.StatusUnauthorized},
		{"not a response", signed(t, testSecret, "msg_7", now, []byte(`{"hello": "world"}`)), http.StatusBadRequest},
	} {
		if tc.name == "tampered body" {
			tc.req.Body = http.NoBody
			tc.req = signedWithBody(tc.req, tampered)
		}
		before := calls
		if got := serve(tc.req); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
		if ran := calls > before; ran != (tc.want == http.StatusNoContent) {
			t.Errorf("%s: fn ran: %v", tc.name, ran)
		}
	}
	failNext = true
	if got := serve(signed(t, testSecret, "msg_8", now, body)); got != http.StatusInternalServerError {
		t.Errorf("fn failing: %d, want 500 so the bot retries", got)
	}
	if got := serve(signed(t, testSecret, "msg_8", now.Add(5*time.Second), body)); got != http.StatusNoContent {
		t.Errorf("the bot's retry after a 500: %d", got)
	}
}

// signedWithBody keeps r's signature headers over another body.
func signedWithBody(r *http.Request, body []byte) *http.Request {
	out := httptest.NewRequest(http.MethodPost, "/decisions", bytes.NewReader(body))
	out.Header = r.Header.Clone()
	return out
}

func TestCallbackHandlerRefusesABadSecret(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("a secret that is not whsec_<base64> was accepted")
		}
	}()
	client.CallbackHandler("not base64 !", func(context.Context, *aah.Response) error { return nil })
}

// A captured delivery replayed with its timestamp written another way ("0…",
// "+…": the signature covers the number, not its text) is refused, and the
// function runs once.
func TestCallbackReplayWithRewrittenTimestampIsRefused(t *testing.T) {
	calls := 0
	h := client.CallbackHandler(testSecret, func(ctx context.Context, r *aah.Response) error {
		calls++
		return nil
	})
	body := sampleResponse(t)
	now := time.Now()
	captured := signed(t, testSecret, "msg_replay", now, body)
	serve := func(ts string) int {
		r := signedWithBody(captured, body)
		r.Header.Set(standardwebhooks.HeaderWebhookTimestamp, ts)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	orig := strconv.FormatInt(now.Unix(), 10)
	if got := serve(orig); got != http.StatusNoContent {
		t.Fatalf("original delivery: %d", got)
	}
	if got := serve(orig); got != http.StatusConflict {
		t.Fatalf("byte-for-byte replay: %d, want 409", got)
	}
	for _, ts := range []string{"0" + orig, "00" + orig, "+" + orig} {
		if got := serve(ts); got == http.StatusNoContent {
			t.Errorf("replay with webhook-timestamp %q accepted", ts)
		}
	}
	if calls != 1 {
		t.Errorf("the callback function ran %d times for one delivery", calls)
	}
}
