package bot

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/webhook"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// HTTP metrics and the access log. Every request the service serves is
// counted and timed by route, the pattern of the mux that matched it
// ("/v1/requests/{id}"), never by its path: a label per request id would
// grow without bound. Every API request (/v1/, /slack/, /mcp) gets one access
// log line at INFO, the probes and everything else one at DEBUG.

// RequestIDHeader carries the HTTP request id: the client's when it sends a
// usable one, else one generated here; the response echoes it.
const RequestIDHeader = "X-Request-Id"

// routeUnmatched is the route label of requests no pattern matched.
const routeUnmatched = "unmatched"

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_http_requests_total",
			Help: "HTTP requests served, by route (the matched pattern, \"" + routeUnmatched + "\" for none), method and status code.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "approvalbot_http_request_duration_seconds",
			Help: "Time to serve an HTTP request, by route and method (long polls and event streams last as long as they wait).",
			// 1 ms to about 100 s: API calls, Slack's 3 s ack deadline, long polls.
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"route", "method"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// observeHTTP wraps next (the service's mux) with the request id, the
// metrics and the access log.
func observeHTTP(m *httpMetrics, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		reqID := r.Header.Get(RequestIDHeader)
		if !validRequestID(reqID) {
			reqID = uuid.NewString()
		}
		w.Header().Set(RequestIDHeader, reqID)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		took := time.Since(start)

		// The mux has set the pattern (and path values) on r by now.
		route := routeOf(r.Pattern)
		method := methodLabel(r.Method)
		status := rec.statusCode()
		m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(route, method).Observe(took.Seconds())

		level := slog.LevelDebug
		if strings.HasPrefix(route, "/v1/") || strings.HasPrefix(route, "/slack/") || route == "/mcp" {
			level = slog.LevelInfo
		}
		if !log.Enabled(r.Context(), level) {
			return
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			slog.Int64("bytes", rec.bytes), slog.String("http_request_id", reqID)}
		if id := aahRequestID(r, rec.Header()); id != "" {
			// The same key as the intake, job and callback logs of this
			// request: one search finds them all.
			attrs = append(attrs, slog.String("request_id", id))
		}
		log.LogAttrs(r.Context(), level, "http request", attrs...)
	})
}

// routeOf is the route label of a mux pattern: "GET /v1/requests/{id}"
// becomes "/v1/requests/{id}" (the method is a label of its own).
func routeOf(pattern string) string {
	// "/v1/" is the API's catch-all, which answers paths and methods no
	// endpoint takes with a 404 or 405 problem: no route was matched.
	if pattern == "" || pattern == webhook.CatchAllPattern {
		return routeUnmatched
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// methodLabel bounds the method label: a client may send any token as a
// method.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// validRequestID accepts a client's X-Request-Id that is safe to log and
// echo: 1 to 128 characters of letters, digits and ._:-.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// aahRequestID is the AAH request id a request concerns: its {id} path
// value, or for intake the id in the Location of the request it created.
func aahRequestID(r *http.Request, h http.Header) string {
	if strings.Contains(r.Pattern, "{id}") {
		return r.PathValue("id")
	}
	if id, ok := strings.CutPrefix(h.Get("Location"), "/v1/requests/"); ok && r.Pattern == "POST /v1/requests" {
		return id
	}
	return ""
}

// statusRecorder remembers the status code and counts the body bytes. It
// passes Flush on (event streams, the sandbox's live updates) and unwraps
// for http.ResponseController (write deadlines of long polls).
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// statusCode is what the client was answered: 200 when the handler wrote
// nothing at all (net/http's default).
func (s *statusRecorder) statusCode() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
