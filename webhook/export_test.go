package webhook

import (
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
