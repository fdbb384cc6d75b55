package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Intake queues a request's post and asks when its turn comes (PacePosts):
// in an idle channel its job is due at once; behind another post it is due
// when its turn should come, and the post ending the turn before it hands
// it on (PullPostJob) at its slot. Without PacePosts every post job is due
// at its arrival, as before.
func TestCreateDefersAPostQueuedBehindOthers(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.s.PacePosts(pacing)
			at := func(d time.Duration) { f.clk.Set(t0.Add(d)) }
			due := func(want ...string) {
				t.Helper()
				var got []string
				for _, j := range f.claimAll(t) {
					got = append(got, j.ID)
					if err := f.s.Ack(f.ctx, j); err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("at +%v jobs due %v, want %v", f.clk.Now().Sub(t0), got, want)
				}
			}
			at(0)
			f.mustCreate(t, newReq("d-1", "pm"))
			due("post:d-1") // an idle channel: at once
			at(pacing.Settle)
			one := store.PostTurn{Channel: "C0APPROVALS", ID: "d-1", Arrival: t0}
			if tr, err := f.s.TakePostTurn(f.ctx, one, pacing); err != nil || !tr.Taken {
				t.Fatalf("d-1's turn: %+v, %v", tr, err)
			}
			at(30 * time.Millisecond)
			f.mustCreate(t, newReq("d-2", "pm")) // d-1 holds the turn
			waitDeferred(t, f, "d-2", t0.Add(30*time.Millisecond))
			due()
			// Its fallback, should no hand-off come: d-1's slot (+20ms) and an
			// interval is the earliest its turn can come, a post's time (an
			// interval here) later than that is what it is told at intake,
			// less half a lead: +215ms.
			if at, _, err := f.s.PostJobDue(f.ctx, "d-2"); err != nil || !at.Equal(t0.Add(215*time.Millisecond)) {
				t.Errorf("d-2's job deferred to +%v (%v), want +215ms", at.Sub(t0), err)
			}
			// d-1's call to Slack ends at +50ms: the next slot is an interval
			// later, and d-2 is handed the turn for then.
			at(50 * time.Millisecond)
			next, err := f.s.EndPostTurn(f.ctx, one)
			if err != nil || next != "d-2" {
				t.Fatalf("EndPostTurn: next %q, %v; want d-2", next, err)
			}
			if err := f.s.PullPostJob(f.ctx, next, f.clk.Now().Add(pacing.Interval)); err != nil {
				t.Fatal(err)
			}
			at(149 * time.Millisecond)
			due()
			at(150 * time.Millisecond)
			due("post:d-2")

			// Without PacePosts: due at its arrival, whatever is ahead of it.
			g := newFixture(t, b)
			g.clk.Set(t0)
			g.mustCreate(t, newReq("e-1", "pm"))
			g.mustCreate(t, newReq("e-2", "pm"))
			var got []string
			for _, j := range g.claimAll(t) {
				got = append(got, j.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"post:e-1", "post:e-2"}) {
				t.Errorf("without PacePosts: jobs due %v, want both posts at once", got)
			}
		})
	}
}

