package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

func TestHomeState(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			// An event id is accepted once.
			for i, want := range []bool{true, false, false} {
				if first, err := f.s.FirstDelivery(f.ctx, "Ev01", time.Hour); err != nil || first != want {
					t.Errorf("delivery %d: first = %v, %v; want %v", i, first, err, want)
				}
			}
			if first, err := f.s.FirstDelivery(f.ctx, "Ev02", time.Hour); err != nil || !first {
				t.Errorf("another event: %v, %v", first, err)
			}
			// Who opened the Home tab.
			if err := f.s.NoteHomeOpened(f.ctx, "U0ALICE", time.Hour); err != nil {
				t.Fatal(err)
			}
			if got, err := f.s.HomeOpened(f.ctx, []string{"U0BOB", "U0ALICE"}); err != nil || !slices.Equal(got, []string{"U0ALICE"}) {
				t.Errorf("HomeOpened = %v, %v", got, err)
			}
			// Recently answered: newest first, once each, missing requests left out.
			for _, id := range []string{"h-1", "h-2"} {
				f.mustCreate(t, newReq(id, "pm"))
			}
			for _, id := range []string{"h-1", "h-gone", "h-2", "h-1"} {
				if err := f.s.NoteAnswered(f.ctx, "U0ALICE", id); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := f.s.RecentlyAnswered(f.ctx, "U0ALICE", 10)
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			if err != nil || !slices.Equal(ids, []string{"h-1", "h-2"}) {
				t.Errorf("RecentlyAnswered = %v, %v", ids, err)
			}
			if recs, err := f.s.RecentlyAnswered(f.ctx, "U0BOB", 10); err != nil || len(recs) != 0 {
				t.Errorf("Bob's = %v, %v", recs, err)
			}
		})
	}
}

// With HomeJobs, exactly the changes that move a request in or out of
// someone's App Home tab schedule its home job, in the same transaction.
func TestHomeJobs(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b, func(o *store.Options) { o.HomeJobs = true })
			drain := func() []string {
				t.Helper()
				jobs := f.claimAll(t)
				for _, j := range jobs {
					if err := f.s.Ack(f.ctx, j); err != nil {
						t.Fatal(err)
					}
				}
				ids := jobIDs(jobs)
				slices.Sort(ids)
				return ids
			}
			update := func(ch store.Change) {
				t.Helper()
				if _, err := f.s.Update(f.ctx, "hj-1", func(store.Record) (*store.Change, error) { return &ch, nil }); err != nil {
					t.Fatal(err)
				}
			}
			home := "home:hj-1"
			f.mustCreate(t, newReq("hj-1", "pm"))
			if got := drain(); !slices.Equal(got, []string{"post:hj-1"}) {
				t.Errorf("created: jobs %v, want its post only (its home job comes a second later)", got)
			}
			// Its post adds the reviewers its message mentions (SetMentions)
			// before that second is out: the create's home job is the one
			// that change schedules, one run.
			if err := f.s.SetMentions(f.ctx, "hj-1", []string{"<@U0BOB>"}); err != nil {
				t.Fatal(err)
			}
			if got := drain(); !slices.Equal(got, []string{home}) {
				t.Errorf("mentions set: jobs %v", got)
			}
			f.clk.Advance(time.Second)
			if got := drain(); len(got) != 0 {
				t.Errorf("a second after the create: jobs %v, want none (the home job ran with the mentions')", got)
			}
			// A request whose post adds nobody has its tabs refreshed a
			// second after its create.
			f.mustCreate(t, newReq("hj-3", "pm"))
			if got := drain(); !slices.Equal(got, []string{"post:hj-3"}) {
				t.Errorf("hj-3 created: jobs %v", got)
			}
			f.clk.Advance(time.Second)
			if got := drain(); !slices.Equal(got, []string{"home:hj-3"}) {
				t.Errorf("a second after hj-3's create: jobs %v", got)
			}
			if err := f.s.MarkPosted(f.ctx, "hj-1", "C0APPROVALS", "1.000001", 1); err != nil {
				t.Fatal(err)
			}
			if got := drain(); !slices.Equal(got, []string{home}) {
				t.Errorf("first posted: jobs %v", got)
			}
			// The link comes after the post is marked, maybe after the home
			// job above ran: it refreshes the tabs again.
			if err := f.s.SetPermalink(f.ctx, "hj-1", "C0APPROVALS", "1000.001", "https://example.slack.com/archives/C0APPROVALS/p1000001"); err != nil {
				t.Fatal(err)
			}
			if got := drain(); !slices.Equal(got, []string{home}) {
				t.Errorf("permalink stored: jobs %v", got)
			}
			update(store.Change{Status: aah.StatusPartial, Bump: true})
			if got := drain(); !slices.Equal(got, []string{"sync:hj-1"}) {
				t.Errorf("answered: jobs %v, want only the message sync", got)
			}
			update(store.Change{AddReviewers: []string{"U0ALICE"}, Quiet: true})
			if got := drain(); !slices.Equal(got, []string{home}) {
				t.Errorf("new reviewer: jobs %v", got)
			}
			update(store.Change{AddReviewers: []string{"U0ALICE"}, Quiet: true})
			if got := drain(); len(got) != 0 {
				t.Errorf("the same reviewer again: jobs %v", got)
			}
			update(store.Change{Status: aah.StatusEscalated, Bump: true})
			if got := drain(); !slices.Equal(got, []string{home, "sync:hj-1"}) {
				t.Errorf("escalated: jobs %v", got)
			}
			f.mustWithdraw(t, "hj-1")
			if got := drain(); !slices.Equal(got, []string{home, "sync:hj-1"}) {
				t.Errorf("withdrawn: jobs %v", got)
			}

			// Without HomeJobs (the default), none.
			g := newFixture(t, b)
			g.mustCreate(t, newReq("hj-2", "pm"))
			if got := jobIDs(g.claimAll(t)); !slices.Equal(got, []string{"post:hj-2"}) {
				t.Errorf("without HomeJobs: jobs %v", got)
			}
		})
	}
}

