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
	settlesQuietly
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

func (q *dueQueue) Handle(context.Context, store.Job) error {
	q.ran <- time.Now()
	return nil
}

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
	settlesQuietly // but Retry
	mu             sync.Mutex
	due            time.Time // zero while the job is claimed or done
	ran            int
	runs           chan time.Time
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
func (q *retryQueue) Retry(_ context.Context, _ store.Job, at time.Time, _ bool) error {
	q.mu.Lock()
	q.due = at
	q.mu.Unlock()
	return nil
}

func (q *retryQueue) Handle(context.Context, store.Job) error {
	q.runs <- time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ran++; q.ran == 1 {
		return &jobs.RetryError{After: 40 * time.Millisecond, Free: true}
	}
	return nil
}

// start runs a runner over q, which handles its jobs of kind "k" too, and
// returns a stop that ends it.
func start(t *testing.T, q interface {
	jobs.Queue
	jobs.Handler
}, poll time.Duration) (stop func()) {
	_, stop = startRunner(t, q, poll)
	return stop
}

// startRunner is start that returns the runner too.
func startRunner(t *testing.T, q interface {
	jobs.Queue
	jobs.Handler
}, poll time.Duration) (*jobs.Runner, func()) {
	t.Helper()
	r, err := jobs.NewRunner(q, jobs.Options{Handlers: map[string]jobs.Handler{"k": q}, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return r, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// A runner woken for one request's jobs (WakeFor: intake, a click, a post
// handing its channel's turn on) claims that request's shard only, not all
// sixteen. Once it passed shards over, a pass over every shard follows
// 50 ms (fullPassEvery) after the last, not at the next poll: a job it was
// not woken for is found then. Wake claims every shard at once.
func TestRunnerWokenForARequestClaimsItsShardOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const poll = time.Hour // never reached: every look below comes sooner
		t0 := time.Now()
		q := &shardQueue{jobs: map[int][]store.Job{}, ran: make(chan string, 4)}
		r, stop := startRunner(t, q, poll)
		defer stop()
		synctest.Wait() // the first look: every shard, nothing there
		if got := q.takeClaims(); len(got) != store.Shards {
			t.Fatalf("first look: %d claims, want one per shard (%d)", len(got), store.Shards)
		}

		// A new request's job, and a wake for it.
		const id = "req-woken"
		shard := store.ShardOf(id)
		q.add(shard, id)
		r.WakeFor(id)
		if got := <-q.ran; got != id {
			t.Fatalf("ran %q", got)
		}
		// A job in another shard, added with no wake for it (as by another
		// process, or a withdrawal handing a channel's turn on).
		const other = "req-other"
		if store.ShardOf(other) == shard {
			t.Fatal("pick ids in different shards")
		}
		q.add(store.ShardOf(other), other)
		synctest.Wait()
		// The woken shard was claimed, and again once its job ran (it may
		// have scheduled the request's next); no other shard was yet.
		for _, s := range q.takeClaims() {
			if s != shard {
				t.Errorf("claimed shard %d, woken for shard %d only", s, shard)
			}
		}
		if got := <-q.ran; got != other {
			t.Fatalf("ran %q", got)
		}
		if at := time.Since(t0); at != 50*time.Millisecond {
			t.Errorf("the job no wake was for ran at +%v, want +50ms (the pass over every shard after the first)", at)
		}

		synctest.Wait()
		q.takeClaims()
		r.Wake()
		synctest.Wait()
		if got := q.takeClaims(); len(got) != store.Shards {
			t.Errorf("Wake: %d claims, want every shard (%d)", len(got), store.Shards)
		}
	})
}

// shardQueue holds jobs of kind "k" per shard, due at once, and records
// which shard each claim asked. Its claims tell there is no later job.
type shardQueue struct {
	settlesQuietly
	mu     sync.Mutex
	jobs   map[int][]store.Job
	claims []int
	ran    chan string
}

func (q *shardQueue) add(shard int, id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs[shard] = append(q.jobs[shard], store.Job{ID: "k:" + id, Kind: "k", RequestID: id, Attempt: 1, Shard: shard})
}

func (q *shardQueue) takeClaims() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.claims
	q.claims = nil
	return out
}

func (q *shardQueue) ClaimNext(_ context.Context, shard, max int, _ time.Duration) ([]store.Job, time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims = append(q.claims, shard)
	n := min(max, len(q.jobs[shard]))
	out := q.jobs[shard][:n]
	q.jobs[shard] = q.jobs[shard][n:]
	return out, time.Time{}, nil
}

func (q *shardQueue) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error) {
	jobs, _, err := q.ClaimNext(ctx, shard, max, lease)
	return jobs, err
}
func (q *shardQueue) Handle(_ context.Context, j store.Job) error { q.ran <- j.RequestID; return nil }

// settlesQuietly is the settling half of a test queue that records
// nothing: ack, retry and bury succeed, and a job given up is not noted.
type settlesQuietly struct{}

func (settlesQuietly) Ack(context.Context, store.Job) error                    { return nil }
func (settlesQuietly) Retry(context.Context, store.Job, time.Time, bool) error { return nil }
func (settlesQuietly) Bury(context.Context, store.Job, string) error           { return nil }
func (settlesQuietly) GaveUp(context.Context, store.Job, error)                {}
