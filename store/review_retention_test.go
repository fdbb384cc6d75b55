package store_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// A sweep whose Scan window is full of closed requests it must keep (a
// callback pending, or no export yet) neither asks to run again at once
// forever (the job then reran every second, rescanning the same window)
// nor stays stuck there: it goes on past them, deletes what may go, and
// once it looked at every request past the retention it says it is done.
func TestRetentionSweepIsNotStuckBehindKeptRequests(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "")
			const shard = 6
			ids := idsInShard("stuck", shard, 7)
			kept, deletable, unexported := ids[:4], ids[4:6], ids[6]
			for _, id := range ids[:6] {
				f.mustCreate(t, newReq(id, "agent"))
				f.clk.Advance(time.Millisecond)
			}
			for _, j := range f.claimAll(t) { // their posts, done
				if err := f.s.Ack(f.ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range kept {
				f.resolveWithDelivery(t, id) // the callback stays due
			}
			for _, id := range deletable {
				f.mustWithdraw(t, id)
			}
			f.exportAll(t, "", time.Time{})
			f.mustCreate(t, newReq(unexported, "agent"))
			f.mustWithdraw(t, unexported)
			for _, j := range f.claimAll(t) {
				if j.Kind == store.JobPost {
					if err := f.s.Ack(f.ctx, j); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.clk.Advance(2 * day)
			o := store.RetentionOptions{Retention: day, Batch: 10, Scan: 4}
			runs := 0
			for rep := f.sweep(t, shard, o); rep.More; rep = f.sweep(t, shard, o) {
				if runs++; runs > 6 {
					t.Fatalf("the sweep still asks to run again at once after %d runs: %+v", runs, rep)
				}
			}
			for _, id := range deletable {
				if f.exists(id) {
					t.Errorf("%s (closed, exported, nothing pending) was never reached behind the kept requests", id)
				}
			}
			for _, id := range append(kept, unexported) {
				if !f.exists(id) {
					t.Errorf("%s was deleted", id)
				}
			}
			// Nothing changed: the next pass (at the next interval) looks
			// at each request once more, then stops again.
			for runs = 1; ; runs++ {
				rep := f.sweep(t, shard, o)
				if rep.Deleted != 0 || runs > 2 {
					t.Fatalf("a pass with nothing to do, run %d = %+v", runs, rep)
				}
				if !rep.More {
					break
				}
			}
		})
	}
}
