package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/prometheus/client_golang/prometheus"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want store.Rate
		err  string
	}{
		{"120/m:60", store.Rate{Count: 120, Per: time.Minute, Burst: 60}, ""},
		{"10/s", store.Rate{Count: 10, Per: time.Second, Burst: 10}, ""},
		{" 5/h:1 ", store.Rate{Count: 5, Per: time.Hour, Burst: 1}, ""},
		{"off", store.Rate{}, ""},
		{"120", store.Rate{}, "want off, or <count>/<s|m|h>[:<burst>]"},
		{"120/d", store.Rate{}, "want off"},
		{"0/m", store.Rate{}, "count from 1"},
		{"-1/m", store.Rate{}, "count from 1"},
		{"10/m:0", store.Rate{}, "burst after ':' must be a number from 1"},
		{"10/m:x", store.Rate{}, "burst"},
	} {
		got, err := webhook.ParseRate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRate(%q) error = %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if !got.Off() {
			if again, _ := webhook.ParseRate(webhook.FormatRate(got)); again != got {
				t.Errorf("FormatRate(%+v) = %q does not parse back", got, webhook.FormatRate(got))
			}
		}
	}
	over, err := webhook.ParseRateOverrides("pm:600/m, batch:10/s:20,ci:off")
	mustNil(t, err)
	if over["pm"] != (store.Rate{Count: 600, Per: time.Minute, Burst: 600}) || over["batch"].Burst != 20 || !over["ci"].Off() || len(over) != 3 {
		t.Errorf("ParseRateOverrides = %+v", over)
	}
	for spec, want := range map[string]string{
		"pm":            "entry \"pm\" is not <agent>:<limit>",
		"pm:1/m,pm:2/m": "agent \"pm\" is listed twice",
		"p m:1/m":       "agent name",
		"pm:fast":       "INTAKE_RATE_OVERRIDES: agent \"pm\": \"fast\" is not a rate",
		"pm:1/m:2:3":    "burst",
	} {
		if _, err := webhook.ParseRateOverrides(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRateOverrides(%q) error = %v, want one containing %q", spec, err, want)
		}
	}
	caps, err := webhook.ParseMaxOpenOverrides("pm:5000,batch:0")
	mustNil(t, err)
	if caps["pm"] != 5000 || caps["batch"] != 0 || len(caps) != 2 {
		t.Errorf("ParseMaxOpenOverrides = %+v", caps)
	}
	if _, err := webhook.ParseMaxOpenOverrides("pm:-1"); err == nil || !strings.Contains(err.Error(), "0 for no cap") {
		t.Errorf("ParseMaxOpenOverrides(pm:-1) error = %v", err)
	}
}