// A post handed the turn before its create deferred its job (the post
// ahead of it ended its turn between the create's queuing and its
// deferral) keeps the time it was handed: the deferral only moves a job
// still due at its arrival. So does one whose job already ran.
func TestDeferralNeverUndoesAHandOff(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.clk.Set(t0)
			f.mustCreate(t, newReq("h-1", "pm")) // no PacePosts: due at its arrival
			if err := f.s.PullPostJob(f.ctx, "h-1", t0.Add(pacing.Interval)); err != nil {
				t.Fatal(err)
			}
			if err := f.s.DeferPostJob(f.ctx, "h-1", t0, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			f.clk.Set(t0.Add(pacing.Interval))
			if jobs := f.claimAll(t); len(jobs) != 1 || jobs[0].ID != "post:h-1" {
				t.Errorf("handed the turn, then deferred: jobs due at its slot %v, want post:h-1", jobs)
			}

			// Still due at its arrival: the deferral moves it.
			g := newFixture(t, b)
			g.clk.Set(t0)
			g.mustCreate(t, newReq("h-2", "pm"))
			if err := g.s.DeferPostJob(g.ctx, "h-2", t0, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if jobs := g.claimAll(t); len(jobs) != 0 {
				t.Errorf("deferred: jobs due at its arrival %v, want none", jobs)
			}
			g.clk.Set(t0.Add(time.Second))
			jobs := g.claimAll(t)
			if len(jobs) != 1 || jobs[0].ID != "post:h-2" {
				t.Fatalf("deferred: jobs due a second later %v, want post:h-2", jobs)
			}
			// Claimed (running): a late deferral leaves it alone, not due.
			if err := g.s.DeferPostJob(g.ctx, "h-2", t0, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if at, due, err := g.s.PostJobDue(g.ctx, "h-2"); err != nil || due {
				t.Errorf("claimed, then deferred: due at +%v (%v), want not due while it runs", at.Sub(t0), err)
			}
			if err := g.s.Retry(g.ctx, jobs[0], t0.Add(2*time.Second), false); err != nil {
				t.Fatal(err)
			}
			g.clk.Set(t0.Add(2 * time.Second))
			if jobs := g.claimAll(t); len(jobs) != 1 {
				t.Errorf("told to come back at +2s: jobs due then %v, want post:h-2", jobs)
			}
		})
	}
}

// waitDeferred waits until the create's deferral of id's post job (written
// off the create's path) has moved it from its arrival.
func waitDeferred(t *testing.T, f fixture, id string, arrival time.Time) {
	t.Helper()
	for {
		due, ok, err := f.s.PostJobDue(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("the post job of %s is not due at all", id)
		}
		if due.After(arrival) {
			return
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("the post job of %s is still due at its arrival: %v", id, f.ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// With HomeJobs, a post deferred to its turn takes its request's Home tabs
// job with it, to a second after the turn (the post updates the tabs as it
// is made, and a job left at a second after the create would run as well
// when the post waits longer); a post that goes at once leaves it a second
// after the create.
func TestDeferredPostTakesItsHomeJob(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b, func(o *store.Options) { o.HomeJobs = true })
			f.s.PacePosts(pacing)
			homeDue := func(id string, want time.Duration) {
				t.Helper()
				at, ok, err := f.s.HomeJobDue(f.ctx, id)
				if err != nil || !ok || !at.Equal(t0.Add(want)) {
					t.Errorf("home job of %s due at +%v (%v, %v), want +%v", id, at.Sub(t0), ok, err, want)
				}
			}
			holdTurn(t, f, "h-1")
			homeDue("h-1", time.Second) // its post went at once
			post := queueBehind(t, f, "h-2")
			homeDue("h-2", post.Sub(t0)+time.Second)
		})
	}
}

// holdTurn creates request id at t0 in an idle channel and gives its post
// the turn at +settle, as its job would: the post others queue behind.
func holdTurn(t *testing.T, f fixture, id string) store.PostTurn {
	t.Helper()
	f.clk.Set(t0)
	f.mustCreate(t, newReq(id, "pm"))
	f.clk.Set(t0.Add(pacing.Settle))
	turn := store.PostTurn{Channel: "C0APPROVALS", ID: id, Arrival: t0}
	if tr, err := f.s.TakePostTurn(f.ctx, turn, pacing); err != nil || !tr.Taken {
		t.Fatalf("%s's turn: %+v, %v", id, tr, err)
	}
	return turn
}

// queueBehind creates request id at +30ms, behind the post holding the
// turn, and returns when its create deferred its post job to.
func queueBehind(t *testing.T, f fixture, id string) time.Time {
	t.Helper()
	f.clk.Set(t0.Add(30 * time.Millisecond))
	f.mustCreate(t, newReq(id, "pm"))
	waitDeferred(t, f, id, t0.Add(30*time.Millisecond))
	at, _, err := f.s.PostJobDue(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
