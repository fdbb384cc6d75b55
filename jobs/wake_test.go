package jobs_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
)

// An idle runner sleeps until the earliest job its claims saw due, not a
// whole poll interval, and never longer than the poll interval (another
// process may add jobs). The bubble's clock is fake, so the times compared
// are exact, whatever the machine's speed.
func TestRunnerWakesAtTheEarliestDueJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		q := &dueQueue{due: t0.Add(37 * time.Millisecond), ran: make(chan time.Time, 1)}
		stop := start(t, q, time.Second)
		if ran := <-q.ran; !ran.Equal(q.due) {
			t.Errorf("the job ran %v after the start, want when it was due (%v)", ran.Sub(t0), q.due.Sub(t0))
		}
		stop()
		// Before the job was due the runner looked once (one claim per
		// shard), then slept until it was due: no poll in between.
		if n := q.claimsBefore(q.due); n != store.Shards {
			t.Errorf("%d claims before the job was due, want one round (%d)", n, store.Shards)
		}
	})
}

// A job due after the poll interval does not lengthen the sleep: the
// runner still looks at least every poll interval (+25% jitter).
func TestRunnerStillPollsWhenTheNextJobIsFar(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		const poll = time.Second
		q := &dueQueue{due: t0.Add(time.Hour), ran: make(chan time.Time, 1)}
		stop := start(t, q, poll)
		time.Sleep(10 * poll)
		stop()
		// In 10 poll intervals, at most 1.25 intervals between rounds.
		if n := q.claimsBefore(t0.Add(10 * poll)); n < 8*store.Shards {
			t.Errorf("%d claims in 10 poll intervals, want at least 8 rounds of %d", n, store.Shards)
		}
	})
}

// dueQueue holds one job of kind "k", due at due, and is its handler too.
// Every claim reports the job's due time while it waits.
type dueQueue struct {
	due time.Time
	ran chan time.Time

	mu      sync.Mutex
	claimed bool
	claims  []time.Time
}

func (q *dueQueue) ClaimNext(_ context.Context, _, _ int, _ time.Duration) ([]store.Job, time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.claims = append(q.claims, now)
	switch {
	case q.claimed:
		return nil, time.Time{}, nil
	case now.Before(q.due):
		return nil, q.due, nil
	}
	q.claimed = true
	return []store.Job{{ID: "k:r1", Kind: "k", RequestID: "r1", Attempt: 1, Due: q.due}}, time.Time{}, nil
}

func (q *dueQueue) claimsBefore(t time.Time) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, c := range q.claims {
		if c.Before(t) {
			n++
		}
	}
	return n
}

func (q *dueQueue) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error) {
	jobs, _, err := q.ClaimNext(ctx, shard, max, lease)
	return jobs, err
}
func (q *dueQueue) Ack(context.Context, store.Job) error                    { return nil }
func (q *dueQueue) Retry(context.Context, store.Job, time.Time, bool) error { return nil }
func (q *dueQueue) Bury(context.Context, store.Job, string) error           { return nil }

func (q *dueQueue) Handle(context.Context, store.Job) error {
	q.ran <- time.Now()
	return nil
}
func (q *dueQueue) GaveUp(context.Context, store.Job, error) {}

// A job the runner itself rescheduled runs when it is due, although the
// claims of the runner's last round could not see it: it does not wait for
// the next poll.
func TestRunnerWakesForAJobItRescheduled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		q := &retryQueue{due: t0, runs: make(chan time.Time, 2)}
		stop := start(t, q, time.Second)
		first, second := <-q.runs, <-q.runs
		stop()
		if !first.Equal(t0) || second.Sub(first) != 40*time.Millisecond {
			t.Errorf("runs at +%v and +%v, want +0s and +40ms (when rescheduled to)", first.Sub(t0), second.Sub(t0))
		}
	})
}

// retryQueue holds one job of kind "k" that asks, on its first run, to run
// again 40ms later. Its claims never tell when the next job is due.
type retryQueue struct {
	mu   sync.Mutex
	due  time.Time // zero while the job is claimed or done
	ran  int
	runs chan time.Time
}

func (q *retryQueue) Claim(_ context.Context, _, _ int, _ time.Duration) ([]store.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.due.IsZero() || time.Now().Before(q.due) {
		return nil, nil
	}
	q.due = time.Time{}
	return []store.Job{{ID: "k:r1", Kind: "k", RequestID: "r1", Attempt: 1}}, nil
}
func (q *retryQueue) Ack(context.Context, store.Job) error { return nil }
func (q *retryQueue) Retry(_ context.Context, _ store.Job, at time.Time, _ bool) error {
	q.mu.Lock()
	q.due = at
	q.mu.Unlock()
	return nil
}
func (q *retryQueue) Bury(context.Context, store.Job, string) error { return nil }

func (q *retryQueue) Handle(context.Context, store.Job) error {
	q.runs <- time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ran++; q.ran == 1 {
		return &jobs.RetryError{After: 40 * time.Millisecond, Free: true}
	}
	return nil
}
func (q *retryQueue) GaveUp(context.Context, store.Job, error) {}

// start runs a runner over q, which handles its jobs of kind "k" too, and
// returns a stop that ends it.
func start(t *testing.T, q interface {
	jobs.Queue
	jobs.Handler
}, poll time.Duration) (stop func()) {
	t.Helper()
	r, err := jobs.NewRunner(q, jobs.Options{Handlers: map[string]jobs.Handler{"k": q}, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
