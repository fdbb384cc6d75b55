package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

const lease = 30 * time.Second

// newJob creates a request and returns its id, shard and the claimed post job.
func (f fixture) newJob(t *testing.T, id string) (string, int, store.Job) {
	t.Helper()
	f.mustCreate(t, newReq(id, "agent-a"))
	shard := shardOf(id)
	return id, shard, f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
}

func wantAttempt(t *testing.T, j store.Job, attempt int) {
	t.Helper()
	if j.Attempt != attempt {
		t.Errorf("job %s Attempt = %d; want %d", j.ID, j.Attempt, attempt)
	}
}

func testJobs(t *testing.T, newStore backend) {
	t.Run("only due jobs are claimed; attempts count across retries", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, j := f.newJob(t, "req-jobs-retry")
		post := "post:" + id
		wantAttempt(t, j, 1)

		next := t0.Add(10 * time.Second)
		if err := f.s.Retry(f.ctx, j, next, true); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		f.wantDepth(t, store.QueueDepth{}) // scheduled, not due, not in flight
		f.claimExactly(t, shard, 10, lease)
		f.clk.Set(next.Add(-time.Millisecond))
		f.claimExactly(t, shard, 10, lease)
		f.clk.Set(next)
		j = f.claimExactly(t, shard, 10, lease, post)[0]
		wantAttempt(t, j, 2)

		if err := f.s.Retry(f.ctx, j, f.clk.Now().Add(time.Second), true); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		f.clk.Advance(time.Second)
		j = f.claimExactly(t, shard, 10, lease, post)[0]
		wantAttempt(t, j, 3)

		// Pacing and rate limits are not failures: attempts stay at 3.
		for range 3 {
			if err := f.s.Retry(f.ctx, j, f.clk.Now(), false); err != nil {
				t.Fatalf("Retry(free): %v", err)
			}
			j = f.claimExactly(t, shard, 10, lease, post)[0]
			wantAttempt(t, j, 3)
		}

		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		f.clk.Advance(time.Hour)
		f.wantDepth(t, store.QueueDepth{})
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after Ack = %q; want none", jobIDs(jobs))
		}
	})

	t.Run("an ack tells when the shard's earliest job is due", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		_, shard, j := f.newJob(t, "req-acknext")
		sameShard := func(n int) string { // the n-th other id in the shard
			for i := 0; ; i++ {
				if other := fmt.Sprintf("req-acknext-%d", i); shardOf(other) == shard {
					if n--; n < 0 {
						return other
					}
				}
			}
		}
		if next, err := f.s.AckNext(f.ctx, j); err != nil || !next.IsZero() {
			t.Fatalf("AckNext with no other job = %v, %v; want none (zero)", next, err)
		}
		if _, err := f.s.AckNext(f.ctx, j); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("AckNext again = %v; want ErrLeaseLost", err)
		}
		// Another request's post, told to come back in 10s.
		_, _, later := f.newJob(t, sameShard(0))
		back := f.clk.Now().Add(10 * time.Second)
		if err := f.s.Retry(f.ctx, later, back, false); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		_, _, k := f.newJob(t, sameShard(1))
		_, _, k2 := f.newJob(t, sameShard(2))
		if next, err := f.s.AckNext(f.ctx, k); err != nil || !next.Equal(back) {
			t.Errorf("AckNext = %v, %v; want the post told to come back (%v)", next, err, back)
		}
		// Once it is due, an ack tells so.
		f.clk.Set(back)
		if next, err := f.s.AckNext(f.ctx, k2); err != nil || next.After(f.clk.Now()) {
			t.Errorf("AckNext = %v, %v; want a job due by now (%v)", next, err, f.clk.Now())
		}
	})

	t.Run("free retries from the first attempt stay at 1", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, j := f.newJob(t, "req-jobs-free")
		for range 3 {
			if err := f.s.Retry(f.ctx, j, f.clk.Now(), false); err != nil {
				t.Fatalf("Retry(free): %v", err)
			}
			j = f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
			wantAttempt(t, j, 1)
		}
		if err := f.s.Retry(f.ctx, j, f.clk.Now(), true); err != nil {
			t.Fatal(err)
		}
		j = f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
		wantAttempt(t, j, 2)
	})

	t.Run("Ack with the current lease completes the job once", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		_, shard, j := f.newJob(t, "req-jobs-ack")
		f.wantDepth(t, store.QueueDepth{InFlight: 1})
		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		f.wantDepth(t, store.QueueDepth{})
		for name, op := range map[string]func() error{
			"Ack":   func() error { return f.s.Ack(f.ctx, j) },
			"Retry": func() error { return f.s.Retry(f.ctx, j, f.clk.Now(), true) },
			"Bury":  func() error { return f.s.Bury(f.ctx, j, "late") },
		} {
			if err := op(); !errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("%s after Ack: err %v; want ErrLeaseLost", name, err)
			}
		}
		f.clk.Advance(time.Hour)
		f.wantDepth(t, store.QueueDepth{})
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after Ack = %q; want none", jobIDs(jobs))
		}
		if dead, err := f.s.DeadJobs(f.ctx, shard); err != nil || len(dead) != 0 {
			t.Errorf("DeadJobs = %+v, %v; want none", dead, err)
		}
	})

	t.Run("an expired lease is reclaimed by the next Claim", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, j := f.newJob(t, "req-jobs-crash")
		wantAttempt(t, j, 1)
		// The worker "crashes": it never acks. The lease holds until it expires.
		f.clk.Set(t0.Add(lease - time.Millisecond))
		f.claimExactly(t, shard, 10, lease)
		f.wantDepth(t, store.QueueDepth{InFlight: 1})
		f.clk.Set(t0.Add(lease))
		j2 := f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
		wantAttempt(t, j2, 2) // reclaims count as attempts
		if err := f.s.Ack(f.ctx, j2); err != nil {
			t.Fatalf("Ack of the reclaimed job: %v", err)
		}
		f.wantDepth(t, store.QueueDepth{})
	})

	t.Run("a stale lease is fenced off", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, old := f.newJob(t, "req-jobs-fence")
		f.clk.Set(t0.Add(lease + time.Second))
		cur := f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
		for name, op := range map[string]func() error{
			"Ack":   func() error { return f.s.Ack(f.ctx, old) },
			"Retry": func() error { return f.s.Retry(f.ctx, old, f.clk.Now(), true) },
			"Bury":  func() error { return f.s.Bury(f.ctx, old, "stale") },
		} {
			if err := op(); !errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("%s with the stale lease: err %v; want ErrLeaseLost", name, err)
			}
		}
		// Nothing changed for the new owner.
		f.wantDepth(t, store.QueueDepth{InFlight: 1})
		f.claimExactly(t, shard, 10, lease)
		if dead, err := f.s.DeadJobs(f.ctx, shard); err != nil || len(dead) != 0 {
			t.Errorf("DeadJobs = %+v, %v; want none", dead, err)
		}
		if err := f.s.Ack(f.ctx, cur); err != nil {
			t.Fatalf("Ack by the new owner: %v", err)
		}
		f.clk.Advance(time.Hour)
		f.wantDepth(t, store.QueueDepth{})
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs = %q; want none", jobIDs(jobs))
		}
	})

	t.Run("a job scheduled again while in flight waits for the running one", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, post := f.newJob(t, "req-jobs-inflight")
		sync := "sync:" + id
		// MarkPosted with an older rendered version schedules a sync.
		if err := f.s.MarkPosted(f.ctx, id, "C1", "1.1", 0); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Ack(f.ctx, post); err != nil {
			t.Fatal(err)
		}
		running := f.claimExactly(t, shard, 10, lease, sync)[0]

		// While it runs, the message changes again: the same job id is due.
		f.clk.Advance(time.Second)
		if err := f.s.MarkPosted(f.ctx, id, "C1", "1.1", 0); err != nil {
			t.Fatal(err)
		}
		f.wantDepth(t, store.QueueDepth{Due: 1, InFlight: 1})
		f.claimExactly(t, shard, 10, lease) // a second worker gets nothing
		f.clk.Set(t0.Add(lease - time.Millisecond))
		f.claimExactly(t, shard, 10, lease)

		if err := f.s.Ack(f.ctx, running); err != nil {
			t.Fatalf("Ack of the running sync: %v", err)
		}
		again := f.claimExactly(t, shard, 10, lease, sync)[0]
		wantAttempt(t, again, 1)
		if err := f.s.Ack(f.ctx, again); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Hour)
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs = %q; want none (it runs once more, not twice)", jobIDs(jobs))
		}
	})

	t.Run("Retry keeps an earlier due time scheduled meanwhile", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, post := f.newJob(t, "req-jobs-earlier")
		if err := f.s.MarkPosted(f.ctx, id, "C1", "1.1", 0); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Ack(f.ctx, post); err != nil {
			t.Fatal(err)
		}
		running := f.claimExactly(t, shard, 10, lease, "sync:"+id)[0]
		due := f.clk.Advance(time.Second)
		if err := f.s.MarkPosted(f.ctx, id, "C1", "1.1", 0); err != nil { // due now
			t.Fatal(err)
		}
		if err := f.s.Retry(f.ctx, running, due.Add(time.Hour), true); err != nil {
			t.Fatal(err)
		}
		j := f.claimExactly(t, shard, 10, lease, "sync:"+id)[0]
		wantAttempt(t, j, 2)
	})

	t.Run("Bury dead-letters the job with its attempts and error", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		id, shard, j := f.newJob(t, "req-jobs-bury")
		if err := f.s.Retry(f.ctx, j, f.clk.Now(), true); err != nil {
			t.Fatal(err)
		}
		j = f.claimExactly(t, shard, 10, lease, "post:"+id)[0]
		wantAttempt(t, j, 2)
		diedAt := f.clk.Advance(5 * time.Second)
		if err := f.s.Bury(f.ctx, j, "slack: channel_not_found"); err != nil {
			t.Fatalf("Bury: %v", err)
		}
		dead, err := f.s.DeadJobs(f.ctx, shard)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.DeadJob{{ID: "post:" + id, Attempts: 2, Error: "slack: channel_not_found", DiedAt: diedAt}}
		if len(dead) != 1 || dead[0].ID != want[0].ID || dead[0].Attempts != 2 || dead[0].Error != want[0].Error || !dead[0].DiedAt.Equal(diedAt) {
			t.Errorf("DeadJobs = %+v; want %+v", dead, want)
		}
		f.wantDepth(t, store.QueueDepth{Dead: 1})
		if err := f.s.Ack(f.ctx, j); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Ack after Bury: %v; want ErrLeaseLost", err)
		}
		f.clk.Advance(time.Hour)
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after Bury = %q; want none", jobIDs(jobs))
		}
		for other := range store.Shards {
			if other == shard {
				continue
			}
			if d, err := f.s.DeadJobs(f.ctx, other); err != nil || len(d) != 0 {
				t.Errorf("DeadJobs(shard %d) = %+v, %v; want none", other, d, err)
			}
		}
	})

	t.Run("dead letters are capped at DeadLetterCap, newest first", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore, func(o *store.Options) { o.DeadLetterCap = 3 })
		const shard = 5
		ids := idsInShard("req-dead", shard, 5)
		for _, id := range ids {
			f.mustCreate(t, newReq(id, "agent-a"))
		}
		jobs, err := f.s.Claim(f.ctx, shard, 10, lease)
		if err != nil || len(jobs) != 5 {
			t.Fatalf("Claim = %q, %v; want 5 jobs", jobIDs(jobs), err)
		}
		byID := map[string]store.Job{}
		for _, j := range jobs {
			byID[j.ID] = j
		}
		var want []store.DeadJob
		for i, id := range ids {
			at := f.clk.Advance(time.Second)
			if err := f.s.Bury(f.ctx, byID["post:"+id], fmt.Sprintf("reason %d", i)); err != nil {
				t.Fatalf("Bury %s: %v", id, err)
			}
			want = append([]store.DeadJob{{ID: "post:" + id, Attempts: 1, Error: fmt.Sprintf("reason %d", i), DiedAt: at}}, want...)
		}
		want = want[:3]
		dead, err := f.s.DeadJobs(f.ctx, shard)
		if err != nil {
			t.Fatal(err)
		}
		for i := range dead {
			dead[i].DiedAt = dead[i].DiedAt.UTC()
		}
		if !reflect.DeepEqual(dead, want) {
			t.Errorf("DeadJobs =\n %+v\nwant\n %+v", dead, want)
		}
		f.wantDepth(t, store.QueueDepth{Dead: 3})
	})

	t.Run("Claim respects max and due order, and only its shard", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		const shard = 9
		ids := idsInShard("req-max", shard, 5)
		for i := len(ids) - 1; i >= 0; i-- { // due order differs from id order
			f.clk.Set(t0.Add(time.Duration(len(ids)-i) * time.Millisecond))
			f.mustCreate(t, newReq(ids[i], "agent-a"))
		}
		other := idsInShard("req-other", (shard+1)%store.Shards, 1)[0]
		f.mustCreate(t, newReq(other, "agent-a"))
		f.clk.Advance(time.Second)
		var got []string
		for _, want := range []int{2, 2, 1, 0} {
			jobs, err := f.s.Claim(f.ctx, shard, 2, lease)
			if err != nil || len(jobs) != want {
				t.Fatalf("Claim(max 2) = %q, %v; want %d jobs", jobIDs(jobs), err, want)
			}
			got = append(got, jobIDs(jobs)...)
		}
		var want []string
		for i := len(ids) - 1; i >= 0; i-- {
			want = append(want, "post:"+ids[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("claimed %q; want due order %q", got, want)
		}
		f.claimExactly(t, (shard+1)%store.Shards, 10, lease, "post:"+other)
	})

	t.Run("Claim of an empty shard", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		for shard := range store.Shards {
			f.claimExactly(t, shard, 10, lease)
		}
		f.wantDepth(t, store.QueueDepth{})
	})
}

