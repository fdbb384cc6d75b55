package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
)

// The runner's settling rules, without Redis: a fake queue hands out one
// job and records what the runner did with it. (The runner over the real
// queue, leases and crashes included, is tested end to end in bot and
// webhook.)
func TestRunnerSettlesEachOutcome(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		kind    string
		attempt int
		err     error
		want    string // what the queue saw
		gaveUp  bool
		counted bool // the retry counts as a failed attempt
	}{
		"done":                       {kind: "k", attempt: 1, want: "ack"},
		"free retry, pacing":         {kind: "k", attempt: 1, err: &jobs.RetryError{After: time.Minute, Free: true}, want: "retry"},
		"free retry past the limit":  {kind: "k", attempt: 3, err: &jobs.RetryError{After: time.Minute, Free: true}, want: "retry"},
		"counted retry":              {kind: "k", attempt: 1, err: &jobs.RetryError{After: time.Minute}, want: "retry", counted: true},
		"counted retry at the limit": {kind: "k", attempt: 3, err: &jobs.RetryError{After: time.Minute}, want: "bury", gaveUp: true},
		"failure with backoff":       {kind: "k", attempt: 2, err: errors.New("boom"), want: "retry", counted: true},
		"last failure":               {kind: "k", attempt: 3, err: errors.New("boom"), want: "bury", gaveUp: true},
		"no handler for the kind":    {kind: "unknown", attempt: 1, want: "bury"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQueue{jobs: []store.Job{{ID: tc.kind + ":r1", Kind: tc.kind, RequestID: "r1", Attempt: tc.attempt}},
				settled: make(chan string, 1)}
			h := &fakeHandler{err: tc.err}
			r, err := jobs.NewRunner(q, jobs.Options{Handlers: map[string]jobs.Handler{"k": h}, MaxAttempts: 3,
				PollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			got := <-q.settled
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got != tc.want {
				t.Errorf("queue saw %s, want %s", got, tc.want)
			}
			if got == "retry" && q.counted() != tc.counted {
				t.Errorf("retry counted as a failed attempt: %v, want %v", q.counted(), tc.counted)
			}
			if h.gaveUp() != tc.gaveUp {
				t.Errorf("GaveUp called: %v, want %v", h.gaveUp(), tc.gaveUp)
			}
		})
	}
}

// A runner needs a queue and at least one handler.
func TestNewRunnerNeedsAQueueAndHandlers(t *testing.T) {
	t.Parallel()
	if _, err := jobs.NewRunner(nil, jobs.Options{Handlers: map[string]jobs.Handler{"k": &fakeHandler{}}}); err == nil {
		t.Error("a runner without a queue was built")
	}
	if _, err := jobs.NewRunner(&fakeQueue{}, jobs.Options{}); err == nil {
		t.Error("a runner without handlers was built")
	}
}

// fakeQueue hands out its jobs on the first claim and reports the first
// settlement on settled.
type fakeQueue struct {
	mu          sync.Mutex
	jobs        []store.Job
	countedFlag bool
	settled     chan string
}

func (q *fakeQueue) Claim(_ context.Context, _, max int, _ time.Duration) ([]store.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.jobs))
	out := q.jobs[:n]
	q.jobs = q.jobs[n:]
	return out, nil
}

func (q *fakeQueue) settle(op string) {
	select {
	case q.settled <- op:
	default:
	}
}

func (q *fakeQueue) Ack(context.Context, store.Job) error { q.settle("ack"); return nil }
func (q *fakeQueue) Retry(_ context.Context, _ store.Job, _ time.Time, counted bool) error {
	q.mu.Lock()
	q.countedFlag = counted
	q.mu.Unlock()
	q.settle("retry")
	return nil
}
func (q *fakeQueue) Bury(context.Context, store.Job, string) error { q.settle("bury"); return nil }
func (q *fakeQueue) counted() bool                                 { q.mu.Lock(); defer q.mu.Unlock(); return q.countedFlag }

// fakeHandler returns err and records whether it was given up on.
type fakeHandler struct {
	err        error
	mu         sync.Mutex
	gaveUpFlag bool
}

func (h *fakeHandler) Handle(context.Context, store.Job) error { return h.err }
func (h *fakeHandler) GaveUp(context.Context, store.Job, error) {
	h.mu.Lock()
	h.gaveUpFlag = true
	h.mu.Unlock()
}
func (h *fakeHandler) gaveUp() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.gaveUpFlag }
