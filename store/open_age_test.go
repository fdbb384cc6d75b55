package store_test

import (
	"slices"
	"testing"
	"time"
)

// OpenByAge buckets the open requests by the time since they were received,
// on the store's clock, across shards; closed requests are not counted. An
// age exactly on a bound falls in the older bucket.
func TestOpenByAge(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			bounds := []time.Duration{time.Hour, 24 * time.Hour}
			// Received at t0, t0+30h, t0+47h, t0+47h30m and t0+48h (one more,
			// withdrawn): at t0+48h they are 48h, 18h, 1h (on a bound), 30m
			// and 0 old. Ids in different shards.
			for i, at := range []time.Duration{0, 30 * time.Hour, 47 * time.Hour, 47*time.Hour + 30*time.Minute, 48 * time.Hour} {
				f.clk.Set(t0.Add(at))
				f.mustCreate(t, newReq(idsInShard("age", 3*i, 1)[0], "pm"))
			}
			closed := idsInShard("age", 3, 2)[1]
			f.mustCreate(t, newReq(closed, "pm"))
			f.mustWithdraw(t, closed)

			got, err := f.s.OpenByAge(f.ctx, bounds)
			if err != nil || !slices.Equal(got, []int64{2, 2, 1}) {
				t.Errorf("by <1h, 1h-1d, >1d: %v %v, want [2 2 1]", got, err)
			}
			got, err = f.s.OpenByAge(f.ctx, nil)
			if err != nil || !slices.Equal(got, []int64{5}) {
				t.Errorf("no bounds: %v %v, want [5]", got, err)
			}
		})
	}
}