func testDepth(t *testing.T, newStore backend) {
	t.Run("due, in flight, dead and oldest due across shards", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		var ids []string
		used := map[int]bool{}
		for k := 0; len(ids) < 3; k++ {
			id := fmt.Sprintf("req-depth-%d", k)
			if !used[shardOf(id)] {
				used[shardOf(id)] = true
				ids = append(ids, id)
			}
		}
		for i, id := range ids { // received at t0, t0+10ms, t0+20ms
			f.clk.Set(t0.Add(time.Duration(10*i) * time.Millisecond))
			f.mustCreate(t, newReq(id, "agent-a"))
		}
		f.clk.Set(t0.Add(100 * time.Millisecond))
		f.wantDepth(t, store.QueueDepth{Due: 3, OldestDue: 100 * time.Millisecond})

		j0 := f.claimExactly(t, shardOf(ids[0]), 10, lease, "post:"+ids[0])[0]
		f.wantDepth(t, store.QueueDepth{Due: 2, InFlight: 1, OldestDue: 90 * time.Millisecond})
		if err := f.s.Bury(f.ctx, j0, "gone"); err != nil {
			t.Fatal(err)
		}
		f.wantDepth(t, store.QueueDepth{Due: 2, Dead: 1, OldestDue: 90 * time.Millisecond})

		j1 := f.claimExactly(t, shardOf(ids[1]), 10, lease, "post:"+ids[1])[0]
		later := f.clk.Now().Add(time.Hour)
		if err := f.s.Retry(f.ctx, j1, later, true); err != nil {
			t.Fatal(err)
		}
		f.wantDepth(t, store.QueueDepth{Due: 1, Dead: 1, OldestDue: 80 * time.Millisecond})

		// A job due exactly now counts as due but has not waited.
		f.clk.Set(later)
		f.wantDepth(t, store.QueueDepth{Due: 2, Dead: 1, OldestDue: later.Sub(t0.Add(20 * time.Millisecond))})

		for _, id := range ids[1:] {
			j := f.claimExactly(t, shardOf(id), 10, lease, "post:"+id)[0]
			if id == ids[2] {
				if err := f.s.Bury(f.ctx, j, "gone"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := f.s.Ack(f.ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		f.wantDepth(t, store.QueueDepth{Dead: 2})
	})
}
