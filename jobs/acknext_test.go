package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// A job that schedules its request's next one (a post, its request's Home
// tabs update a second later) is acked by a queue that tells when the
// shard's earliest job is due (jobs.NextAcker): the runner claims the shard
// then, not at once to find out (one claim of the shard per job, where
// there were two, issue #17), and a next job due already is claimed at once.
func TestRunnerToldByAnAckClaimsTheShardWhenItsNextJobIsDue(t *testing.T) {
	t.Parallel()
	for _, after := range []time.Duration{30 * time.Millisecond, 0} {
		synctest.Test(t, func(t *testing.T) {
			const poll = time.Hour // never reached
			t0 := time.Now()
			q := newAckQueue(func(q *ackQueue, j store.Job) {
				if j.ID == "k:req" {
					q.add("k:req:next", time.Now().Add(after)) // its request's next job
				}
			})
			r, stop := startRunner(t, q, poll)
			defer stop()
			synctest.Wait() // the first look: every shard, nothing there
			q.takeClaims()

			shard := store.ShardOf("req")
			q.add("k:req", t0)
			r.WakeFor("req")
			if got := <-q.ran; got != "k:req" {
				t.Fatalf("ran %q first", got)
			}
			if got := <-q.ran; got != "k:req:next" {
				t.Fatalf("ran %q second", got)
			}
			if at := time.Since(t0); at != after {
				t.Errorf("%v after: the next job ran at +%v, want when it was due", after, at)
			}
			// One claim of the shard for the first job (woken for it) and
			// one for the next (due), none between.
			if got := q.takeClaims(); len(got) != 2 || got[0] != shard || got[1] != shard {
				t.Errorf("%v after: claims of shards %v, want [%d %d]", after, got, shard, shard)
			}
		})
	}
}

// A job whose ack tells its shard's next still leaves a job it made due in
// another shard with no wake for it (a post leaving its channel's queue
// hands the turn to the next post, wherever its job is) to the pass over
// every shard, which comes as soon as fullPassEvery has passed: here at
// once, the job having run longer than that.
func TestRunnerToldByAnAckStillFindsAJobDueInAnotherShard(t *testing.T) {
	t.Parallel()
	other := func() string {
		for i := 0; ; i++ {
			if id := fmt.Sprintf("req-%d", i); store.ShardOf(id) != store.ShardOf("req") {
				return id
			}
		}
	}()
	const run = 200 * time.Millisecond // longer than fullPassEvery
	synctest.Test(t, func(t *testing.T) {
		const poll = time.Hour // never reached
		q := newAckQueue(func(q *ackQueue, j store.Job) {
			if j.ID == "k:req" {
				time.Sleep(run)
				q.add("k:"+other, time.Now()) // with no wake for it
			}
		})
		r, stop := startRunner(t, q, poll)
		defer stop()
		synctest.Wait() // the first look: every shard, nothing there
		q.add("k:req", time.Now())
		r.WakeFor("req")
		if got := <-q.ran; got != "k:req" {
			t.Fatalf("ran %q first", got)
		}
		end := time.Now().Add(run)
		if got := <-q.ran; got != "k:"+other {
			t.Fatalf("ran %q second", got)
		}
		if late := time.Since(end); late != 0 {
			t.Errorf("the job made due in another shard ran %v after it was, want at once", late)
		}
	})
}

// ackQueue holds jobs of kind "k" ("k:<request id>[:…]") with their due
// times, tells with each claim and each ack when the shard's next is due
// (jobs.NextAcker), and is their handler: a run is reported on ran, then
// does what then says.
type ackQueue struct {
	settlesQuietly
	then func(q *ackQueue, j store.Job)

	mu     sync.Mutex
	due    map[string]time.Time
	claims []int
	ran    chan string
}

func newAckQueue(then func(q *ackQueue, j store.Job)) *ackQueue {
	return &ackQueue{then: then, due: map[string]time.Time{}, ran: make(chan string, 2)}
}

// requestOf is the request of job id.
func requestOf(id string) string {
	req, _, _ := strings.Cut(strings.TrimPrefix(id, "k:"), ":")
	return req
}

func (q *ackQueue) add(id string, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due[id] = at
}

func (q *ackQueue) takeClaims() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.claims
	q.claims = nil
	return out
}

// earliest is the earliest due time of shard's jobs at or after from
// (zero: none).
func (q *ackQueue) earliest(shard int, from time.Time) (at time.Time) {
	for id, d := range q.due {
		if store.ShardOf(requestOf(id)) == shard && !d.Before(from) && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	return at
}

func (q *ackQueue) ClaimNext(_ context.Context, shard, max int, _ time.Duration) ([]store.Job, time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims = append(q.claims, shard)
	now := time.Now()
	var out []store.Job
	for id, d := range q.due {
		if req := requestOf(id); store.ShardOf(req) == shard && !d.After(now) && len(out) < max {
			out = append(out, store.Job{ID: id, Kind: "k", RequestID: req, Attempt: 1, Shard: shard, Due: d})
			delete(q.due, id)
		}
	}
	return out, q.earliest(shard, now.Add(time.Nanosecond)), nil
}

func (q *ackQueue) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error) {
	jobs, _, err := q.ClaimNext(ctx, shard, max, lease)
	return jobs, err
}

func (q *ackQueue) AckNext(_ context.Context, j store.Job) (time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.earliest(j.Shard, time.Time{}), nil
}

func (q *ackQueue) Handle(_ context.Context, j store.Job) error {
	q.ran <- j.ID
	q.then(q, j)
	return nil
}
