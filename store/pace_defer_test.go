package store_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// Intake queues a request's post and asks when its turn comes (PacePosts):
// in an idle channel its job is due at once; behind another post it is due
// when its turn should come, and the post ending the turn before it hands
// it on (PullPostJob) at its slot. Without PacePosts every post job is due
// at its arrival, as before.
func TestCreateDefersAPostQueuedBehindOthers(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, b backend, f fixture) {
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

// On one Redis node a create under its agent's limits writes the request,
// confirms its slot of the open-request cap and queues its post in one
// script (createAndQueue), run again when Redis has forgotten it (NOSCRIPT,
// after SCRIPT FLUSH or a restart; flushed on the embedded store only, a
// server of its own): the request is stored, its slot confirmed, and its
// post, queued behind another's, deferred to its turn in that same step.
func TestCreateQueuesAndConfirmsInOneScript(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			if _, cluster := f.s.Client().(*redis.ClusterClient); cluster {
				t.Skip("a Cluster admits first, and queues the post a round trip later")
			}
			f.s.PacePosts(pacing)
			f.clk.Set(t0)
			f.mustCreate(t, newReq("q-1", "pm"))
			if _, err := f.s.ReserveOpen(f.ctx, "pm", "seed-it", 10, testLease); err != nil { // seeds the count
				t.Fatal(err)
			}
			f.clk.Set(t0.Add(pacing.Settle))
			if tr, err := f.s.TakePostTurn(f.ctx, store.PostTurn{Channel: "C0APPROVALS", ID: "q-1", Arrival: t0}, pacing); err != nil || !tr.Taken {
				t.Fatalf("q-1's turn: %+v, %v", tr, err)
			}
			for i, flush := range []bool{false, true} {
				id := fmt.Sprintf("q-%d", i+2)
				if flush && name != "embedded" {
					continue // a shared server: its flush would reach the tests running beside it
				}
				if flush {
					if err := f.s.Client().ScriptFlush(f.ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
				rate := store.Rate{Count: 10, Per: time.Hour, Burst: 10}
				// The limits' script loaded (Admit runs it; for another id),
				// so that only the create's script can be missing: a create
				// whose limits' script was missing is not admitted, for its
				// caller to create again (TestCreateAdmitted).
				if _, _, err := f.s.Admit(f.ctx, "pm", id+"-other", rate, 10, testLease); err != nil {
					t.Fatal(err)
				}
				arrival := t0.Add(pacing.Settle + time.Duration(10*(i+1))*time.Millisecond)
				f.clk.Set(arrival)
				adm := &store.Admission{Agent: "pm", Rate: rate, MaxOpen: 10, Lease: testLease}
				if _, created, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), newReq(id, "pm")); err != nil || !created {
					t.Fatalf("create %s (script cache flushed first: %v): created %v, %v; admission %+v", id, flush, created, err, adm)
				}
				if m, err := f.s.OpenCounted(f.ctx, "pm"); err != nil || m[id] < store.OpenConfirmed {
					t.Errorf("%s's member: score %v, %v; want confirmed by the create", id, m[id], err)
				}
				if due, ok, err := f.s.PostJobDue(f.ctx, id); err != nil || !ok || !due.After(arrival) {
					t.Errorf("%s's post job due at +%v (%v, %v); want deferred past its arrival, behind q-1", id, due.Sub(t0), ok, err)
				}
			}
		})
	}
}

// A create stands when its post cannot be queued (the channel's queue
// unreadable: here a key of another type), as when the queuing was a call
// of its own: the post job queues the post when it runs.
func TestCreateStandsWhenItsPostCannotBeQueued(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, _ backend, f fixture) {
		queue := f.s.Prefix() + ":pace:{C0APPROVALS}:q"
		if err := f.s.Client().Set(f.ctx, queue, "not a sorted set", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, created, err := f.s.Create(f.ctx, newReq("nq-1", "pm")); err != nil || !created {
			t.Fatalf("create with its channel's queue unreadable: created %v, %v; want created", created, err)
		}
		if _, err := f.s.Get(f.ctx, "nq-1"); err != nil {
			t.Fatalf("Get(nq-1): %v", err)
		}
		if _, ok, err := f.s.PostJobDue(f.ctx, "nq-1"); err != nil || !ok {
			t.Errorf("nq-1's post job: due %v, %v; want it scheduled", ok, err)
		}
	})
}

// pacedOnEachBackend runs test in parallel on each backend b, on a fixture
// whose store paces posts (pacing).
func pacedOnEachBackend(t *testing.T, test func(t *testing.T, b backend, f fixture)) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.s.PacePosts(pacing)
			test(t, b, f)
		})
	}
}

