package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// testLease is the reservation lease of these tests (the API's is twice
// its store timeout).
const testLease = 10 * time.Second

// intake does for one new request what the API does under a cap
// (webhook's create): reserve a slot, create under the reservation's
// fence, then confirm or settle the slot. It returns "created",
// "duplicate" or "refused".
func intake(ctx context.Context, s *store.Store, agent, id string, max int) (string, error) {
	slot, err := s.ReserveOpen(ctx, agent, id, max, testLease)
	if err != nil {
		return "", err
	}
	if !slot.Allowed() {
		return "refused", nil
	}
	_, created, err := s.Create(store.WriteBy(ctx, slot.CreateBy), newReq(id, agent))
	switch {
	case err != nil && store.Unavailable(err):
		return "", err // the reservation stays, for reconcile
	case err != nil:
		return "", errors.Join(err, s.SettleOpen(ctx, slot))
	case created:
		return "created", s.ConfirmOpen(ctx, slot)
	}
	return "duplicate", s.SettleOpen(ctx, slot)
}

func mustIntake(t *testing.T, f fixture, agent, id string, max int, want string) {
	t.Helper()
	got, err := intake(f.ctx, f.s, agent, id, max)
	if err != nil || got != want {
		t.Fatalf("intake(%s, %s, cap %d) at +%v = %q, %v; want %q", agent, id, max, f.clk.Now().Sub(t0), got, err, want)
	}
}

// counted is the agent's count as ids, sorted.
func counted(t *testing.T, f fixture, agent string) []string {
	t.Helper()
	m, err := f.s.OpenCounted(f.ctx, agent)
	if err != nil {
		t.Fatalf("OpenCounted(%s): %v", agent, err)
	}
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func wantOpen(t *testing.T, f fixture, agent string, want int64) {
	t.Helper()
	if n, err := f.s.OpenRequests(f.ctx, agent); err != nil || n != want {
		t.Fatalf("OpenRequests(%s) = %d, %v; want %d", agent, n, err, want)
	}
}

// replica is another process's store over the same Redis and key space.
func (f fixture) replica(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	opts.Prefix, opts.Now = f.s.Prefix(), f.clk.Now
	return mustNew(t, f.s.Client(), opts)
}

// TestOpenCap runs the open-request cap's tests on both backends.
func TestOpenCap(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testOpenCap(t, b)
		})
	}
}

func testOpenCap(t *testing.T, b backend) {
	for name, test := range map[string]func(*testing.T, backend){
		"ConcurrentIntakes":  testOpenCapConcurrentIntakes,
		"CrashedReservation": testOpenCapCrashedReservation,
		"Reconcile":          testOpenCapReconcile,
		"Resubmission":       testOpenCapResubmission,
		"Seed":               testOpenCapSeed,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

// Fifty intakes at once, from two replicas, of an agent capped at 5: exactly
// 5 are created and 45 refused, whatever the interleaving (the old count,
// read before the create, let them all in). Closing one lets exactly one
// more in; another agent is not affected.
func testOpenCapConcurrentIntakes(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.OpenCounts = true })
	replicas := []*store.Store{f.s, f.replica(t, store.Options{OpenCounts: true})}
	const n, max = 50, 5
	var mu sync.Mutex
	outcomes := map[string]int{}
	var created []string
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("flood-%02d", i)
			got, err := intake(f.ctx, replicas[i%2], "pm", id, max)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("intake %s: %v", id, err)
			}
			outcomes[got]++
			if got == "created" {
				created = append(created, id)
			}
		})
	}
	wg.Wait()
	if outcomes["created"] != max || outcomes["refused"] != n-max {
		t.Fatalf("outcomes = %v; want %d created, %d refused", outcomes, max, n-max)
	}
	wantOpen(t, f, "pm", max)
	sort.Strings(created)
	if got := counted(t, f, "pm"); fmt.Sprint(got) != fmt.Sprint(created) {
		t.Errorf("counted %v; want the created %v", got, created)
	}
	mustIntake(t, f, "other", "theirs-1", 1, "created")

	f.mustWithdraw(t, created[0])
	var wg2 sync.WaitGroup
	outcomes = map[string]int{}
	for i := range 10 {
		wg2.Go(func() {
			got, err := intake(f.ctx, replicas[i%2], "pm", fmt.Sprintf("more-%d", i), max)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("intake more-%d: %v", i, err)
			}
			outcomes[got]++
		})
	}
	wg2.Wait()
	if outcomes["created"] != 1 || outcomes["refused"] != 9 {
		t.Errorf("after one withdrawal, outcomes = %v; want 1 created, 9 refused", outcomes)
	}
	wantOpen(t, f, "pm", max)
}

