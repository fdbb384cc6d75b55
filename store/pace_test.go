package store_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Pacing runs on the store's clock (every script is given now), so these
// tests use a fake one, on real Redis and on the embedded store alike: the
// waits they compare are exact. Waiting posts are told to come back half a
// lead (5ms here) before their slots.
func TestPostTurns(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testPostTurns(t, b)
		})
	}
}

// pacing is the pacing of these tests.
var pacing = store.Pacing{Interval: 100 * time.Millisecond, Settle: 20 * time.Millisecond,
	Lead: 10 * time.Millisecond, Grace: time.Second}

func testPostTurns(t *testing.T, b backend) {
	turn := func(channel, id string, arrival time.Time) store.PostTurn {
		return store.PostTurn{Channel: channel, ID: id, Arrival: arrival}
	}
	ask := func(t *testing.T, f fixture, pt store.PostTurn) store.Turn {
		t.Helper()
		tr, err := f.s.TakePostTurn(f.ctx, pt, pacing)
		if err != nil {
			t.Fatalf("TakePostTurn(%s): %v", pt.ID, err)
		}
		return tr
	}
	// taken wants pt to get its turn, its slot wait away; told wants it
	// told to ask again after wait.
	want := func(t *testing.T, f fixture, pt store.PostTurn, want store.Turn) {
		t.Helper()
		if got := ask(t, f, pt); got != want {
			t.Errorf("at +%v TakePostTurn(%s) = %+v; want %+v", f.clk.Now().Sub(t0), pt.ID, got, want)
		}
	}
	taken := func(wait time.Duration) store.Turn { return store.Turn{Taken: true, Wait: wait} }
	told := func(wait time.Duration) store.Turn { return store.Turn{Wait: wait} }
	end := func(t *testing.T, f fixture, pt store.PostTurn) {
		t.Helper()
		if _, err := f.s.EndPostTurn(f.ctx, pt); err != nil {
			t.Fatal(err)
		}
	}
	at := func(f fixture, d time.Duration) { f.clk.Set(t0.Add(d)) }

	t.Run("the earliest arrival goes first, after the settle", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		a := turn("C1", "a", t0)
		bb := turn("C1", "b", t0.Add(500*time.Microsecond)) // the same millisecond
		// b's job runs before a's: a must still go first.
		want(t, f, bb, told(21*time.Millisecond)) // the head until a queues: its settle (ceil)
		want(t, f, a, told(20*time.Millisecond))  // a is the head now
		want(t, f, bb, told(115*time.Millisecond))
		at(f, 20*time.Millisecond)
		want(t, f, a, taken(0))
		// a holds the turn: b's slot is an interval after a's, and b is
		// told to come back half a lead before it.
		want(t, f, bb, told(95*time.Millisecond))
		at(f, 22*time.Millisecond)
		end(t, f, a) // a's call ended 2ms after its slot: b's slot is at 122ms
		at(f, 115*time.Millisecond)
		want(t, f, bb, taken(7*time.Millisecond))
		// Other channels are not affected.
		want(t, f, turn("C2", "c", t0), taken(0))
	})

	t.Run("each waiting post is told its slot, and gets its turn then", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		at(f, time.Second)
		var posts []store.PostTurn
		for i := range 4 {
			posts = append(posts, turn("C1", fmt.Sprint("p", i), t0.Add(time.Duration(i)*time.Millisecond)))
		}
		want(t, f, posts[0], taken(0))
		for i, p := range posts[1:] {
			want(t, f, p, told(time.Duration(i+1)*100*time.Millisecond-5*time.Millisecond))
		}
		// Each comes back when told and gets its turn at once, its slot an
		// interval after the end of the previous call (which the fake clock
		// sees end at its slot).
		end(t, f, posts[0])
		for i, p := range posts[1:] {
			slot := time.Second + time.Duration(i+1)*100*time.Millisecond
			at(f, slot-5*time.Millisecond)
			want(t, f, p, taken(5*time.Millisecond))
			at(f, slot)
			end(t, f, p)
		}
	})

	t.Run("a 429's hold shifts every waiting post after it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		at(f, time.Second)
		a, bb := turn("C1", "a", t0), turn("C1", "b", t0.Add(time.Millisecond))
		want(t, f, a, taken(0))
		want(t, f, bb, told(95*time.Millisecond))
		// a's post got a 429: the channel is held and a goes back first.
		if err := f.s.HoldChannel(f.ctx, "C1", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := f.s.ReturnPostTurn(f.ctx, a, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		at(f, time.Second+95*time.Millisecond)
		want(t, f, bb, told(2*time.Second)) // behind a, whose slot is the hold's end
		at(f, 3*time.Second)
		want(t, f, a, taken(0))
		want(t, f, bb, told(95*time.Millisecond))
		end(t, f, a)
		at(f, 3*time.Second+95*time.Millisecond)
		want(t, f, bb, taken(5*time.Millisecond))
		end(t, f, bb)
		// A shorter hold does not shorten a longer one.
		if err := f.s.HoldChannel(f.ctx, "C1", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := f.s.HoldChannel(f.ctx, "C1", time.Second); err != nil {
			t.Fatal(err)
		}
		want(t, f, turn("C1", "c", t0.Add(2*time.Millisecond)), told(5*time.Second-5*time.Millisecond))
	})

	t.Run("a post that never comes back stops holding up the others", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		at(f, time.Second)
		a, bb, c := turn("C1", "a", t0), turn("C1", "b", t0.Add(time.Millisecond)), turn("C1", "c", t0.Add(2*time.Millisecond))
		want(t, f, a, taken(0))
		want(t, f, bb, told(95*time.Millisecond))
		want(t, f, c, told(195*time.Millisecond))
		end(t, f, a)
		// b's job is cancelled: it never asks again. Until its grace has
		// passed c waits behind it; then c goes.
		at(f, time.Second+195*time.Millisecond)
		want(t, f, c, told(95*time.Millisecond))
		at(f, time.Second+100*time.Millisecond+pacing.Grace)
		want(t, f, c, taken(0))
		end(t, f, c)
		// Should b come back after all, it queues by its arrival again.
		want(t, f, bb, told(95*time.Millisecond))
		// A post that leaves the queue holds up nobody.
		d := turn("C1", "d", t0.Add(3*time.Millisecond))
		if err := f.s.LeavePostQueue(f.ctx, bb); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(100 * time.Millisecond)
		want(t, f, d, taken(0))
	})

	t.Run("a turn never ended lapses after the grace", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		at(f, time.Second)
		a, bb := turn("C1", "a", t0), turn("C1", "b", t0.Add(time.Millisecond))
		want(t, f, a, taken(0)) // and a's process dies
		at(f, time.Second+pacing.Grace-time.Millisecond)
		// Still behind a's turn, asking after it again in a lead, or as
		// long as a is late already, up to four leads.
		want(t, f, bb, told(50*time.Millisecond))
		at(f, time.Second+pacing.Grace)
		want(t, f, bb, taken(0))
	})

	t.Run("concurrent askers take turns in arrival order", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, b)
		at(f, time.Second)
		const n = 20
		posts := make([]store.PostTurn, n)
		for i := range posts {
			posts[i] = turn("C1", fmt.Sprint("q", i), t0.Add(time.Duration(i)*time.Millisecond))
		}
		// All queue while the channel is held; then, each round, every post
		// still waiting asks at once, in random order, and exactly one, the
		// earliest arrival, gets its turn.
		if err := f.s.HoldChannel(f.ctx, "C1", time.Second); err != nil {
			t.Fatal(err)
		}
		for _, p := range posts {
			if ask(t, f, p).Taken {
				t.Fatalf("%s got a turn while the channel was held", p.ID)
			}
		}
		f.clk.Advance(time.Second)
		for round := range n {
			waiting := posts[round:]
			got := make([]store.Turn, len(waiting))
			var wg sync.WaitGroup
			for _, k := range rand.Perm(len(waiting)) {
				wg.Go(func() {
					tr, err := f.s.TakePostTurn(f.ctx, waiting[k], pacing)
					if err != nil {
						t.Error(err)
					}
					got[k] = tr
				})
			}
			wg.Wait()
			for k, tr := range got {
				if tr.Taken != (k == 0) {
					t.Fatalf("round %d: %s was answered %+v; want the turn for %s only", round, waiting[k].ID, tr, waiting[0].ID)
				}
			}
			end(t, f, waiting[0])
			f.clk.Advance(pacing.Interval)
		}
	})
}
