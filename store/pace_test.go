package store_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Pacing lives in Redis TTLs, not the store's clock, so these tests measure
// a real server on real time. The embedded store's pacing is checked on a
// fake clock in TestKeysExpireAfterTheirTTL.
func TestPace(t *testing.T) {
	t.Parallel()
	testPace(t, realRedis())
}

func testPace(t *testing.T, newStore backend) {
	take := func(t *testing.T, s *store.Store, channel string, interval time.Duration) time.Duration {
		t.Helper()
		w, err := s.TakePaceSlot(testCtx(t), channel, interval)
		if err != nil {
			t.Fatalf("TakePaceSlot(%s): %v", channel, err)
		}
		return w
	}
	hold := func(t *testing.T, s *store.Store, channel string, d time.Duration) {
		t.Helper()
		if err := s.HoldChannel(testCtx(t), channel, d); err != nil {
			t.Fatalf("HoldChannel(%s, %v): %v", channel, d, err)
		}
	}

	t.Run("slots are spaced by the interval", func(t *testing.T) {
		t.Parallel()
		s := newStore(t, store.Options{})
		// Redis counts the interval down in real time, so the bounds are
		// taken around the calls: before the first take (the slot cannot
		// have started earlier) and after the second (it cannot have been
		// checked later). A minute is longer than any stall of the machine.
		const interval = time.Minute
		before := time.Now()
		if w := take(t, s, "C1", interval); w != 0 {
			t.Fatalf("first TakePaceSlot = %v; want 0", w)
		}
		w := take(t, s, "C1", interval)
		elapsed := time.Since(before)
		if w <= 0 || w > interval || w < interval-elapsed-time.Millisecond {
			t.Errorf("second TakePaceSlot = %v (%v after the first); want in [%v, %v]", w, elapsed, interval-elapsed, interval)
		}
		// Other channels are not affected.
		if w := take(t, s, "C2", interval); w != 0 {
			t.Errorf("TakePaceSlot(C2) = %v; want 0", w)
		}

		// A slot frees itself once its interval has passed: waiting until
		// after it can only be late, never early.
		const short = 80 * time.Millisecond
		if w := take(t, s, "C3", short); w != 0 {
			t.Fatalf("first TakePaceSlot(C3) = %v; want 0", w)
		}
		taken := time.Now() // the slot was set before this
		time.Sleep(time.Until(taken.Add(short + 5*time.Millisecond)))
		if w := take(t, s, "C3", interval); w != 0 {
			t.Errorf("TakePaceSlot after the interval = %v; want 0", w)
		}
		if w := take(t, s, "C3", interval); w <= 0 {
			t.Errorf("TakePaceSlot right after taking it again = %v; want a wait", w)
		}
	})

	t.Run("HoldChannel blocks for at least the hold and never shortens one", func(t *testing.T) {
		t.Parallel()
		s := newStore(t, store.Options{})
		const hold2 = 2 * time.Second
		// wantWait: a block of total started at since leaves between
		// total-(time since) and total to wait (so at least ~1.9s for 2s).
		wantWait := func(what string, w, total time.Duration, since time.Time) {
			t.Helper()
			if min := total - time.Since(since) - 5*time.Millisecond; w < min || w > total {
				t.Errorf("%s: wait %v; want in [%v, %v]", what, w, min, total)
			}
		}

		// A 429 after a post: the hold replaces the short pacing interval.
		if w := take(t, s, "C1", 80*time.Millisecond); w != 0 {
			t.Fatalf("first TakePaceSlot = %v; want 0", w)
		}
		held := time.Now()
		hold(t, s, "C1", hold2)
		wantWait("HoldChannel(2s) after a slot", take(t, s, "C1", 80*time.Millisecond), hold2, held)

		// A shorter hold does not shorten a longer one.
		held = time.Now()
		hold(t, s, "C2", 5*time.Second)
		hold(t, s, "C2", hold2)
		wantWait("HoldChannel(5s) then HoldChannel(2s)", take(t, s, "C2", 80*time.Millisecond), 5*time.Second, held)

		// Nor a pacing slot longer than the hold.
		held = time.Now()
		if w := take(t, s, "C3", 10*time.Second); w != 0 {
			t.Fatalf("first TakePaceSlot(C3) = %v; want 0", w)
		}
		hold(t, s, "C3", hold2)
		wantWait("10s slot then HoldChannel(2s)", take(t, s, "C3", 80*time.Millisecond), 10*time.Second, held)

		// A hold on a free channel blocks it too.
		held = time.Now()
		hold(t, s, "C4", hold2)
		wantWait("HoldChannel(2s) on a free channel", take(t, s, "C4", 80*time.Millisecond), hold2, held)
	})
}
