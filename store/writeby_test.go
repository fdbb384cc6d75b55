package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Create honours WriteBy as Update does: once its time passed, Redis
// stores nothing (intake fences the create of a reserved open-request slot
// with it, see ReserveOpen).
func TestCreateWriteBy(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			_, _, err := f.s.Create(store.WriteBy(f.ctx, time.Now().Add(-time.Millisecond)), newReq("late", "pm"))
			if !errors.Is(err, store.ErrWriteDeadline) {
				t.Fatalf("Create past its WriteBy: %v; want ErrWriteDeadline", err)
			}
			if _, err := f.s.Get(f.ctx, "late"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(late) = %v; want not found", err)
			}
			if _, created, err := f.s.Create(store.WriteBy(f.ctx, time.Now().Add(time.Minute)), newReq("late", "pm")); err != nil || !created {
				t.Fatalf("Create within its WriteBy: created %v, %v", created, err)
			}
		})
	}
}
