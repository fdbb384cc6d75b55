package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// TestEventCallbackJobs: an event a subscription wants schedules the
// request's evdeliver job in its own transaction; the cursor moves only by
// RecordEventAttempt, from the cursor the attempt began at; a retry's due
// time is not pulled forward by new events.
func TestEventCallbackJobs(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b)
			n := newReq("evsub-1", "agent-a")
			n.Events = &aah.EventSubscription{URL: "https://agent.example.com/ev"}
			rec := f.mustCreate(t, n)
			if rec.Events.URL != n.Events.URL || !rec.Events.Subscribed() || rec.Events.Cursor == "" {
				t.Fatalf("Events = %+v; want subscribed at the stream's tail", rec.Events)
			}
			job := store.JobID(store.JobEvents, rec.ID)
			jobs := f.claimAll(t)
			if !slices.Contains(jobIDs(jobs), job) {
				t.Fatalf("jobs after create = %q; want %s", jobIDs(jobs), job)
			}
			for _, j := range jobs {
				if err := f.s.Ack(f.ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			ev, _, found, err := f.s.NextEvent(f.ctx, f.mustGet(t, rec.ID))
			if err != nil || !found || ev.Type != store.EventInputRequested {
				t.Fatalf("NextEvent = %+v, found %v, err %v; want input:requested", ev, found, err)
			}
			// Settle it: the cursor moves to the event; nothing is due.
			from := rec.Events.Cursor
			if err := f.s.RecordEventAttempt(f.ctx, rec.ID, store.EventAttempt{From: from, EventID: ev.ID, At: f.clk.Now(), Status: 200, Attempt: 1}, store.EventsActive, false); err != nil {
				t.Fatalf("RecordEventAttempt: %v", err)
			}
			if got := f.mustGet(t, rec.ID).Events.Cursor; got != ev.ID {
				t.Fatalf("cursor = %s, want %s", got, ev.ID)
			}
			// A stale worker (the old cursor) records nothing.
			err = f.s.RecordEventAttempt(f.ctx, rec.ID, store.EventAttempt{From: from, EventID: ev.ID, At: f.clk.Now(), Status: 200}, store.EventsActive, false)
			if !errors.Is(err, store.ErrStaleCursor) {
				t.Fatalf("stale RecordEventAttempt = %v; want ErrStaleCursor", err)
			}
			if _, _, found, _ := f.s.NextEvent(f.ctx, f.mustGet(t, rec.ID)); found {
				t.Fatal("NextEvent found an event after the last one was delivered")
			}
			// An answer: input:received, and the job again.
			if _, err := f.s.Update(f.ctx, rec.ID, func(store.Record) (*store.Change, error) {
				return answerChange("d1", "U1", "approve", f.clk.Now()), nil
			}); err != nil {
				t.Fatal(err)
			}
			jobs = f.claimAll(t)
			if !slices.Equal(jobIDs(jobs), []string{job}) {
				t.Fatalf("jobs after an answer = %q; want [%s]", jobIDs(jobs), job)
			}
			cur := f.mustGet(t, rec.ID)
			ev2, _, found, err := f.s.NextEvent(f.ctx, cur)
			if err != nil || !found || ev2.Type != store.EventInputReceived {
				t.Fatalf("NextEvent = %+v, found %v, err %v; want input:received", ev2, found, err)
			}
			// It fails: retried in an hour, and another event does not pull that forward.
			next := f.clk.Now().Add(time.Hour)
			if err := f.s.RecordEventAttempt(f.ctx, rec.ID, store.EventAttempt{From: cur.Events.Cursor, EventID: ev2.ID, At: f.clk.Now(), Status: 503, Error: "HTTP 503", Attempt: 1, NextAttemptAt: &next}, store.EventsRetrying, false); err != nil {
				t.Fatal(err)
			}
			if err := f.s.Ack(f.ctx, jobs[0]); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.Update(f.ctx, rec.ID, func(store.Record) (*store.Change, error) {
				return answerChange("d2", "U1", "approve", f.clk.Now()), nil
			}); err != nil {
				t.Fatal(err)
			}
			if jobs := f.claimAll(t); len(jobs) != 0 {
				t.Fatalf("jobs before the retry is due = %q; want none", jobIDs(jobs))
			}
			got := f.mustGet(t, rec.ID).Events
			if got.State != store.EventsRetrying || got.Attempts != 1 || got.LastError != "HTTP 503" || !got.NextAttemptAt.Equal(next.Truncate(time.Millisecond)) {
				t.Fatalf("Events = %+v; want retrying, 1 attempt, HTTP 503, next %s", got, next)
			}
			f.clk.Advance(time.Hour)
			if jobs := f.claimAll(t); !slices.Equal(jobIDs(jobs), []string{job}) {
				t.Fatalf("jobs when the retry is due = %q; want [%s]", jobIDs(jobs), job)
			}
			// 410: unsubscribed; later events schedule nothing.
			if err := f.s.RecordEventAttempt(f.ctx, rec.ID, store.EventAttempt{From: cur.Events.Cursor, EventID: ev2.ID, At: f.clk.Now(), Status: 410, Error: "HTTP 410", Attempt: 2}, store.EventsGone, false); err != nil {
				t.Fatal(err)
			}
			if st := f.mustGet(t, rec.ID).Events; st.State != store.EventsGone || st.Subscribed() {
				t.Fatalf("Events = %+v; want gone", st)
			}
			f.mustWithdraw(t, rec.ID)
			for _, j := range f.claimAll(t) {
				if j.ID == job {
					t.Fatalf("an unsubscribed request's event scheduled %s", job)
				}
			}
		})
	}
}

// TestEventCallbackTypes: events the subscription does not want schedule
// no job, and NextEvent steps over them.
func TestEventCallbackTypes(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b)
			n := newReq("evsub-types", "agent-a")
			n.Events = &aah.EventSubscription{URL: "https://agent.example.com/ev", Types: []string{store.EventWithdrawn}}
			rec := f.mustCreate(t, n)
			job := store.JobID(store.JobEvents, rec.ID)
			if slices.Contains(jobIDs(f.claimAll(t)), job) {
				t.Fatal("input:requested scheduled the job of a subscription to withdrawn only")
			}
			f.mustWithdraw(t, rec.ID)
			if !slices.Contains(jobIDs(f.claimAll(t)), job) {
				t.Fatal("withdrawn did not schedule the job")
			}
			ev, skipped, found, err := f.s.NextEvent(f.ctx, f.mustGet(t, rec.ID))
			if err != nil || !found || ev.Type != store.EventWithdrawn || skipped == "" {
				t.Fatalf("NextEvent = %s, skipped %q, found %v, err %v; want withdrawn after a skipped event", ev.Type, skipped, found, err)
			}
		})
	}
}
