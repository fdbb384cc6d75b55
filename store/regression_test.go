package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// A job that is in flight AND due again (a sync scheduled while the previous
// sync runs) must not use up Claim's places: claimJobs once took the first max
// due jobs and only then skipped leased ones, so one long-running job could
// hold up its whole shard (the runner often claims with max 1).
func TestClaimStepsOverInFlightDueJobs(t *testing.T) {
	t.Parallel()
	for name, newStore := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, newStore)
			const shard = 3
			ids := idsInShard("req-hol", shard, 2)
			a, b := ids[0], ids[1]

			// a is posted from a stale render, so sync:a is due; a worker runs it.
			f.mustCreate(t, newReq(a, "agent-a"))
			post := f.claimExactly(t, shard, 1, lease, "post:"+a)[0]
			if err := f.s.MarkPosted(f.ctx, a, "C1", "1.1", 0); err != nil {
				t.Fatal(err)
			}
			if err := f.s.Ack(f.ctx, post); err != nil {
				t.Fatal(err)
			}
			running := f.claimExactly(t, shard, 1, lease, "sync:"+a)[0]

			// While it runs, a's message changes again: sync:a is due again.
			f.clk.Advance(time.Millisecond)
			if err := f.s.MarkPosted(f.ctx, a, "C1", "1.1", 0); err != nil {
				t.Fatal(err)
			}
			// Then b arrives on the same shard: post:b is due and nobody runs it.
			f.clk.Advance(time.Millisecond)
			f.mustCreate(t, newReq(b, "agent-a"))
			f.clk.Advance(time.Millisecond)

			jobs, err := f.s.Claim(f.ctx, shard, 1, lease)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := jobIDs(jobs), []string{"post:" + b}; !slices.Equal(got, want) {
				t.Errorf("Claim(shard, max 1) while sync:%s runs and is due again = %q; want %q "+
					"(the in-flight job takes the only LIMIT place in claimJobs, starving the shard)", a, got, want)
			}
			if len(jobs) == 0 {
				// Show how long the starvation lasts: the whole lease.
				f.clk.Set(t0.Add(lease - time.Millisecond))
				if jobs, err := f.s.Claim(f.ctx, shard, 1, lease); err == nil && len(jobs) == 0 {
					t.Logf("still nothing claimable %v later, just before sync:%s's lease expires", lease-3*time.Millisecond, a)
				}
				_ = f.s.Ack(f.ctx, running)
			}
		})
	}
}

// Create refuses ids Get could never read back.
func TestCreateRefusesInvalidIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, realRedis())
	for _, id := range []string{"bad id", "a/b", "-lead"} {
		if _, _, err := f.s.Create(f.ctx, newReq(id, "agent")); err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
	}
}

// The setters jobs call after the fact must not resurrect a request that does
// not exist as a half-empty record.
func TestSettersDoNotCreateRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, realRedis())
	calls := map[string]func() error{
		"MarkSynced":      func() error { return f.s.MarkSynced(f.ctx, "ghost", 2) },
		"SetPermalink":    func() error { return f.s.SetPermalink(f.ctx, "ghost", "", "", "https://x") },
		"SetMentions":     func() error { return f.s.SetMentions(f.ctx, "ghost", []string{"<@U1>"}) },
		"RecordPostError": func() error { return f.s.RecordPostError(f.ctx, "ghost", "channel_not_found", true) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s on a missing request: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := f.s.Get(f.ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a setter created the request: %v", err)
	}
	if _, created, err := f.s.Create(f.ctx, newReq("ghost", "agent")); err != nil || !created {
		t.Errorf("Create after the setters: created=%v err=%v", created, err)
	}
}

// Withdrawing a request whose post was retried leaves no attempt counter behind.
func TestWithdrawForgetsTheCancelledPostsAttempts(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	clk := newClock()
	s, err := store.New(rdb, store.Options{Prefix: prefix, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	id := idsInShard("retried", 5, 1)[0]
	if _, _, err := s.Create(ctx, newReq(id, "agent")); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctx, 5, 1, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if err := s.Retry(ctx, jobs[0], clk.Now().Add(time.Hour), true); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.New(s, approval.Options{Now: clk.Now}).Withdraw(ctx, id); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("%s:{s%02d}:jobs:attempts", prefix, 5)
	if n, err := rdb.HLen(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("%s holds %d entries after the withdraw (%v)", key, n, err)
	}
}

// A redelivery asked for while an attempt is in flight must survive that
// attempt's outcome: the attempt once overwrote the state (to dead, or to a
// retry hours later) and the redelivery was silently dropped.
func TestRedeliveryOutlivesTheAttemptInFlight(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	clk := newClock()
	s, err := store.New(rdb, store.Options{Prefix: prefix, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	n := newReq("redeliver-race", "agent")
	n.ResponseURL = "https://agent.example/cb"
	if _, _, err := s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, n.ID, func(store.Record) (*store.Change, error) {
		return (&store.Change{Status: "resolved"}).WithFields(map[string]any{"response": `{"r":1}`, "delivery_state": store.DeliveryRetrying,
			"delivery_attempts": 10}), nil
	}); err != nil {
		t.Fatal(err)
	}
	inFlight, _ := s.Get(ctx, n.ID) // the deliverer read this, then started attempt 11
	if _, err := s.Redeliver(ctx, n.ID, "agent:agent"); err != nil {
		t.Fatal(err)
	}
	// Attempt 11 (the schedule's last) fails and would make the delivery dead.
	a := store.DeliveryAttempt{N: 11, At: clk.Now(), URL: n.ResponseURL, Status: 503, Error: "HTTP 503", Gen: inFlight.Delivery.Gen}
	if err := s.RecordDeliveryAttempt(ctx, n.ID, a, store.DeliveryDead); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Get(ctx, n.ID)
	if rec.Delivery.State != store.DeliveryPending || rec.Delivery.Gen != 1 {
		t.Errorf("after the superseded attempt: state %q gen %d, want pending gen 1", rec.Delivery.State, rec.Delivery.Gen)
	}
	attempts, _ := s.Deliveries(ctx, n.ID)
	if len(attempts) != 1 || attempts[0].N != 11 {
		t.Errorf("the superseded attempt was not logged: %+v", attempts)
	}
	jobs, err := s.Claim(ctx, shardOf(n.ID), 10, time.Minute)
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	if err != nil || !slices.Contains(ids, "deliver:"+n.ID) {
		t.Errorf("the redelivery's job is not due now: %v %v", ids, err)
	}
}

// A request id that names one of the store's own keys is refused: the
// chain of a request "head" was written to the shard chain's head key, and
// every later audit write or verification of the shard failed WRONGTYPE.
func TestReservedRequestIDIsRefused(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.mustCreate(t, newReq("before", "agent"))
			if _, _, err := f.s.Create(f.ctx, newReq("head", "agent")); !errors.Is(err, store.ErrReservedID) {
				t.Fatalf("Create(head) = %v, want ErrReservedID", err)
			}
			f.mustCreate(t, newReq("after", "agent"))
			rep, err := f.s.VerifyAll(f.ctx)
			if err != nil || len(rep.Problems) != 0 || rep.Requests != 2 {
				t.Fatalf("VerifyAll = %+v, %v; want 2 requests and no problem", rep, err)
			}
		})
	}
}
