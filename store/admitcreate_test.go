package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// Create under an Admission applies the agent's limits and creates in one
// round trip: admitted, it stores the request under a reservation of a
// slot; refused by the rate or the cap, it stores nothing and says why; a
// resubmission of a stored request is answered whatever the limits say,
// and a different request under a stored id is a conflict (the id holds
// its slot), as when the limits were applied first. A
// count that had to be seeded first is admitted only once the create had
// run: ErrNotAdmitted with a reservation, under which the caller creates
// again. On a Cluster the same holds, the limits applied first.
func TestCreateAdmitted(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rate := store.Rate{Count: 2, Per: time.Hour, Burst: 2}
			create := func(n store.NewRequest) (*store.Admission, bool, error) {
				adm := &store.Admission{Agent: "pm", Rate: rate, MaxOpen: 2, Lease: testLease}
				_, created, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), n)
				if !adm.Decided {
					t.Fatalf("Create(%s) under an admission: not decided (err %v)", n.ID, err)
				}
				return adm, created, err
			}

			// The agent's first request: its count is seeded as the
			// create runs, so the create was not admitted yet (on one
			// node; a Cluster applies the limits, seeding included, first).
			adm, created, err := create(newReq("ad-1", "pm"))
			switch {
			case name == "redis" && redistest.Cluster():
				if err != nil || !created || !adm.Slot.Reserved {
					t.Fatalf("first create on a Cluster: created %v, err %v, slot %+v; want created", created, err, adm.Slot)
				}
			case !errors.Is(err, store.ErrNotAdmitted) || created || !adm.Decision.Allowed || !adm.Slot.Reserved:
				t.Fatalf("first create: created %v, err %v, decision %+v, slot %+v; want not admitted yet, a slot reserved",
					created, err, adm.Decision, adm.Slot)
			default:
				if _, err := f.s.Get(f.ctx, "ad-1"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("Get(ad-1) after a create not admitted: %v, want not found", err)
				}
				if _, created, err := f.s.Create(store.WriteBy(f.ctx, adm.Slot.CreateBy), newReq("ad-1", "pm")); err != nil || !created {
					t.Fatalf("create under the reservation: created %v, err %v", created, err)
				}
			}
			if err := f.s.ConfirmOpen(f.ctx, adm.Slot); err != nil {
				t.Fatal(err)
			}

			adm, created, err = create(newReq("ad-2", "pm"))
			if err != nil || !created || !adm.Slot.Reserved || adm.Decision.Remaining != 0 {
				t.Fatalf("second create: created %v, err %v, decision %+v, slot %+v; want created in one step",
					created, err, adm.Decision, adm.Slot)
			}
			if name != "redis" || !redistest.Cluster() {
				// On one node the create confirmed its slot as it
				// committed: nothing is left to confirm.
				m, err := f.s.OpenCounted(f.ctx, "pm")
				if err != nil || m["ad-2"] < store.OpenConfirmed {
					t.Fatalf("ad-2's member after its create: score %v, err %v; want confirmed (>= %d)", m["ad-2"], err, int64(store.OpenConfirmed))
				}
			}
			if err := f.s.ConfirmOpen(f.ctx, adm.Slot); err != nil {
				t.Fatal(err)
			}
			if got := counted(t, f, "pm"); !slices.Equal(got, []string{"ad-1", "ad-2"}) {
				t.Fatalf("counted = %v, want [ad-1 ad-2]", got)
			}

			// Past the rate: nothing stored, the wait said.
			adm, created, err = create(newReq("ad-3", "pm"))
			if !errors.Is(err, store.ErrNotAdmitted) || created || adm.Decision.Allowed || adm.Decision.Wait <= 0 {
				t.Fatalf("past the rate: created %v, err %v, decision %+v; want refused with a wait", created, err, adm.Decision)
			}
			if _, err := f.s.Get(f.ctx, "ad-3"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(ad-3) after a refusal: %v, want not found", err)
			}
			// A resubmission is answered all the same.
			if _, created, err = create(newReq("ad-2", "pm")); err != nil || created {
				t.Fatalf("resubmission past the rate: created %v, err %v; want the stored request", created, err)
			}

			// A token later, the cap is full.
			f.clk.Advance(time.Hour)
			adm, created, err = create(newReq("ad-3", "pm"))
			if !errors.Is(err, store.ErrNotAdmitted) || created || !adm.Decision.Allowed || adm.Slot.Allowed() || adm.Slot.Open != 2 {
				t.Fatalf("at the cap: created %v, err %v, decision %+v, slot %+v; want refused at 2 open",
					created, err, adm.Decision, adm.Slot)
			}
			other := newReq("ad-1", "pm")
			other.BodyHash = "sha256:another body"
			// Another body under a stored open id: the id holds its slot
			// already (Held), so it is the conflict it is, as when the
			// limits were applied first.
			if adm, _, err = create(other); !errors.Is(err, store.ErrConflict) || !adm.Slot.Held {
				t.Fatalf("another body under a stored id, at the cap: %v, slot %+v; want a conflict, the slot held", err, adm.Slot)
			}
			if err := f.s.SettleOpen(f.ctx, adm.Slot); err != nil {
				t.Fatal(err)
			}
			if got := counted(t, f, "pm"); !slices.Equal(got, []string{"ad-1", "ad-2"}) {
				t.Fatalf("counted after the refusals = %v, want [ad-1 ad-2]", got)
			}
		})
	}
}

