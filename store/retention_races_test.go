package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// A sweep whose Scan window is full of closed requests it must keep (a
// callback pending, or no export yet) neither asks to run again at once
// forever (the job then reran every second, rescanning the same window)
// nor stays stuck there: it goes on past them, deletes what may go, and
// once it looked at every request past the retention it says it is done.
func TestRetentionSweepIsNotStuckBehindKeptRequests(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "")
			const shard = 6
			ids := idsInShard("stuck", shard, 7)
			kept, deletable, unexported := ids[:4], ids[4:6], ids[6]
			for _, id := range ids[:6] {
				f.mustCreate(t, newReq(id, "agent"))
				f.clk.Advance(time.Millisecond)
			}
			for _, j := range f.claimAll(t) { // their posts, done
				if err := f.s.Ack(f.ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range kept {
				f.resolveWithDelivery(t, id) // the callback stays due
			}
			for _, id := range deletable {
				f.mustWithdraw(t, id)
			}
			f.exportAll(t, "", time.Time{})
			f.mustCreate(t, newReq(unexported, "agent"))
			f.mustWithdraw(t, unexported)
			for _, j := range f.claimAll(t) {
				if j.Kind == store.JobPost {
					if err := f.s.Ack(f.ctx, j); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.clk.Advance(2 * day)
			o := store.RetentionOptions{Retention: day, Batch: 10, Scan: 4}
			runs := 0
			for rep := f.sweep(t, shard, o); rep.More; rep = f.sweep(t, shard, o) {
				if runs++; runs > 6 {
					t.Fatalf("the sweep still asks to run again at once after %d runs: %+v", runs, rep)
				}
			}
			for _, id := range deletable {
				if f.exists(id) {
					t.Errorf("%s (closed, exported, nothing pending) was never reached behind the kept requests", id)
				}
			}
			for _, id := range append(kept, unexported) {
				if !f.exists(id) {
					t.Errorf("%s was deleted", id)
				}
			}
			// Nothing changed: the next pass (at the next interval) looks
			// at each request once more, then stops again.
			for runs = 1; ; runs++ {
				rep := f.sweep(t, shard, o)
				if rep.Deleted != 0 || runs > 2 {
					t.Fatalf("a pass with nothing to do, run %d = %+v", runs, rep)
				}
				if !rep.More {
					break
				}
			}
		})
	}
}

// lrangeHook runs fn once, before the first LRANGE of key starting at
// index start.
type lrangeHook struct {
	key   string
	start int64
	fn    func(ctx context.Context)
	fired bool
}

func (h *lrangeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lrangeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); h.fn != nil && !h.fired && len(a) == 4 && cmd.Name() == "lrange" && a[1] == h.key && a[2] == h.start {
			h.fired = true
			h.fn(ctx)
		}
		return next(ctx, cmd)
	}
}