// clock is a settable clock for the store (the bucket reads it).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// post submits body as the agent of token and returns the answer with its
// headers.
func (a *api) post(token string, body []byte) (response, http.Header) {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/requests", bytes.NewReader(body))
	mustNil(a.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(req)
	mustNil(a.t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{Status: resp.StatusCode, Body: b.Bytes()}, resp.Header
}

type limitAnswer struct {
	Error string `json:"error"`
	Limit struct {
		Name       string `json:"name"`
		Rate       string `json:"rate"`
		RetryAfter int    `json:"retry_after_seconds"`
		Max        int    `json:"max"`
		Open       int64  `json:"open"`
	} `json:"limit"`
}

func limitedAPI(t *testing.T, limits webhook.Limits) (*api, *clock, *prometheus.Registry) {
	t.Helper()
	clk := &clock{now: seedAt}
	e := newEnvWithClock(t, clk.Now)
	reg := prometheus.NewRegistry()
	a := e.api(func(o *webhook.Options) {
		o.Lifecycle = approval.New(e.st, approval.Options{Now: clk.Now, Policy: approval.Policy{Reviewers: []string{"U0LEAD"}}})
		o.Now = clk.Now
		o.Limits = limits
		o.Metrics = webhook.NewMetrics(reg)
	})
	return a, clk, reg
}

// The N+1th request within the window is refused with 429, Retry-After
// (the seconds until a token) and a JSON error naming the limit; another
// agent is not affected, a resubmission of a stored request is still
// answered 200, and once a token has refilled the agent may submit again.
func TestIntakeRateLimit(t *testing.T) {
	t.Parallel()
	a, clk, reg := limitedAPI(t, webhook.Limits{Rate: store.Rate{Count: 2, Per: time.Hour, Burst: 2}})
	for _, id := range []string{"rate-1", "rate-2"} {
		if r, _ := a.post(tokenPM, seedWith(t, id, nil)); r.Status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", id, r.Status, r.Body)
		}
	}
	clk.Advance(10 * time.Minute)
	r, h := a.post(tokenPM, seedWith(t, "rate-3", nil))
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("third POST within the window: %d %s, want 429", r.Status, r.Body)
	}
	if got := h.Get("Retry-After"); got != "1200" { // a token every 30 minutes, 10 of them passed
		t.Errorf("Retry-After = %q, want 1200", got)
	}
	var body limitAnswer
	mustNil(t, json.Unmarshal(r.Body, &body))
	if body.Limit.Name != "rate" || body.Limit.Rate != "2/h:2" || body.Limit.RetryAfter != 1200 ||
		!strings.Contains(body.Error, `agent "pm" may submit 2 new requests per hour, 2 at once (INTAKE_RATE)`) {
		t.Errorf("429 body = %s", r.Body)
	}
	if _, err := a.st.Get(t.Context(), "rate-3"); err == nil {
		t.Error("a rate-limited request was stored")
	}
	if r, _ := a.post(tokenPM, seedWith(t, "rate-1", nil)); r.Status != http.StatusOK {
		t.Errorf("resubmission while limited: %d %s, want 200", r.Status, r.Body)
	}
	if r, _ := a.post(tokenOther, seedWith(t, "theirs-1", nil)); r.Status != http.StatusAccepted {
		t.Errorf("another agent: %d %s, want 202", r.Status, r.Body)
	}
	clk.Advance(20*time.Minute - time.Millisecond)
	if r, h := a.post(tokenPM, seedWith(t, "rate-3", nil)); r.Status != http.StatusTooManyRequests || h.Get("Retry-After") != "1" {
		t.Errorf("1 ms before the token: %d Retry-After %q, want 429 and 1", r.Status, h.Get("Retry-After"))
	}
	clk.Advance(time.Millisecond)
	if r, _ := a.post(tokenPM, seedWith(t, "rate-3", nil)); r.Status != http.StatusAccepted {
		t.Errorf("once a token refilled: %d %s, want 202", r.Status, r.Body)
	}
	if n := metricValue(t, reg, "approvalbot_intake_requests_total", map[string]string{"outcome": "rate_limited"}); n != 2 {
		t.Errorf("intake_requests_total{outcome=rate_limited} = %v, want 2", n)
	}
}

