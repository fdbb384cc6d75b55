package bot_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is an agent's callback endpoint. It checks each delivery's
// Standard Webhooks signature itself (no library), so a signing bug in the
// bot cannot be hidden by the same bug in a shared verifier.
type receiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	got       []delivery
	arrived   chan struct{}
	failFirst int // answer 503 to this many deliveries first
}

type delivery struct {
	body          []byte
	id, timestamp string
	signatureOK   bool
	at            time.Time
}

func newReceiver(t testing.TB, secret string) *receiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{arrived: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{body: body, id: req.Header.Get("webhook-id"), timestamp: req.Header.Get("webhook-timestamp"), at: time.Now()}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(d.id + "." + d.timestamp + "." + string(body)))
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		for _, sig := range strings.Fields(req.Header.Get("webhook-signature")) {
			d.signatureOK = d.signatureOK || hmac.Equal([]byte(sig), []byte(want))
		}
		ts, _ := strconv.ParseInt(d.timestamp, 10, 64)
		if time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			d.signatureOK = false // a stale timestamp must not verify
		}
		r.mu.Lock()
		r.got = append(r.got, d)
		fail := len(r.got) <= r.failFirst
		r.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// wait returns the first successful delivery.
func (r *receiver) wait(t testing.TB, timeout time.Duration) delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case <-r.arrived:
	case <-ctx.Done():
		t.Fatal("no decision response arrived")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func withResponseURL(url string) func(map[string]any) {
	return func(doc map[string]any) { doc["handoff"].(map[string]any)["response_url"] = url }
}
