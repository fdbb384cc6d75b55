package store_test

import (
	"slices"
	"testing"
	"time"
)

func TestHomeState(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]backend{"redis": realRedis(), "miniredis": miniRedis} {
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
