package bot_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// The HTTP metrics are labelled by the route pattern that matched, never by
// the path: a hundred request ids make one series, paths no route matches
// share "unmatched", and a made-up method is "other". So the number of
// series is bounded by the routes, methods and status codes, whatever
// clients send.
func TestHTTPMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 100 {
		id := "no-such-request-" + twoDigits(i%100)
		if r := h.do(http.MethodGet, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusNotFound {
			t.Fatalf("GET %s: %d %s", id, r.Status, r.Body)
		}
		if r := h.do(http.MethodGet, "/scan/"+id+"/wp-admin.php", "", "", nil); r.Status != http.StatusNotFound {
			t.Fatalf("GET an unknown path: %d", r.Status)
		}
	}
	if r := h.do("BREW", "/v1/requests", tokenPM, "", nil); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("BREW /v1/requests: %d", r.Status)
	}
	if r := h.do(http.MethodGet, "/healthz", "", "", nil); r.Status != http.StatusOK {
		t.Fatalf("GET /healthz: %d", r.Status)
	}

	if n := metricValue(t, h.reg, "approvalbot_http_requests_total",
		map[string]string{"route": "/v1/requests/{id}", "method": "GET", "status": "404"}); n != 100 {
		t.Errorf("GET /v1/requests/{id} 404 counted %v times, want 100", n)
	}
	if n := metricValue(t, h.reg, "approvalbot_http_requests_total",
		map[string]string{"route": "unmatched", "method": "GET", "status": "404"}); n != 100 {
		t.Errorf("unmatched GETs counted %v times, want 100", n)
	}
	if n := metricValue(t, h.reg, "approvalbot_http_requests_total",
		map[string]string{"route": "unmatched", "method": "other", "status": "405"}); n != 1 {
		t.Errorf("BREW counted %v times as method=other, route=unmatched, want 1", n)
	}
	if n, _ := histogram(t, h.reg, "approvalbot_http_request_duration_seconds",
		map[string]string{"route": "/healthz", "method": "GET"}); n != 1 {
		t.Errorf("the /healthz latency histogram has %d samples, want 1", n)
	}

	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	series := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "approvalbot_http_request") {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && !slices.Contains(routes, l.GetValue()) {
					routes = append(routes, l.GetValue())
				}
			}
		}
	}
	slices.Sort(routes)
	// BREW /v1/requests matched no pattern (405): it is "unmatched".
	if want := []string{"/healthz", "/v1/requests/{id}", "unmatched"}; !slices.Equal(routes, want) {
		t.Errorf("route labels %v, want only patterns %v", routes, want)
	}
	if series > 10 {
		t.Errorf("%d HTTP series after 202 requests to 201 distinct paths: labels are not bounded", series)
	}
}

// Every API request is logged once with its method, route, status,
// duration and HTTP request id (the client's X-Request-Id when usable, else
// a generated one, echoed in the response), and the AAH request id under the
// same key, request_id, as the intake's own log line and the job and
// callback logs of that request.
func TestAccessLogLine(t *testing.T) {
	t.Parallel()
	logs := &runLogs{}
	h := newHarness(t, func(_ *configT, d *depsT) { d.Logger = slog.New(logs) })

	r := h.post(exampleWith(t, "access-log-1", nil))
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	generated := r.Header.Get(bot.RequestIDHeader)
	if generated == "" {
		t.Fatal("the response carries no X-Request-Id")
	}

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, h.http.URL+"/v1/requests/access-log-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenPM)
	req.Header.Set(bot.RequestIDHeader, "lb-7f3a:42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.Header.Get(bot.RequestIDHeader); got != "lb-7f3a:42" {
		t.Errorf("X-Request-Id echoed %q, want the client's", got)
	}
	req.Header.Set(bot.RequestIDHeader, "not safe to log "+strings.Repeat("x", 200))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	replaced := resp.Header.Get(bot.RequestIDHeader)
	if replaced == "" || strings.Contains(replaced, " ") {
		t.Errorf("an unusable X-Request-Id was echoed as %q, want a generated one", replaced)
	}
	health := h.do(http.MethodGet, "/healthz", "", "", nil)
	if health.Status != http.StatusOK {
		t.Fatal(health.Status)
	}

	lines := logs.withMessage("http request")
	if len(lines) != 4 {
		t.Fatalf("%d access log lines, want 4 (one per request): %v", len(lines), lines)
	}
	for i, want := range []map[string]string{
		{"method": "POST", "route": "/v1/requests", "status": "202", "http_request_id": generated, "request_id": "access-log-1"},
		{"method": "GET", "route": "/v1/requests/{id}", "status": "200", "http_request_id": "lb-7f3a:42", "request_id": "access-log-1"},
		{"method": "GET", "route": "/v1/requests/{id}", "status": "200", "http_request_id": replaced, "request_id": "access-log-1"},
		{"method": "GET", "route": "/healthz", "status": "200", "http_request_id": health.Header.Get(bot.RequestIDHeader)},
	} {
		got := lines[i]
		for k, v := range want {
			if got[k] != v {
				t.Errorf("access log line %d: %s=%q, want %q (%v)", i, k, got[k], v, got)
			}
		}
		if got["duration_ms"] == "" || got["level"] != map[bool]string{true: "INFO", false: "DEBUG"}[i < 3] {
			t.Errorf("access log line %d lacks a duration or has the wrong level: %v", i, got)
		}
		if i == 3 && got["request_id"] != "" {
			t.Errorf("/healthz logged an AAH request id: %v", got)
		}
	}
	// The intake's own line carries the same request_id: one search ties
	// the access log to the request's intake, jobs and callbacks.
	if intake := logs.withMessage("intake: request accepted"); len(intake) != 1 || intake[0]["request_id"] != "access-log-1" {
		t.Errorf("intake log lines %v, want one with request_id=access-log-1", intake)
	}
}

// withMessage are the attributes (and "level") of every record with
// message msg, in order.
func (r *runLogs) withMessage(msg string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		m := map[string]string{"level": rec.Level.String()}
		rec.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}
