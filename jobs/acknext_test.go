package jobs_test

import (
	"context"
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
			q := &ackQueue{due: map[string]time.Time{}, ran: make(chan string, 2), after: after}
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

// ackQueue holds jobs of kind "k" with their due times, all in the shard of
// request "req"; running "k:req" schedules "k:req:next" after that much.
type ackQueue struct {
	settlesQuietly
	after time.Duration

	mu     sync.Mutex
	due    map[string]time.Time
	claims []int
	ran    chan string
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

// earliest is the earliest due time at or after from (zero: none).
func (q *ackQueue) earliest(from time.Time) (at time.Time) {
	for _, d := range q.due {
		if !d.Before(from) && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	return at
}

func (q *ackQueue) ClaimNext(_ context.Context, shard, max int, _ time.Duration) ([]store.Job, time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims = append(q.claims, shard)
	if shard != store.ShardOf("req") {
		return nil, time.Time{}, nil
	}
	now := time.Now()
	var out []store.Job
	for id, d := range q.due {
		if !d.After(now) && len(out) < max {
			out = append(out, store.Job{ID: id, Kind: "k", RequestID: "req", Attempt: 1, Shard: shard, Due: d})
			delete(q.due, id)
		}
	}
	return out, q.earliest(now.Add(time.Nanosecond)), nil
}

func (q *ackQueue) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error) {
	jobs, _, err := q.ClaimNext(ctx, shard, max, lease)
	return jobs, err
}

func (q *ackQueue) AckNext(context.Context, store.Job) (time.Time, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.earliest(time.Time{}), nil
}

func (q *ackQueue) Handle(_ context.Context, j store.Job) error {
	if j.ID == "k:req" {
		q.add("k:req:next", time.Now().Add(q.after))
	}
	q.ran <- j.ID
	return nil
}