// A create its agent's limits refuse queues nothing in its channel: leaving
// the queue would hand the turn to the post at its head, whose job would
// then run before its time for nothing.
func TestCreateNotAdmittedLeavesTheChannelAlone(t *testing.T) {
	pacedOnEachBackend(t, func(t *testing.T, _ backend, f fixture) {
		one := holdTurn(t, f, "q-1")
		deferred := queueBehind(t, f, "q-2")
		// q-1's turn ends; q-2 is not handed it (as when the hand-off
		// was lost): its job stays due when it was told.
		f.clk.Set(t0.Add(50 * time.Millisecond))
		if _, err := f.s.EndPostTurn(f.ctx, one); err != nil {
			t.Fatal(err)
		}
		rate := store.Rate{Count: 1, Per: time.Hour, Burst: 1}
		if d, err := f.s.TakeIntakeToken(f.ctx, "flood", rate); err != nil || !d.Allowed {
			t.Fatalf("the flood's only token: %+v, %v", d, err)
		}
		f.clk.Set(t0.Add(60 * time.Millisecond))
		adm := &store.Admission{Agent: "flood", Rate: rate, MaxOpen: 5, Lease: testLease}
		if _, _, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), newReq("q-3", "flood")); !errors.Is(err, store.ErrNotAdmitted) {
			t.Fatalf("a create past its agent's rate: %v, want not admitted", err)
		}
		if at, ok, err := f.s.PostJobDue(f.ctx, "q-2"); err != nil || !ok || !at.Equal(deferred) {
			t.Errorf("q-2's job due at +%v (%v, %v) after a refused create, want +%v as told", at.Sub(t0), ok, err, deferred.Sub(t0))
		}
	})
}

// A create past a write deadline its caller gave wrote nothing, for
// certain: its limits' answer is still read, so the caller has the
// reservation to release. (On a Cluster, whose create follows its limits
// by a round trip, under the sooner of that deadline and its slot's.)
func TestCreatePastItsDeadlineReportsItsReservation(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			// The embedded store's TIME is the test's clock: an hour ahead
			// of the process's, as a Redis whose clock runs ahead.
			f.clk.Set(time.Now().Add(time.Hour))
			if _, err := f.s.ReserveOpen(f.ctx, "pm", "seed-it", 5, testLease); err != nil { // seeds the count
				t.Fatal(err)
			}
			// A deadline not past by the process's clock, so the create is
			// sent, and past by Redis's as it runs: on the embedded store,
			// whose clock runs an hour ahead, a minute from now; on
			// redis-server, whose clock is the process's, the end of this
			// millisecond (the script reads Redis's in whole ms). Should
			// the millisecond end before the create is sent, it is refused
			// before it applies its limits: tried again in the next.
			var adm *store.Admission
			var err error
			for range 100 {
				adm = &store.Admission{Agent: "pm", MaxOpen: 5, Lease: testLease}
				by := time.Now().Truncate(time.Millisecond).Add(time.Millisecond - time.Nanosecond)
				if name != "redis" {
					by = time.Now().Add(time.Minute)
				}
				_, _, err = f.s.Create(store.WriteBy(store.AdmitOnCreate(f.ctx, adm), by), newReq("late-1", "pm"))
				if adm.Decided || !errors.Is(err, store.ErrWriteDeadline) {
					break
				}
			}
			if !errors.Is(err, store.ErrWriteDeadline) || !adm.Decided || !adm.Slot.Reserved {
				t.Fatalf("create past its deadline: err %v, decided %v, slot %+v; want the deadline and the slot reserved",
					err, adm.Decided, adm.Slot)
			}
			if err := f.s.SettleOpen(f.ctx, adm.Slot); err != nil {
				t.Fatal(err)
			}
			if got := counted(t, f, "pm"); slices.Contains(got, "late-1") {
				t.Errorf("counted after the slot was settled = %v: late-1 still holds one", got)
			}
		})
	}
}

