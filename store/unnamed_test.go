package store_test

import (
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/store"
)

// TestUnnamedListedForDefaultReviewers: a request naming nobody is listed,
// while it is open, for a reader who decides such requests (Unnamed), on
// both backends, beside the requests that name the reader.
func TestUnnamedListedForDefaultReviewers(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b)
			unnamed := newReq("un-1", "agent-a")
			unnamed.Unnamed = true
			f.mustCreate(t, unnamed)
			named := newReq("un-2", "agent-a")
			named.Reviewers = []string{"U0NAMED"}
			f.mustCreate(t, named)
			list := func(reviewer string, withUnnamed bool) []string {
				t.Helper()
				page, err := f.s.ListOpen(f.ctx, store.OpenQuery{Kind: store.OpenReviewer, Reviewer: reviewer,
					Unnamed: withUnnamed, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range page.Items {
					ids = append(ids, r.ID)
				}
				return ids
			}
			if got := list("U0DEFAULT", true); !slices.Equal(got, []string{"un-1"}) {
				t.Errorf("a default reviewer's list = %v, want [un-1]", got)
			}
			if got := list("U0NAMED", true); !slices.Equal(got, []string{"un-1", "un-2"}) {
				t.Errorf("a named default reviewer's list = %v, want [un-1 un-2]", got)
			}
			if got := list("U0NAMED", false); !slices.Equal(got, []string{"un-2"}) {
				t.Errorf("a named reviewer's list = %v, want [un-2]", got)
			}
			if rec := f.mustGet(t, "un-1"); !rec.Unnamed {
				t.Error("the request naming nobody reads back as naming someone")
			}
			f.mustWithdraw(t, "un-1")
			if got := list("U0DEFAULT", true); len(got) != 0 {
				t.Errorf("after the withdrawal a default reviewer's list = %v, want none", got)
			}
		})
	}
}
