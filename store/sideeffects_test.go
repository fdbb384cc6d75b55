package store_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// One sweep job serves the request's message and every copy: whichever
// overlap is recorded last, the sweep waits for the latest one to end (a
// sweep run early would miss a loser still inside its Slack call).
func TestSweepWaitsForTheLatestOverlap(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rec := f.mustCreate(t, newReq("sweep-late", "agent"))
			for range 2 {
				if _, err := f.s.BeginPost(f.ctx, rec.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := f.s.BeginCopy(f.ctx, rec.ID, "remind:1:U0ALICE"); err != nil {
					t.Fatal(err)
				}
			}
			early, late := f.clk.Now().Add(time.Minute), f.clk.Now().Add(2*time.Minute)
			copyAt := store.Copy{Effect: "remind:1:U0ALICE", Channel: "D0ALICE", TS: "1.000001"}
			if _, _, err := f.s.RecordCopy(f.ctx, rec.ID, copyAt, late); err != nil {
				t.Fatal(err)
			}
			if err := f.s.RecordPost(f.ctx, rec.ID, "C0APPROVALS", "1.000002", rec.Version, early); err != nil {
				t.Fatal(err)
			}
			f.clk.Set(early.Add(time.Second))
			if d := f.depth(t); d.Due != 0 && containsSweep(f.claimAll(t), rec.ID) {
				t.Fatalf("the sweep came due at %s, before the copy's overlap ended at %s", early, late)
			}
			f.clk.Set(late.Add(time.Second))
			if !containsSweep(f.claimAll(t), rec.ID) {
				t.Fatalf("no sweep due after %s", late)
			}
		})
	}
}

func containsSweep(jobs []store.Job, id string) bool {
	for _, j := range jobs {
		if j.ID == store.JobID(store.JobSweep, id) {
			return true
		}
	}
	return false
}
