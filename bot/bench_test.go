package bot_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkIntake measures POST /v1/requests end to end in process: auth,
// JSON decode and validation of seed 000's example (UTF-8 included), the
// Slack limit check, the agent's rate and open-requests limits, and the
// store-and-enqueue transaction on real Redis. No job runner runs, so
// only intake is measured. Compare with BenchmarkOneRedisRoundTrip.
func BenchmarkIntake(b *testing.B) {
	// The per-agent limits are on, as by default, so their cost is counted,
	// but set too high to refuse anything.
	h := newHarness(b, withLimits(b, "1000000/s", "", 1_000_000, ""))
	handler := h.svc.Handler()
	body := example(b)
	var seq atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := benchRequest(body, fmt.Sprintf("bench-%d", seq.Add(1)))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				b.Fatalf("POST: %d %s", rec.Code, rec.Body)
			}
		}
	})
}

// BenchmarkOneRedisRoundTrip is the floor BenchmarkIntake is compared with:
// a handler that reads the same body, makes one Redis round trip (SET) and
// answers 202 with a small JSON body.
func BenchmarkOneRedisRoundTrip(b *testing.B) {
	h := newHarness(b)
	body := example(b)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := r.Header.Get("X-Id")
		if err := h.rdb.Set(r.Context(), h.prefix+":floor:"+id, raw, 0).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q,"status":"pending"}`, id)
	})
	var seq atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := benchRequest(body, fmt.Sprintf("bench-%d", seq.Add(1)))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				b.Fatalf("floor: %d", rec.Code)
			}
		}
	})

}

// benchRequest is an intake request for the example body under a new id; the
// floor handler reads the id from X-Id.
func benchRequest(body []byte, id string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/requests",
		bytes.NewReader(bytes.Replace(body, []byte("aah_decision_abc123"), []byte(id), 1)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tokenPM)
	req.Header.Set("X-Id", id)
	return req
}
