package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// The intake bucket refills exactly by the store's clock, on real Redis and
// on the embedded store (whose keys expire on that clock too): each step
// moves the fake clock, takes a token, and checks the answer to the
// millisecond.
func TestIntakeTokenBucket(t *testing.T) {
	t.Parallel()
	type step struct {
		advance   time.Duration // before the take; negative: the clock goes back
		agent     string        // "" is "pm"
		allowed   bool
		remaining int64
		wait      time.Duration
	}
	for _, tc := range []struct {
		name  string
		rate  store.Rate
		steps []step
	}{
		{"burst, then one token per 30s", store.Rate{Count: 2, Per: time.Minute, Burst: 3}, []step{
			{0, "", true, 2, 0},
			{0, "", true, 1, 0},
			{0, "", true, 0, 0},
			{0, "", false, 0, 30 * time.Second},
			{0, "other", true, 2, 0}, // another agent has its own bucket
			{29999 * time.Millisecond, "", false, 0, time.Millisecond},
			{time.Millisecond, "", true, 0, 0},
			{0, "", false, 0, 30 * time.Second},
			{10 * time.Minute, "", true, 2, 0}, // refilled to the burst, no further
			{-time.Hour, "", true, 1, 0},       // a clock behind refills nothing...
			{time.Hour, "", true, 0, 0},        // ...and does not move the bucket's time back
			{0, "", false, 0, 30 * time.Second},
		}},
		{"a token every 333⅓ ms rounds the wait up", store.Rate{Count: 3, Per: time.Second, Burst: 1}, []step{
			{0, "", true, 0, 0},
			{0, "", false, 0, 334 * time.Millisecond},
			{333 * time.Millisecond, "", false, 0, time.Millisecond},
			{time.Millisecond, "", true, 0, 0},
			{0, "", false, 0, 334 * time.Millisecond},
		}},
		{"a refused request takes nothing", store.Rate{Count: 1, Per: time.Hour, Burst: 1}, []step{
			{0, "", true, 0, 0},
			{30 * time.Minute, "", false, 0, 30 * time.Minute},
			{0, "", false, 0, 30 * time.Minute},
			{30 * time.Minute, "", true, 0, 0},
		}},
		{"off allows everything", store.Rate{}, []step{
			{0, "", true, 0, 0}, {0, "", true, 0, 0}, {0, "", true, 0, 0},
		}},
	} {
		for name, b := range backends() {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				for i, st := range tc.steps {
					f.clk.Advance(st.advance)
					agent := st.agent
					if agent == "" {
						agent = "pm"
					}
					got, err := f.s.TakeIntakeToken(f.ctx, agent, tc.rate)
					if err != nil {
						t.Fatalf("step %d: TakeIntakeToken: %v", i, err)
					}
					want := store.RateDecision{Allowed: st.allowed, Remaining: st.remaining, Wait: st.wait}
					if got != want {
						t.Errorf("step %d (%s, +%v): got %+v, want %+v", i, agent, st.advance, got, want)
					}
				}
			})
		}
	}
}

// The bucket is one string, level and time, whose TTL is the time it takes
// to refill (and a second), after which a missing key means the same: a
// full bucket. A value it did not write reads as a full bucket too.
func TestIntakeBucketKeepsItsStateInOneString(t *testing.T) {
	t.Parallel()
	rate := store.Rate{Count: 1, Per: time.Minute, Burst: 2}
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rdb, key := f.s.Client(), f.s.RateKey("pm")
			if _, err := f.s.TakeIntakeToken(f.ctx, "pm", rate); err != nil {
				t.Fatal(err)
			}
			got, err := rdb.Get(f.ctx, key).Result()
			if want := fmt.Sprintf("60000:%d", f.clk.Now().UnixMilli()); err != nil || got != want {
				t.Fatalf("bucket %q, %v; want %q (a minute's units left of two, taken now)", got, err, want)
			}
			if ttl, err := rdb.PTTL(f.ctx, key).Result(); err != nil || ttl <= 60*time.Second || ttl > 61*time.Second {
				t.Errorf("bucket TTL %v, %v; want the minute it takes to refill and a second", ttl, err)
			}
			if err := rdb.Set(f.ctx, key, "l=1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if d, err := f.s.TakeIntakeToken(f.ctx, "pm", rate); err != nil || d != (store.RateDecision{Allowed: true, Remaining: 1}) {
				t.Errorf("after a foreign value: %+v, %v; want a full bucket's first token", d, err)
			}
		})
	}
}

// OpenRequests counts an agent's open requests in every shard, and only
// its own and only open ones.
func TestOpenRequests(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			count := func(agent string) int64 {
				t.Helper()
				n, err := f.s.OpenRequests(f.ctx, agent)
				if err != nil {
					t.Fatalf("OpenRequests(%s): %v", agent, err)
				}
				return n
			}
			shards := map[int]bool{}
			for i := range 20 {
				id := fmt.Sprintf("open-%d", i)
				shards[shardOf(id)] = true
				f.mustCreate(t, newReq(id, "pm"))
			}
			if len(shards) < 2 {
				t.Fatalf("the requests fell in %d shard(s); the test needs several", len(shards))
			}
			f.mustCreate(t, newReq("theirs", "other"))
			if n := count("pm"); n != 20 {
				t.Errorf("OpenRequests(pm) = %d, want 20", n)
			}
			f.mustWithdraw(t, "open-3")
			if n := count("pm"); n != 19 {
				t.Errorf("after a withdrawal, OpenRequests(pm) = %d, want 19", n)
			}
			if n := count("other"); n != 1 {
				t.Errorf("OpenRequests(other) = %d, want 1", n)
			}
			if n := count("nobody"); n != 0 {
				t.Errorf("OpenRequests(nobody) = %d, want 0", n)
			}
		})
	}
}