// A reservation whose intake died before creating anything holds its slot
// until its deadline (its create might still have committed until then),
// and is dropped by the first reconcile after it; before that, refusals
// reconcile at most once per OpenReconcileEvery.
func testOpenCapCrashedReservation(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.OpenCounts = true })
	slot, err := f.s.ReserveOpen(f.ctx, "pm", "ghost", 2, testLease)
	if err != nil || !slot.Reserved || slot.Open != 1 {
		t.Fatalf("ReserveOpen(ghost) = %+v, %v; want reserved, 1 open", slot, err)
	}
	mustIntake(t, f, "pm", "real-1", 2, "created")
	mustIntake(t, f, "pm", "real-2", 2, "refused")
	f.clk.Advance(testLease - time.Millisecond)
	mustIntake(t, f, "pm", "real-2", 2, "refused") // reconciled: the ghost may still commit
	f.clk.Advance(time.Millisecond)
	mustIntake(t, f, "pm", "real-2", 2, "refused") // past its deadline, but reconciled just now
	f.clk.Advance(store.OpenReconcileEvery - 2*time.Millisecond)
	mustIntake(t, f, "pm", "real-2", 2, "refused")
	f.clk.Advance(time.Millisecond)
	mustIntake(t, f, "pm", "real-2", 2, "created") // the next reconcile drops it
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[real-1 real-2]" {
		t.Errorf("counted %v; want [real-1 real-2]", got)
	}
}

// Reconcile at the cap settles what crashes leave: a confirmed member whose
// request closed without its removal (a process died after the close) is
// removed, and a reservation past its deadline whose request was created
// (the intake died before confirming) is confirmed, not dropped, so it
// still counts.
func testOpenCapReconcile(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.OpenCounts = true })
	mustIntake(t, f, "pm", "a", 3, "created")
	mustIntake(t, f, "pm", "b", 3, "created")
	// c: reserved and created, never confirmed.
	slot, err := f.s.ReserveOpen(f.ctx, "pm", "c", 3, testLease)
	if err != nil || !slot.Reserved {
		t.Fatalf("ReserveOpen(c) = %+v, %v", slot, err)
	}
	if _, _, err := f.s.Create(store.WriteBy(f.ctx, slot.CreateBy), newReq("c", "pm")); err != nil {
		t.Fatal(err)
	}
	// a closes on a replica that does not keep the counts: it stays counted.
	old := approvalOn(f, f.replica(t, store.Options{}))
	if _, err := old.Withdraw(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("counted %v; want [a b c]", got)
	}
	f.clk.Advance(testLease)
	mustIntake(t, f, "pm", "d", 3, "created") // a reconciled away
	m, err := f.s.OpenCounted(f.ctx, "pm")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["b"] < store.OpenConfirmed || m["c"] < store.OpenConfirmed || m["d"] < store.OpenConfirmed {
		t.Errorf("counted %v; want b, c and d confirmed", m)
	}
	wantOpen(t, f, "pm", 3)
	f.clk.Advance(store.OpenReconcileEvery)
	mustIntake(t, f, "pm", "e", 3, "refused")
}