// Beyond its cap of open requests an agent's new request is refused with
// 429 saying how many are open and the cap; a resubmission and another
// agent are not; once one is withdrawn it may submit again.
func TestIntakeOpenCap(t *testing.T) {
	t.Parallel()
	a, _, reg := limitedAPI(t, webhook.Limits{MaxOpen: 2, MaxOpenOverrides: map[string]int{"other": 1}})
	for _, id := range []string{"cap-1", "cap-2"} {
		if r, _ := a.post(tokenPM, seedWith(t, id, nil)); r.Status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", id, r.Status, r.Body)
		}
	}
	r, h := a.post(tokenPM, seedWith(t, "cap-3", nil))
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("POST beyond the cap: %d %s, want 429", r.Status, r.Body)
	}
	if h.Get("Retry-After") != "" {
		t.Errorf("Retry-After = %q: the cap frees when a request closes, not at a time", h.Get("Retry-After"))
	}
	var body limitAnswer
	mustNil(t, json.Unmarshal(r.Body, &body))
	if body.Limit.Name != "open_cap" || body.Limit.Max != 2 || body.Limit.Open != 2 ||
		!strings.Contains(body.Error, `agent "pm" has 2 open, and may have at most 2 (INTAKE_MAX_OPEN)`) {
		t.Errorf("429 body = %s", r.Body)
	}
	if r, _ := a.post(tokenPM, seedWith(t, "cap-2", nil)); r.Status != http.StatusOK {
		t.Errorf("resubmission at the cap: %d %s, want 200", r.Status, r.Body)
	}
	if r, _ := a.post(tokenOther, seedWith(t, "theirs-1", nil)); r.Status != http.StatusAccepted {
		t.Errorf("another agent: %d %s, want 202", r.Status, r.Body)
	}
	if r, _ := a.post(tokenOther, seedWith(t, "theirs-2", nil)); r.Status != http.StatusTooManyRequests ||
		!strings.Contains(string(r.Body), "at most 1 (INTAKE_MAX_OPEN_OVERRIDES)") {
		t.Errorf("another agent beyond its override: %d %s, want 429 naming the override", r.Status, r.Body)
	}
	if r := a.do(http.MethodDelete, "/v1/requests/cap-1", tokenPM); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	if r, _ := a.post(tokenPM, seedWith(t, "cap-3", nil)); r.Status != http.StatusAccepted {
		t.Errorf("after a withdrawal: %d %s, want 202", r.Status, r.Body)
	}
	if n := metricValue(t, reg, "approvalbot_intake_requests_total", map[string]string{"outcome": "too_many_open"}); n != 2 {
		t.Errorf("intake_requests_total{outcome=too_many_open} = %v, want 2", n)
	}
}

// A request that is not stored gives back the slot it reserved: a
// different body under a stored id (409), the agent's own or another
// agent's, and the resubmission of a closed request (200). A conflict
// leaves the stored request counted.
func TestIntakeOpenCapSlotsGivenBack(t *testing.T) {
	t.Parallel()
	a, _, _ := limitedAPI(t, webhook.Limits{MaxOpen: 2})
	if r, _ := a.post(tokenPM, seedWith(t, "given-1", nil)); r.Status != http.StatusAccepted {
		t.Fatalf("POST given-1: %d %s", r.Status, r.Body)
	}
	other := seedWith(t, "given-1", map[string]any{"channel": "#elsewhere"})
	for range 3 {
		if r, _ := a.post(tokenPM, other); r.Status != http.StatusConflict {
			t.Fatalf("a different body under given-1: %d %s, want 409", r.Status, r.Body)
		}
		if r, _ := a.post(tokenOther, seedWith(t, "given-1", nil)); r.Status != http.StatusConflict {
			t.Fatalf("another agent's request under given-1: %d %s, want 409", r.Status, r.Body)
		}
	}
	if r, _ := a.post(tokenPM, seedWith(t, "given-2", nil)); r.Status != http.StatusAccepted {
		t.Fatalf("POST given-2: %d %s", r.Status, r.Body)
	}
	if r, _ := a.post(tokenPM, seedWith(t, "given-3", nil)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("POST given-3 beyond the cap: %d %s, want 429 (the conflict kept given-1 counted)", r.Status, r.Body)
	}
	if r := a.do(http.MethodDelete, "/v1/requests/given-1", tokenPM); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	for range 3 {
		if r, _ := a.post(tokenPM, seedWith(t, "given-1", nil)); r.Status != http.StatusOK {
			t.Fatalf("resubmission of the withdrawn given-1: %d %s, want 200", r.Status, r.Body)
		}
	}
	if r, _ := a.post(tokenPM, seedWith(t, "given-3", nil)); r.Status != http.StatusAccepted {
		t.Errorf("POST given-3 after the withdrawal: %d %s, want 202", r.Status, r.Body)
	}
	if r, _ := a.post(tokenPM, seedWith(t, "given-4", nil)); r.Status != http.StatusTooManyRequests {
		t.Errorf("POST given-4 beyond the cap: %d %s, want 429", r.Status, r.Body)
	}
}