// On one Redis node a create under its agent's limits needs no write
// deadline: its slot is taken and confirmed in the script that creates it,
// so no reconcile can come between. Here Redis's clock is an hour past the
// process's and the lease is zero, which refused a create whose
// reservation had been made by a script of its own: it is created, and
// counted as confirmed, not as a reservation to settle.
func TestCreateUnderItsLimitsNeedsNoDeadline(t *testing.T) {
	onOneNode(t, func(t *testing.T, f fixture) {
		f.clk.Set(time.Now().Add(time.Hour))
		if _, err := f.s.ReserveOpen(f.ctx, "pm", "seed-it", 5, testLease); err != nil { // seeds the count
			t.Fatal(err)
		}
		adm := &store.Admission{Agent: "pm", MaxOpen: 5}
		_, created, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), newReq("now-1", "pm"))
		if err != nil || !created || !adm.Decided || !adm.Slot.Reserved {
			t.Fatalf("create under its limits: created %v, err %v, decided %v, slot %+v; want it created on a slot",
				created, err, adm.Decided, adm.Slot)
		}
		m, err := f.s.OpenCounted(f.ctx, "pm")
		if err != nil {
			t.Fatal(err)
		}
		if score, ok := m["now-1"]; !ok || score < store.OpenConfirmed {
			t.Errorf("now-1 counted %v with score %v; want it confirmed (at least 2^52)", ok, score)
		}
	})
}

// A create that fails as it writes (here a key of the wrong type) after its
// agent's limits admitted it still reports what the limits took, as they
// took it: the caller settles that slot, and the limits are not applied a
// second time (one more token taken for it, not two).
func TestCreateFailingAfterItsAdmissionReportsItsLimits(t *testing.T) {
	onOneNode(t, func(t *testing.T, f fixture) {
		rate := store.Rate{Count: 3, Per: time.Hour, Burst: 3}
		// Applied once on their own first: the count is seeded (an
		// agent's first create is refused while it is, and created
		// again: TestCreateAdmitted).
		_, warm, err := f.s.Admit(f.ctx, "pm", "warm-up", rate, 5, testLease)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.s.SettleOpen(f.ctx, warm); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Client().Set(f.ctx, f.s.RequestAuditKey("broken-1"), "not a list", 0).Err(); err != nil {
			t.Fatal(err)
		}
		adm := &store.Admission{Agent: "pm", Rate: rate, MaxOpen: 5, Lease: testLease}
		_, created, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), newReq("broken-1", "pm"))
		if err == nil || created || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("a create whose write fails: created %v, err %v; want the WRONGTYPE error", created, err)
		}
		if !adm.Decided || !adm.Decision.Allowed || adm.Decision.Remaining != 1 || !adm.Slot.Reserved {
			t.Fatalf("its admission: decided %v, decision %+v, slot %+v; want one more token taken (1 left) and a slot reserved",
				adm.Decided, adm.Decision, adm.Slot)
		}
		if err := f.s.SettleOpen(f.ctx, adm.Slot); err != nil {
			t.Fatal(err)
		}
		if got := counted(t, f, "pm"); slices.Contains(got, "broken-1") {
			t.Errorf("counted after the slot was settled = %v: broken-1 still holds one", got)
		}
	})
}

// onOneNode runs test on each backend but a Redis Cluster, where a create
// applies its agent's limits before it, by a call of their own (Admit).
func onOneNode(t *testing.T, test func(*testing.T, fixture)) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "redis" && redistest.Cluster() {
				t.Skip("on a Cluster the limits are applied before the create, by a call of their own")
			}
			test(t, newFixture(t, b))
		})
	}
}