// Intake's queuing gives a channel's new queue a TTL, and never shortens
// the TTL its keys had (PEXPIRE GT, where it read PTTL first): a queue
// whose TTL shrank could expire with posts still waiting in it.
func TestIntakeQueuingNeverShortensTheQueuesLife(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, b backend, f fixture) {
		rdb := f.s.Client()
		hash, queue := channelKeys(f)
		ttl := func(key string) time.Duration { return pttl(t, f, key) }
		f.clk.Set(t0)
		f.mustCreate(t, newReq("l-1", "pm"))
		if d := ttl(queue); d <= 0 {
			t.Fatalf("a new queue's TTL is %v, want one", d)
		}
		if err := rdb.PExpire(f.ctx, queue, 10*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustCreate(t, newReq("l-2", "pm")) // behind l-1: told its turn, in the hash
		if d := ttl(queue); d < 9*time.Hour {
			t.Errorf("the queue's TTL went from 10h to %v", d)
		}
		if d := ttl(hash); d <= 0 {
			t.Fatalf("the channel's hash has TTL %v, want one", d)
		}
		if err := rdb.PExpire(f.ctx, hash, 10*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		// Without the record of how long the keys live, l-3 renews them.
		if err := rdb.HDel(f.ctx, hash, "x").Err(); err != nil {
			t.Fatal(err)
		}
		f.mustCreate(t, newReq("l-3", "pm"))
		if d := ttl(hash); d < 9*time.Hour {
			t.Errorf("the channel's hash TTL went from 10h to %v", d)
		}
	})
}

// Intake renews a channel's TTLs only when they may not last as long as
// its post needs (takePostTurn's x): it renews them after a post's own ask
// set them shorter, and gives a queue made again (an emptied queue is
// deleted, its hash stays) a TTL. Either missed, a queue could expire, or
// never, with posts still waiting in it.
func TestIntakeRenewsTheQueuesLifeWhenItMayFallShort(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, b backend, f fixture) {
		rdb := f.s.Client()
		hash, queue := channelKeys(f)
		ttl := func(key string) time.Duration { return pttl(t, f, key) }
		const atIntake = time.Hour // queueTTL: the least TTL intake gives
		f.clk.Set(t0)
		f.mustCreate(t, newReq("r-1", "pm"))
		f.mustCreate(t, newReq("r-2", "pm")) // behind r-1: its TTLs recorded
		// r-1's job asks for its turn: the TTLs are what its queue needs,
		// far less than intake gave them.
		f.clk.Set(t0.Add(pacing.Settle))
		if tr, err := f.s.TakePostTurn(f.ctx, store.PostTurn{Channel: "C0APPROVALS", ID: "r-1", Arrival: t0}, pacing); err != nil || !tr.Taken {
			t.Fatalf("r-1's turn: %+v, %v", tr, err)
		}
		if d := ttl(queue); d <= 0 || d >= atIntake/2 {
			t.Fatalf("the queue's TTL after a post's ask: %v, want one much shorter than %v", d, atIntake)
		}
		f.mustCreate(t, newReq("r-3", "pm"))
		for _, key := range []string{queue, hash} {
			if d := ttl(key); d < atIntake {
				t.Errorf("%s's TTL after the next create: %v, want at least %v again", key, d, atIntake)
			}
		}
		// The queue emptied (deleted by Redis), the hash left as it was.
		if err := rdb.Del(f.ctx, queue).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustCreate(t, newReq("r-4", "pm"))
		if d := ttl(queue); d < atIntake {
			t.Errorf("a queue made again has TTL %v, want at least %v", d, atIntake)
		}
	})
}

// channelKeys are the pace hash and the queue of the tests' channel.
func channelKeys(f fixture) (hash, queue string) {
	hash = f.s.Prefix() + ":pace:{C0APPROVALS}"
	return hash, hash + ":q"
}

// pttl is key's TTL (negative: none, or no key).
func pttl(t *testing.T, f fixture, key string) time.Duration {
	t.Helper()
	d, err := f.s.Client().PTTL(f.ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Intake leaves a channel's TTLs alone while its record (x) says they last
// as long as its post needs: the two calls every create made. To see it,
// the test shortens the queue's TTL behind the record's back.
func TestIntakeLeavesTheQueuesLifeAloneWhileItLastsLongEnough(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, b backend, f fixture) {
		_, queue := channelKeys(f)
		f.clk.Set(t0)
		f.mustCreate(t, newReq("s-1", "pm"))
		f.mustCreate(t, newReq("s-2", "pm")) // behind s-1: renews, and records x
		if err := f.s.Client().PExpire(f.ctx, queue, 65*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustCreate(t, newReq("s-3", "pm"))
		if d := pttl(t, f, queue); d <= 0 || d > 65*time.Minute {
			t.Errorf("the queue's TTL after a create its record covers: %v, want it left at 65m", d)
		}
	})
}

// A post that goes at once into a queue made again (the one before it
// emptied and was deleted, its hash kept) lowers a record that said the
// keys live longer than the new queue does: trusted, it would leave the
// new queue to expire with posts still waiting in it.
func TestIntakeLowersTheQueuesLifeRecordForAQueueMadeAgain(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, b backend, f fixture) {
		rdb := f.s.Client()
		hash, queue := channelKeys(f)
		f.clk.Set(t0)
		// What a long queue left: the hash's record of ten hours, no queue.
		if err := rdb.HSet(f.ctx, hash, "x", strconv.FormatInt(t0.Add(10*time.Hour).UnixMilli(), 10)).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustCreate(t, newReq("m-1", "pm")) // the channel idle: its post goes at once
		x, err := rdb.HGet(f.ctx, hash, "x").Int64()
		if err != nil {
			t.Fatal(err)
		}
		if lives := pttl(t, f, queue); lives <= 0 || time.Duration(x-t0.UnixMilli())*time.Millisecond > lives+time.Second {
			t.Errorf("the record says the keys live %v, the new queue's TTL is %v", time.Duration(x-t0.UnixMilli())*time.Millisecond, lives)
		}
	})
}
