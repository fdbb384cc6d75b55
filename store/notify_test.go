package store_test

import (
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// With NotifyJobs, closing a request (and only closing it, once) schedules
// its notify job in the same transaction; without, nothing.
func TestNotifyJobs(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b, func(o *store.Options) { o.NotifyJobs = true })
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
			set := func(id string, st aah.Status) {
				t.Helper()
				if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
					return &store.Change{Status: st}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			for _, st := range []aah.Status{aah.StatusResolved, aah.StatusExpired, aah.StatusWithdrawn} {
				id := "nj-" + string(st)
				f.mustCreate(t, newReq(id, "pm"))
				drain()
				set(id, aah.StatusPartial)
				if got := drain(); slices.Contains(got, "notify:"+id) {
					t.Errorf("%s: an open change scheduled the notify job: %v", st, got)
				}
				set(id, st)
				if got := drain(); !slices.Contains(got, "notify:"+id) {
					t.Errorf("%s: closing scheduled %v, want notify:%s", st, got, id)
				}
				set(id, st) // no longer closing: nothing more
				if got := drain(); slices.Contains(got, "notify:"+id) {
					t.Errorf("%s: closed twice? %v", st, got)
				}
			}

			g := newFixture(t, b)
			g.mustCreate(t, newReq("nj-off", "pm"))
			if _, err := g.s.Update(g.ctx, "nj-off", func(store.Record) (*store.Change, error) {
				return &store.Change{Status: aah.StatusWithdrawn}, nil
			}); err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(g.claimAll(t)); slices.Contains(got, "notify:nj-off") {
				t.Errorf("without NotifyJobs: jobs %v", got)
			}
		})
	}
}

// Everyone who answered or signed off is in the request's Home audience,
// reviewer or not: their "answered" entry shows its status.
func TestHomeAudienceIncludesAnswerers(t *testing.T) {
	t.Parallel()
	rec := store.Record{IndexedReviewers: []string{"U0ALICE"}, Mentions: []string{"<@U0BOB>"},
		Answers: map[string]aah.Answer{
			"d1": {DecisionID: "d1", Value: true, By: aah.Person{ID: "U0ADMIN"}},
			"d2": {DecisionID: "d2", Value: true, By: aah.Person{ID: "U0AGENTUSER", Agent: "deploy-gate"},
				Signoffs: []aah.Signoff{{By: aah.Person{ID: "U0SIGNER"}}}},
			"d3": {DecisionID: "d3", Value: "x", Defaulted: true},
		}}
	got := rec.HomeAudience()
	for _, want := range []string{"U0ALICE", "U0BOB", "U0ADMIN", "U0AGENTUSER", "U0SIGNER"} {
		if !slices.Contains(got, want) {
			t.Errorf("HomeAudience() = %v, lacks %s", got, want)
		}
	}
	if slices.Contains(got, "") {
		t.Errorf("HomeAudience() = %v has an empty user", got)
	}
}
