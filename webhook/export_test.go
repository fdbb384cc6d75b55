package webhook

import (
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Internals the external tests check directly.
var (
	ParseRetryAfter = parseRetryAfter
	Jitter          = jitter
)

// NextAttemptAfter429 is when the deliverer's first retry is due after an
// attempt that began at start, took took, and was answered 429 with
// Retry-After: retryAfter, on a one-step schedule of wait.
func NextAttemptAfter429(wait time.Duration, start time.Time, took time.Duration, retryAfter string) time.Time {
	d := &Deliverer{schedule: []time.Duration{wait}}
	var a store.DeliveryAttempt
	d.settle(attemptResult{at: start, duration: took, status: 429, retryAfter: retryAfter}, 1, &a)
	return *a.NextAttemptAt
}

// routes records the patterns registered.
type routes []string

func (r *routes) HandleFunc(pattern string, _ func(http.ResponseWriter, *http.Request)) {
	*r = append(*r, pattern)
}

// Routes are the patterns a.Register mounts.
func Routes(a *API) []string {
	var r routes
	a.register(&r)
	return r
}