func (h *lrangeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A sweep looking up the newest global entry of a request stored before
// audit_gseq was recorded pages through the shard's chain; if another
// sweep trims the chain's front meanwhile (a lease that ran out), the
// pages shift, entries are skipped, and a request whose entry was skipped
// must not be taken for one whose entry was trimmed: its entries are not
// exported, so it is kept.
func TestRetentionBackfillSurvivesAConcurrentTrim(t *testing.T) {
	t.Parallel()
	const shard = 11
	var f retentionFixture
	hook := &lrangeHook{start: 500}
	f = rawBackends(hook)["redis"](t, "")
	hook.key = f.key(shard, "audit")
	ids := idsInShard("shift", shard, 2)
	filler, legacy := ids[0], ids[1]
	// Entries 1..701: the filler's, exported; 100 of them trimmed.
	f.mustCreate(t, newReq(filler, "agent"))
	events := make([]store.AuditEvent, 700)
	for i := range events {
		events[i] = store.AuditEvent{Event: "note", Actor: "system", Data: map[string]any{"n": i}}
	}
	if _, err := f.s.Update(f.ctx, filler, func(store.Record) (*store.Change, error) {
		return &store.Change{Audit: events}, nil
	}); err != nil {
		t.Fatal(err)
	}
	f.exportAll(t, "", time.Time{})
	f.clk.Advance(2 * day)
	if rep := f.sweep(t, shard, store.RetentionOptions{Retention: day, Batch: 100}); rep.Trimmed != 100 {
		t.Fatalf("first sweep = %+v, want 100 trimmed", rep)
	}
	// Entries 702 and 703: a request closed without an export since, and
	// stored (so to speak) before audit_gseq was recorded.
	f.mustCreate(t, newReq(legacy, "agent"))
	f.mustWithdraw(t, legacy)
	f.rdb.HDel(f.ctx, f.key(shard, "req:"+legacy), "audit_gseq", "audit_gseq0")
	for _, j := range f.claimAll(t) {
		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	f.clk.Advance(2 * day)
	// Another sweep trims 200 exported entries while this one reads its
	// second page of the chain.
	hook.fn = func(ctx context.Context) {
		chain := f.key(shard, "audit")
		var last store.AuditEntry
		raw := f.rdb.LIndex(ctx, chain, 199).Val()
		if err := json.Unmarshal([]byte(raw), &last); err != nil || last.Seq != 300 {
			t.Errorf("entry at index 199 = %q (%v)", raw, err)
		}
		f.rdb.LTrim(ctx, chain, 200, -1)
		f.rdb.Set(ctx, f.key(shard, "audit-base"), strconv.FormatInt(last.Seq, 10)+":"+last.Hash, 0)
	}
	f.sweep(t, shard, store.RetentionOptions{Retention: day})
	if !hook.fired {
		t.Fatal("the sweep never read the chain's second page")
	}
	if !f.exists(legacy) {
		t.Fatal("the sweep deleted a request whose audit no export holds")
	}
	if rec := f.mustGet(t, legacy); rec.Status != aah.StatusWithdrawn {
		t.Errorf("status = %s", rec.Status)
	}
}

// The retention sweep trims only what the export mark covers, so a base
// past the mark means entries no export holds were removed from the front
// of the chain (with the base rewritten to match, the links still check):
// VerifyAll says so. Refused intakes are only in the global chain, so
// nothing else would show them gone.
func TestVerifyAllFlagsABasePastTheExportMark(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "k")
			id := "refused-1"
			shard := shardOf(id)
			err := f.s.AuditIntakeRefusal(f.ctx, store.IntakeRefusal{Agent: "agent", BodyHash: "sha256:x", Rule: "test", ArtifactID: id})
			if err != nil {
				t.Fatal(err)
			}
			f.mustCreate(t, newReq(idsInShard("base", shard, 1)[0], "agent"))
			if v := f.verifyAll(t); len(v.Problems) != 0 {
				t.Fatalf("before tampering: %+v", v)
			}
			if err := f.s.Seal(f.ctx); err != nil {
				t.Fatal(err)
			}
			chain := f.key(shard, "audit")
			var first store.AuditEntry
			if err := json.Unmarshal([]byte(f.rdb.LPop(f.ctx, chain).Val()), &first); err != nil {
				t.Fatal(err)
			}
			f.rdb.Set(f.ctx, f.key(shard, "audit-base"), strconv.FormatInt(first.Seq, 10)+":"+first.Hash, 0)
			if v := f.verifyAll(t); len(v.Problems) == 0 {
				t.Errorf("VerifyAll found nothing after an unexported entry was trimmed: %+v", v)
			}
		})
	}
}

// pipelineHook runs fn once, before the first pipeline (or transaction)
// holding an LRANGE of key.
type pipelineHook struct {
	key   string
	fn    func(ctx context.Context)
	fired bool
}

func (h *pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if a := c.Args(); h.fn != nil && !h.fired && c.Name() == "lrange" && len(a) > 1 && a[1] == h.key {
				h.fired = true
				h.fn(ctx)
			}
		}
		return next(ctx, cmds)
	}
}

