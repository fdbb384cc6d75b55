package store_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// expiring is a store whose TTLs can be watched running out: the embedded
// store on a fake clock (exact: time moves only when the test says), or
// real Redis on the wall clock (only "eventually gone" can be checked).
type expiring struct {
	s *store.Store
	// pass lets d go by, then requires cond: at once on the fake clock, within
	// a generous bound on the wall clock (never a duration assertion).
	pass  func(t *testing.T, d time.Duration, what string, cond func() bool)
	exact bool // the clock is the test's: checks just before expiry hold
}

func expiringBackends() map[string]func(t *testing.T) expiring {
	return map[string]func(t *testing.T) expiring{
		"embedded": func(t *testing.T) expiring {
			clk := newClock()
			return expiring{s: embedded(t, store.Options{Now: clk.Now}), exact: true,
				pass: func(t *testing.T, d time.Duration, what string, cond func() bool) {
					t.Helper()
					clk.Advance(d)
					if !cond() {
						t.Errorf("%s: not so %v later on the store's clock", what, d)
					}
				}}
		},
		"redis": func(t *testing.T) expiring {
			return expiring{s: realRedis()(t, store.Options{}),
				pass: func(t *testing.T, d time.Duration, what string, cond func() bool) {
					t.Helper()
					deadline := time.Now().Add(d + 30*time.Second)
					for !cond() {
						if time.Now().After(deadline) {
							t.Errorf("%s: still not so 30s after its TTL of %v", what, d)
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}}
		},
	}
}

// Every key the store gives a TTL goes away after it, on real Redis and on
// the embedded store of local mode. The embedded store once never counted
// TTLs down: a channel's first post left its pacing key forever, so every
// later request to that channel stayed queued.
func TestKeysExpireAfterTheirTTL(t *testing.T) {
	t.Parallel()
	for name, newBackend := range expiringBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			ctx := testCtx(t)
			const ttl = 200 * time.Millisecond

			// Pacing: a post's turn blocks the channel for the interval after
			// it ends, a hold until the hold ends; then the channel is free.
			pacing := store.Pacing{Interval: ttl, Grace: time.Minute}
			slotFree := func(channel, id string) func() bool {
				return func() bool {
					pt := store.PostTurn{Channel: channel, ID: id}
					tr, err := b.s.TakePostTurn(ctx, pt, pacing)
					if err != nil {
						t.Fatalf("TakePostTurn(%s): %v", channel, err)
					}
					if tr.Taken {
						if _, err := b.s.EndPostTurn(ctx, pt); err != nil {
							t.Fatal(err)
						}
					}
					return tr.Taken && tr.Wait == 0
				}
			}
			if !slotFree("C1", "a")() {
				t.Fatal("first TakePostTurn(C1) had to wait")
			}
			b.pass(t, ttl, "after the interval C1 is free", slotFree("C1", "b"))
			if err := b.s.HoldChannel(ctx, "C2", ttl); err != nil {
				t.Fatal(err)
			}
			b.pass(t, ttl, "after the hold C2 is free", slotFree("C2", "c"))

			// Event de-duplication: a retry within the TTL is dropped, the same
			// id after it is new again.
			first := func() bool {
				ok, err := b.s.FirstDelivery(ctx, "Ev1", ttl)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !first() || first() {
				t.Fatal("FirstDelivery(Ev1) twice: want true, then false")
			}
			b.pass(t, ttl, "after its TTL an event id is new again", first)

			// Home-opened marks last their TTL.
			if err := b.s.NoteHomeOpened(ctx, "U0ALICE", ttl); err != nil {
				t.Fatal(err)
			}
			b.pass(t, ttl, "after its TTL the Home tab is no longer marked opened", func() bool {
				got, err := b.s.HomeOpened(ctx, []string{"U0ALICE"})
				return err == nil && len(got) == 0
			})

			// An idle user's answered list lasts 30 days (too long to wait for on
			// the wall clock).
			if b.exact {
				f := fixture{s: b.s, ctx: ctx}
				f.mustCreate(t, newReq("ans-1", "pm"))
				if err := b.s.NoteAnswered(ctx, "U0BOB", "ans-1"); err != nil {
					t.Fatal(err)
				}
				answered := func() int {
					recs, err := b.s.RecentlyAnswered(ctx, "U0BOB", 10)
					if err != nil {
						t.Fatal(err)
					}
					return len(recs)
				}
				b.pass(t, 30*24*time.Hour-time.Second, "a day before 30 idle days the answered list is kept",
					func() bool { return answered() == 1 })
				b.pass(t, time.Second, "after 30 idle days the answered list is gone", func() bool { return answered() == 0 })
			}
		})
	}
}

// The embedded store's TIME is its clock's, so Lua's TIME and (P)EXPIREAT
// agree with the TTLs.
func TestEmbeddedTimeFollowsTheClock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	rdb, prefix := redistest.Embedded(t, clk.Now)
	ctx := testCtx(t)
	for _, step := range []time.Duration{0, time.Hour, 1500 * time.Millisecond} {
		want := clk.Advance(step)
		if got, err := rdb.Time(ctx).Result(); err != nil || !got.Equal(want) {
			t.Errorf("TIME = %v, %v; want the clock's %v", got, err, want)
		}
	}
	key := prefix + ":at"
	if err := rdb.Set(ctx, key, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.PExpireAt(ctx, key, clk.Now().Add(time.Minute)).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl != time.Minute {
		t.Errorf("PTTL after PEXPIREAT now+1m = %v, %v; want 1m", ttl, err)
	}
	clk.Advance(time.Minute)
	if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS at the PEXPIREAT time = %d, %v; want 0", n, err)
	}
	// A clock that steps back (or two commands that read it out of order)
	// does not count the same interval twice.
	if err := rdb.Set(ctx, key, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(-10 * time.Second)
	_ = rdb.Ping(ctx).Err()
	clk.Advance(10*time.Second + 30*time.Second)
	if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl != 30*time.Second {
		t.Errorf("PTTL after the clock stepped back 10s and on 40s = %v, %v; want 30s", ttl, err)
	}
}