// Home publishes of one user stay a window apart even when the caller read
// its clock a little before its script ran (a loaded machine, a GC pause).
// The spacing key once expired exactly one window after the publish it
// remembers, so a caller whose "now" was a few milliseconds stale found it
// gone and scheduled the next publish at once: two publishes in 4.997s. The
// embedded store runs on the test's clock, so the race is exact here.
func TestHomePublishesStayAWindowApartForALateCaller(t *testing.T) {
	t.Parallel()
	clk := newClock()
	// Redis reads the clock as it is; the store's reads are lag stale.
	var lag time.Duration
	rdb, prefix := redistest.Embedded(t, clk.Now)
	s := mustNew(t, rdb, store.Options{Prefix: prefix, Now: func() time.Time { return clk.Now().Add(-lag) }})
	ctx := testCtx(t)
	const window = 5 * time.Second
	const user = "U0ALICE"
	claim := func() store.Job {
		t.Helper()
		for shard := range store.Shards {
			jobs, err := s.Claim(ctx, shard, 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if j.ID == store.JobHomePublish+":"+user {
					if err := s.Ack(ctx, j); err != nil {
						t.Fatal(err)
					}
					return j
				}
			}
		}
		t.Fatal("no Home publish was due")
		return store.Job{}
	}
	if err := s.ScheduleHomePublish(ctx, []string{user}, window); err != nil {
		t.Fatal(err)
	}
	if j := claim(); !j.Due.Equal(t0) {
		t.Fatalf("the first publish is due at %s, want at once (%s)", j.Due, t0)
	}
	// One window and a millisecond later by Redis's clock, a caller whose
	// clock read is 4ms stale schedules the next publish.
	clk.Advance(window + time.Millisecond)
	lag = 4 * time.Millisecond
	if err := s.ScheduleHomePublish(ctx, []string{user}, window); err != nil {
		t.Fatal(err)
	}
	lag = 0
	clk.Advance(time.Second)
	if j, want := claim(), t0.Add(window); j.Due.Before(want) {
		t.Errorf("the second publish is due at %s, %v after the first; want at least a window (%v) after it",
			j.Due, j.Due.Sub(t0), window)
	}
}
