package store_test

import (
	"errors"
	"testing"

	"github.com/approvalbot/approvalbot/store"
)

// GetState reads everything Get reads but the document.
func TestGetStateIsGetWithoutTheDocument(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b, func(o *store.Options) { o.HomeJobs = true })
			rec := f.mustCreate(t, newReq("state-1", "agent-a"))
			if err := f.s.SetMentions(f.ctx, rec.ID, []string{"<@U0ALICE>"}, "U0BOB"); err != nil {
				t.Fatal(err)
			}
			want := f.mustGet(t, rec.ID)
			if len(want.Document) == 0 {
				t.Fatal("Get read no document")
			}
			got, err := f.s.GetState(f.ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Document != nil {
				t.Errorf("GetState read the document: %s", got.Document)
			}
			want.Document = nil
			sameRecord(t, "GetState", got, want)
			for _, id := range []string{"state-missing", "not a valid id"} {
				if _, err := f.s.GetState(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("GetState(%q): %v, want ErrNotFound", id, err)
				}
			}
		})
	}
}