// VerifyAll reads a shard's chain and its export mark, then the request
// chains. If meanwhile an export covers a request's entries, the sweep
// deletes it and its id is submitted again, the old global entries name
// the new request's chain, which does not hold them: they are an earlier
// request's, exported, and VerifyAll must read the mark again before it
// calls them broken (as it does for a request that is gone).
func TestVerifyAllRereadsTheMarkForAReusedID(t *testing.T) {
	t.Parallel()
	hook := &pipelineHook{}
	f := rawBackends(hook)["redis"](t, "k")
	const shard = 13
	id := idsInShard("reused", shard, 1)[0]
	hook.key = f.key(shard, "audit:"+id)
	f.mustCreate(t, newReq(id, "agent"))
	f.mustWithdraw(t, id)
	for _, j := range f.claimAll(t) {
		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	hook.fn = func(context.Context) {
		f.exportAll(t, "k", time.Time{})
		f.clk.Advance(2 * day)
		if rep := f.sweep(t, shard, store.RetentionOptions{Retention: day}); rep.Deleted != 1 {
			t.Errorf("sweep = %+v, want the request deleted", rep)
		}
		f.mustCreate(t, newReq(id, "agent"))
	}
	if v := f.verifyAll(t); len(v.Problems) != 0 {
		t.Errorf("VerifyAll = %+v, want no problem", v)
	}
	if !hook.fired {
		t.Fatal("the hook never ran")
	}
}

// After the sweep deleted a request that had everything (reviewers, a
// deadline, timers, an escalation, its message and a copy, a delivered
// callback, answers), no key of the store names it, and no index, job
// queue or hash holds it (but the users' capped, expiring lists of what
// they answered, which skip deleted requests).
func TestRetentionLeavesNoKeyBehind(t *testing.T) {
	t.Parallel()
	f := rawBackends()["redis"](t, "")
	id := "leftover-x"
	shard := shardOf(id)
	n := newReq(id, "agent")
	n.Reviewers = []string{"U0ONE", "U0TWO"}
	n.Deadline = f.clk.Now().Add(time.Hour)
	n.ResponseURL = "https://agent.example/cb"
	n.Timers = []store.JobAt{{ID: store.JobID(store.JobRemind, id), At: f.clk.Now().Add(30 * time.Minute)},
		{ID: store.JobID(store.JobExpire, id), At: n.Deadline}}
	f.mustCreate(t, n)
	if err := f.s.RecordPost(f.ctx, id, "C0APPROVALS", "1.000", 1, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Status: aah.StatusEscalated, Bump: true, AddReviewers: []string{"U0THREE"},
			Audit: []store.AuditEvent{{Event: "escalated", Actor: "system"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.BeginCopy(f.ctx, id, "remind"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.RecordCopy(f.ctx, id, store.Copy{Effect: "remind", Channel: "C0APPROVALS", TS: "2.000", Version: 2}, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	f.resolveWithDelivery(t, id)
	if err := f.s.RecordDeliveryAttempt(f.ctx, id, store.DeliveryAttempt{N: 1, At: f.clk.Now(), URL: n.ResponseURL, Status: 200},
		store.DeliveryDelivered); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, j := range f.claimAll(t) {
			if err := f.s.Ack(f.ctx, j); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range []string{"deliveries:" + id, "copies:" + id, "audit:" + id} {
		if f.rdb.Exists(f.ctx, f.key(shard, k)).Val() != 1 {
			t.Fatalf("%s was never written", k)
		}
	}
	f.exportAll(t, "", time.Time{})
	f.clk.Advance(2 * day)
	if rep := f.sweep(t, shard, store.RetentionOptions{Retention: day}); rep.Deleted != 1 {
		t.Fatalf("sweep = %+v, want the request deleted", rep)
	}
	keys, err := f.rdb.Keys(f.ctx, f.prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, id) {
			t.Errorf("key %s survived", k)
			continue
		}
		var members []string
		switch f.rdb.Type(f.ctx, k).Val() {
		case "zset":
			members = f.rdb.ZRange(f.ctx, k, 0, -1).Val()
		case "hash":
			members = f.rdb.HKeys(f.ctx, k).Val()
		case "set":
			members = f.rdb.SMembers(f.ctx, k).Val()
		case "list":
			if strings.HasSuffix(k, ":audit") {
				continue // the global chain: entries naming it may stay until trimmed
			}
			members = f.rdb.LRange(f.ctx, k, 0, -1).Val()
		}
		for _, m := range members {
			if strings.Contains(m, id) {
				t.Errorf("%s still holds %q", k, m)
			}
		}
	}
}

// afterCmdHook runs fn once, right after the first command named name on
// key was answered.
type afterCmdHook struct {
	mu        sync.Mutex
	name, key string
	fn        func(ctx context.Context)
}

func (h *afterCmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterCmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.mu.Lock()
		var fn func(context.Context)
		if a := cmd.Args(); h.fn != nil && cmd.Name() == h.name && len(a) > 1 && a[1] == h.key {
			fn, h.fn = h.fn, nil
		}
		h.mu.Unlock()
		if fn != nil {
			fn(ctx)
		}
		return err
	}
}

func (h *afterCmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A request the sweep deletes while its audit is being read is not found:
// it is not an empty chain that verifies.
func TestVerifiedAuditOfARequestDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	hook := &afterCmdHook{name: "hgetall"}
	f := rawBackends(hook)["redis"](t, "")
	id := "audited"
	f.mustCreate(t, newReq(id, "agent"))
	f.mustWithdraw(t, id)
	shard := shardOf(id)
	hook.mu.Lock()
	hook.key = f.key(shard, "req:"+id)
	hook.fn = func(ctx context.Context) {
		f.rdb.Del(ctx, f.key(shard, "req:"+id), f.key(shard, "audit:"+id))
	}
	hook.mu.Unlock()
	entries, problems, err := f.s.VerifiedAudit(f.ctx, id)
	hook.mu.Lock()
	deleted := hook.fn == nil
	hook.mu.Unlock()
	switch {
	case deleted && !errors.Is(err, store.ErrNotFound):
		t.Errorf("VerifiedAudit of a request deleted meanwhile = %d entries, problems %v, err %v; want ErrNotFound", len(entries), problems, err)
	case !deleted && (err != nil || len(entries) != 2 || len(problems) != 0):
		// Read in one step: the chain as it was.
		t.Errorf("VerifiedAudit = %d entries, problems %v, err %v; want the 2 entries, verified", len(entries), problems, err)
	}
	f.rdb.Del(f.ctx, f.key(shard, "req:"+id), f.key(shard, "audit:"+id))
	if _, _, err := f.s.VerifiedAudit(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("VerifiedAudit of a deleted request: %v, want ErrNotFound", err)
	}
}

// A run whose trim of the chain fails (here: an entry that is not JSON at
// its front) still records where its scan stopped, so the runs after it
// go on past the requests it kept instead of scanning them again.
func TestRetentionSweepRecordsItsScanWhenTheTrimFails(t *testing.T) {
	t.Parallel()
	f := rawBackends()["redis"](t, "")
	const shard = 8
	ids := idsInShard("trimfail", shard, 3)
	kept, deletable := ids[:2], ids[2]
	for _, id := range ids {
		f.mustCreate(t, newReq(id, "agent"))
		f.clk.Advance(time.Millisecond)
	}
	for _, j := range f.claimAll(t) {
		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range kept {
		f.resolveWithDelivery(t, id)
	}
	f.mustWithdraw(t, deletable)
	f.exportAll(t, "", time.Time{})
	f.rdb.LSet(f.ctx, f.key(shard, "audit"), 0, "not json")
	f.clk.Advance(2 * day)
	o := store.RetentionOptions{Retention: day, Batch: 10, Scan: 2}
	for run := 1; f.exists(deletable); run++ {
		if run > 3 {
			t.Fatalf("after %d runs the sweep never got past the kept requests", run-1)
		}
		if _, err := f.s.Sweep(f.ctx, shard, o); err == nil {
			t.Fatal("the sweep trimmed a chain whose front is not JSON")
		}
	}
}
