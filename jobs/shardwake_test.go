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

// A runner woken for one request's jobs (WakeFor: intake, a click, a post
// handing its channel's turn on) claims that request's shard only, not all
// sixteen; Wake still claims every shard, and so does the next poll.
func TestRunnerWokenForARequestClaimsItsShardOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const poll = time.Hour // no poll during the test, but the last step's
		q := &shardQueue{jobs: map[int][]store.Job{}, ran: make(chan string, 4)}
		r, err := jobs.NewRunner(q, jobs.Options{Handlers: map[string]jobs.Handler{"k": q}, PollInterval: poll})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
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
		synctest.Wait()
		// Its shard is claimed, and again once its job ran (it may have
		// scheduled the request's next): no other shard is.
		for _, s := range q.takeClaims() {
			if s != shard {
				t.Errorf("claimed shard %d, woken for shard %d only", s, shard)
			}
		}

		// A job in another shard, added with no wake for it (as by another
		// process), is found by Wake, which claims every shard.
		const other = "req-other"
		if store.ShardOf(other) == shard {
			t.Fatal("pick ids in different shards")
		}
		q.add(store.ShardOf(other), other)
		synctest.Wait()
		if got := q.takeClaims(); len(got) != 0 {
			t.Fatalf("claims with no wake: %v", got)
		}
		r.Wake()
		if got := <-q.ran; got != other {
			t.Fatalf("ran %q", got)
		}
		synctest.Wait()
		if got := q.takeClaims(); len(got) < store.Shards {
			t.Errorf("Wake: %d claims, want every shard (%d)", len(got), store.Shards)
		}

		// And with no wake at all, by the next poll.
		const late = "req-polled"
		q.add(store.ShardOf(late), late)
		if got := <-q.ran; got != late { // the bubble's clock runs to the poll
			t.Fatalf("ran %q", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// shardQueue holds jobs of kind "k" per shard, due at once, and records
// which shard each claim asked. Its claims tell there is no later job.
type shardQueue struct {
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
func (q *shardQueue) Ack(context.Context, store.Job) error                    { return nil }
func (q *shardQueue) Retry(context.Context, store.Job, time.Time, bool) error { return nil }
func (q *shardQueue) Bury(context.Context, store.Job, string) error           { return nil }
func (q *shardQueue) Handle(_ context.Context, j store.Job) error             { q.ran <- j.RequestID; return nil }
func (q *shardQueue) GaveUp(context.Context, store.Job, error)                {}
