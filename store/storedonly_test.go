package store_test

import (
	"errors"
	"testing"

	"github.com/approvalbot/approvalbot/store"
)

// Under StoredOnly, Create answers the resubmission of a stored request as
// always and stores nothing new: intake's retry let past the limits.
func TestCreateStoredOnly(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			ctx := store.StoredOnly(f.ctx)
			if _, created, err := f.s.Create(ctx, newReq("gone", "pm")); !errors.Is(err, store.ErrNotFound) || created {
				t.Errorf("Create of an unstored id under StoredOnly = created %v, %v; want ErrNotFound", created, err)
			}
			if _, err := f.s.Get(f.ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("it was stored: %v", err)
			}
			f.mustCreate(t, newReq("kept", "pm"))
			if rec, created, err := f.s.Create(ctx, newReq("kept", "pm")); err != nil || created || rec.ID != "kept" {
				t.Errorf("resubmission under StoredOnly = %+v, created %v, %v; want the stored request", rec.ID, created, err)
			}
		})
	}
}