// A resubmission takes no second slot: not while the request is open (it
// is counted already), not when it closed (the slot it took to look is
// released), not when several copies race.
func testOpenCapResubmission(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.OpenCounts = true })
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for range 10 {
		wg.Go(func() {
			got, err := intake(f.ctx, f.s, "pm", "same", 2)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("intake: %v", err)
			}
			outcomes[got]++
		})
	}
	wg.Wait()
	if outcomes["created"] != 1 || outcomes["duplicate"] != 9 {
		t.Fatalf("10 copies at once: %v; want 1 created, 9 duplicates", outcomes)
	}
	mustIntake(t, f, "pm", "same", 2, "duplicate")
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[same]" {
		t.Fatalf("counted %v; want [same]", got)
	}
	mustIntake(t, f, "pm", "second", 2, "created")
	mustIntake(t, f, "pm", "same", 2, "duplicate") // at the cap, still answered
	f.mustWithdraw(t, "same")
	mustIntake(t, f, "pm", "same", 2, "duplicate") // closed: takes a slot to look, gives it back
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[second]" {
		t.Fatalf("counted %v; want [second]", got)
	}
	mustIntake(t, f, "pm", "third", 2, "created")
	mustIntake(t, f, "pm", "fourth", 2, "refused")
}

// A count never kept before (data from before the cap was exact, or an
// agent that was not capped) is seeded from the agent's status indexes,
// and seeded again every OpenReseedEvery, which catches requests created
// without a reservation meanwhile.
func testOpenCapSeed(t *testing.T, b backend) {
	f := newFixture(t, b, func(o *store.Options) { o.OpenCounts = true })
	for i := range 3 {
		f.mustCreate(t, newReq(fmt.Sprintf("old-%d", i), "pm"))
	}
	f.mustWithdraw(t, "old-0")
	mustIntake(t, f, "pm", "new-1", 3, "created")
	mustIntake(t, f, "pm", "new-2", 3, "refused")
	f.mustCreate(t, newReq("uncounted", "pm")) // an older replica's
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[new-1 old-1 old-2]" {
		t.Fatalf("counted %v; want [new-1 old-1 old-2]", got)
	}
	f.mustWithdraw(t, "old-1")
	f.clk.Advance(store.OpenReseedEvery)
	mustIntake(t, f, "pm", "new-2", 3, "refused") // uncounted counts again
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[new-1 old-2 uncounted]" {
		t.Fatalf("counted %v; want [new-1 old-2 uncounted]", got)
	}
}

// approvalOn is the core over another process's store s.
func approvalOn(f fixture, s *store.Store) *approval.Core {
	return approval.New(s, approval.Options{Now: f.clk.Now})
}

// TestAdmit: both limits in one round trip. The rate is checked first and
// a request it refuses reserves no slot; one it lets through gets a slot,
// or the cap's refusal.
func TestAdmit(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rate := store.Rate{Count: 3, Per: time.Minute, Burst: 3}
			admit := func(id string) (store.RateDecision, store.OpenSlot) {
				t.Helper()
				d, slot, err := f.s.Admit(f.ctx, "pm", id, rate, 2, testLease)
				if err != nil {
					t.Fatal(err)
				}
				return d, slot
			}
			for i, id := range []string{"a1", "a2"} {
				if d, slot := admit(id); !d.Allowed || !slot.Reserved || slot.Open != int64(i+1) {
					t.Fatalf("Admit(%s) = %+v, %+v; want allowed and reserved, %d open", id, d, slot, i+1)
				}
			}
			if d, slot := admit("a3"); !d.Allowed || slot.Allowed() || slot.Open != 2 {
				t.Fatalf("Admit(a3) = %+v, %+v; want allowed by the rate, refused by the cap at 2", d, slot)
			}
			if d, slot := admit("a4"); d.Allowed || d.Wait <= 0 || slot.Allowed() {
				t.Fatalf("Admit(a4) = %+v, %+v; want refused by the rate (3 per minute) with a wait", d, slot)
			}
			counted, err := f.s.OpenCounted(f.ctx, "pm")
			if err != nil || len(counted) != 2 {
				t.Fatalf("counted %v, %v; want a1 and a2 only: refusals reserve nothing", counted, err)
			}
		})
	}
}
