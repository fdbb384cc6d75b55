package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// afterPipelineHook runs fn once, right after the first pipeline holding
// an HMGET of key was answered.
type afterPipelineHook struct {
	mu  sync.Mutex
	key string
	fn  func()
}

func (h *afterPipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *afterPipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *afterPipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.mu.Lock()
		var fn func()
		for _, c := range cmds {
			if a := c.Args(); h.fn != nil && c.Name() == "hmget" && len(a) > 1 && a[1] == h.key {
				fn, h.fn = h.fn, nil
				break
			}
		}
		h.mu.Unlock()
		if fn != nil {
			fn()
		}
		return err
	}
}

// withStaleMember is the race tests' start: an agent pm at its cap of 2
// with x and y, x's member outliving its request (x closed on a replica
// that does not keep the counts, then deleted), and a hook to run code
// between a reconcile's reads and its removals. slot is x's shard's key
// prefix.
func withStaleMember(t *testing.T) (fixture, *afterPipelineHook, string) {
	t.Helper()
	hook := &afterPipelineHook{}
	clk := newClock()
	rdb, prefix := redistest.Client(t)
	addHooks(rdb, hook)
	f := fixture{s: mustNew(t, rdb, store.Options{Prefix: prefix, Now: clk.Now, OpenCounts: true}), clk: clk, ctx: testCtx(t)}
	mustIntake(t, f, "pm", "x", 2, "created")
	mustIntake(t, f, "pm", "y", 2, "created")
	if _, err := approvalOn(f, f.replica(t, store.Options{})).Withdraw(f.ctx, "x"); err != nil {
		t.Fatal(err)
	}
	slot := fmt.Sprintf("%s:{s%02d}", prefix, shardOf("x"))
	rdb.Del(f.ctx, slot+":req:x", slot+":audit:x")
	rdb.ZRem(f.ctx, slot+":idx:status:withdrawn", "x")
	rdb.ZRem(f.ctx, slot+":idx:agent:pm:withdrawn", "x")
	rdb.ZRem(f.ctx, slot+":idx:agent:pm:all", "x")
	return f, hook, slot
}

// reconcileRacing has z, at pm's cap, reconcile its count, and runs
// during between the reconcile's reads and its removals: z must be refused
// and the count left [x y].
func reconcileRacing(t *testing.T, f fixture, hook *afterPipelineHook, slot string, during func()) {
	t.Helper()
	hook.mu.Lock()
	hook.key = slot + ":req:x"
	hook.fn = during
	hook.mu.Unlock()
	got, err := intake(f.ctx, f.s, "pm", "z", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got != "refused" {
		t.Errorf("z = %q: the agent now has x, y and z open, past its cap of 2", got)
	}
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[x y]" {
		t.Errorf("counted %v; want [x y]", got)
	}
}

// A member of an agent's count can outlive its request (closed on a
// replica that died before removing it, then deleted by retention). When
// the agent submits that id again, the intake finds the member and takes
// no slot (Held). If a reconcile read the member's request as missing just
// before the new request was stored, it must not remove the member
// afterwards: the new request is open, and would be counted nowhere, and
// the agent would get one request past its cap.
func TestOpenCapHeldMemberSurvivesAConcurrentReconcile(t *testing.T) {
	t.Parallel()
	f, hook, slot := withStaleMember(t)
	if got := counted(t, f, "pm"); fmt.Sprint(got) != "[x y]" {
		t.Fatalf("counted %v; want [x y]", got)
	}
	// z, at the cap, reconciles; between its reads and its removals, x is
	// submitted again (and stored: a new open request).
	reconcileRacing(t, f, hook, slot, func() { mustIntake(t, f, "pm", "x", 2, "created") })
}

// The same race, with the count re-seeded from the agent's indexes in
// between (its OpenReseedEvery ran out): the seed must not give the new
// request's member back the score the reconcile read either.
func TestOpenCapSeedDoesNotRestoreAScoreAReconcileRead(t *testing.T) {
	t.Parallel()
	f, hook, slot := withStaleMember(t)
	reconcileRacing(t, f, hook, slot, func() {
		mustIntake(t, f, "pm", "x", 2, "created")
		f.clk.Advance(store.OpenReseedEvery)
		mustIntake(t, f, "pm", "w", 2, "refused") // seeds the count again first
	})
}

// The same race when x is submitted again through intake's own path: Create
// under its agent's limits, which on one Redis node confirms the slot in
// the create's script. The member was Held (x's stale member, confirmed
// by the process's clock), and the create confirms it with a score the
// reconcile cannot have read, on a clock that has not moved since.
func TestOpenCapHeldMemberConfirmedByItsCreateSurvivesAConcurrentReconcile(t *testing.T) {
	t.Parallel()
	f, hook, slot := withStaleMember(t)
	reconcileRacing(t, f, hook, slot, func() {
		// No rate: the limits are the cap's reservation alone.
		adm := &store.Admission{Agent: "pm", MaxOpen: 2, Lease: testLease}
		if _, created, err := f.s.Create(store.AdmitOnCreate(f.ctx, adm), newReq("x", "pm")); err != nil || !created || !adm.Slot.Held {
			t.Errorf("x submitted again under its limits: created %v, err %v, slot %+v; want created, its member held", created, err, adm.Slot)
		}
	})
}
