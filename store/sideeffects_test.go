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
				if _, err := f.s.BeginPost(f.ctx, rec.ID, true); err != nil {
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

// BeginPost counts an attempt only while the request is open when asked
// to (the post job, which read it open), so a withdrawal either comes
// first and nothing is posted, or finds the attempt counted (and leaves
// the post job to adopt what it may have sent). A standing approval's
// notice of a request closed as it arrived is counted whatever the status.
func TestBeginPostOnlyWhileOpen(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rec := f.mustCreate(t, newReq("begin-open", "agent"))
			if att, err := f.s.BeginPost(f.ctx, rec.ID, true); err != nil || att.Closed || att.N != 1 {
				t.Fatalf("open request: %+v %v", att, err)
			}
			f.mustWithdraw(t, rec.ID)
			if att, err := f.s.BeginPost(f.ctx, rec.ID, true); err != nil || !att.Closed || att.N != 0 {
				t.Errorf("withdrawn request, only while open: %+v %v; want Closed and nothing counted", att, err)
			}
			if got := f.mustGet(t, rec.ID).Slack.Attempts; got != 1 {
				t.Errorf("attempts = %d after the refused begin, want 1", got)
			}
			if att, err := f.s.BeginPost(f.ctx, rec.ID, false); err != nil || att.Closed || att.N != 2 {
				t.Errorf("withdrawn request, whatever its status: %+v %v; want the second attempt", att, err)
			}
		})
	}
}
