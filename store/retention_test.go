package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

const day = 24 * time.Hour

// retentionFixture is a fixture with the raw client and key prefix of its
// store, for tests that look into (or tamper with) Redis.
type retentionFixture struct {
	fixture
	rdb    redis.UniversalClient
	prefix string
}

// rawBackends are the suite's two backends, with their client; hooks go on
// the real Redis client (the slot hook of TestScriptKeysShareOneSlot).
func rawBackends(hooks ...redis.Hook) map[string]func(t *testing.T, key string) retentionFixture {
	build := func(t *testing.T, key string, open func(clk *fakeClock) (redis.UniversalClient, string)) retentionFixture {
		clk := newClock()
		rdb, prefix := open(clk)
		s := mustNew(t, rdb, store.Options{Prefix: prefix, Now: clk.Now, AuditKey: []byte(key)})
		return retentionFixture{fixture: fixture{s: s, clk: clk, ctx: testCtx(t)}, rdb: rdb, prefix: prefix}
	}
	return map[string]func(*testing.T, string) retentionFixture{
		"redis": func(t *testing.T, key string) retentionFixture {
			return build(t, key, func(*fakeClock) (redis.UniversalClient, string) {
				rdb, prefix := redistest.Client(t)
				addHooks(rdb, hooks...)
				return rdb, prefix
			})
		},
		"embedded": func(t *testing.T, key string) retentionFixture {
			return build(t, key, func(clk *fakeClock) (redis.UniversalClient, string) { return redistest.Embedded(t, clk.Now) })
		},
	}
}

func (f retentionFixture) key(shard int, name string) string {
	return fmt.Sprintf("%s:{s%02d}:%s", f.prefix, shard, name)
}

// exportAll exports everything, marks it as the command does, and checks
// the file verifies offline.
func (f retentionFixture) exportAll(t *testing.T, key string, since time.Time) store.ExportReport {
	t.Helper()
	var buf bytes.Buffer
	sum, err := f.s.Export(f.ctx, &buf, since, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.MarkExported(f.ctx, sum.Runs); err != nil {
		t.Fatal(err)
	}
	rep, err := store.NewAuditVerifier([]byte(key)).VerifyExport(&buf)
	if err != nil {
		t.Fatalf("the export does not verify: %v", err)
	}
	return rep
}

func (f retentionFixture) sweep(t *testing.T, shard int, o store.RetentionOptions) store.SweepReport {
	t.Helper()
	rep, err := f.s.Sweep(f.ctx, shard, o)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return rep
}

func (f retentionFixture) verifyAll(t *testing.T) store.VerifyReport {
	t.Helper()
	rep, err := f.s.VerifyAll(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// resolveWithDelivery closes id as resolved with its response's delivery
// pending (the deliver job due).
func (f retentionFixture) resolveWithDelivery(t *testing.T, id string) {
	t.Helper()
	_, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Status: aah.StatusResolved, Bump: true,
			Resolution: &store.Resolution{Response: []byte(`{}`), At: f.clk.Now(), Deliver: true, WebhookID: "msg_" + id},
			Audit:      []store.AuditEvent{{Event: "resolved", Actor: "system"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f retentionFixture) exists(id string) bool {
	_, err := f.s.Get(f.ctx, id)
	return !errors.Is(err, store.ErrNotFound)
}

// The sweep deletes exactly the requests closed longer than the retention
// whose audit an export covers and whose callback is not pending; it trims
// the exported old front of the shard's chain; every chain still verifies,
// in Redis and in a new export; a second run does nothing.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRetentionSweep(t, open(t, "ret-key"))
		})
	}
}

func testRetentionSweep(t *testing.T, f retentionFixture) {
	const shard = 5
	ids := idsInShard("ret", shard, 6)
	oldClosed, open, youngClosed, pending, unexported, other := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]
	for _, id := range []string{oldClosed, open, youngClosed, pending} {
		f.mustCreate(t, newReq(id, "agent"))
	}
	f.clk.Advance(time.Minute)
	f.mustWithdraw(t, oldClosed)
	f.resolveWithDelivery(t, pending)
	f.clk.Advance(time.Hour)
	f.exportAll(t, "ret-key", time.Time{})
	// After the export: closed long ago, but not exported.
	f.clk.Advance(time.Hour)
	f.mustCreate(t, newReq(unexported, "agent"))
	f.mustWithdraw(t, unexported)
	f.clk.Advance(10 * day)
	f.mustWithdraw(t, youngClosed)
	f.mustCreate(t, newReq(other, "agent")) // open, and in no export

	f.clk.Advance(25 * day) // oldClosed closed 35 days ago, youngClosed 25
	o := store.RetentionOptions{Retention: 30 * day}
	rep := f.sweep(t, shard, o)
	if rep.Deleted != 1 || rep.Waiting != 1 || rep.More {
		t.Errorf("sweep = %+v, want 1 deleted, 1 waiting for an export", rep)
	}
	// The export covered the 4 requested, 1 withdrawn and 1 resolved entries.
	if rep.Trimmed != 6 {
		t.Errorf("trimmed %d global entries, want the 6 exported ones", rep.Trimmed)
	}
	if want := t0.Add(time.Minute + 2*time.Hour); !rep.UnexportedSince.Equal(want) {
		t.Errorf("unexported since %v, want %v", rep.UnexportedSince, want)
	}
	for id, want := range map[string]bool{oldClosed: false, open: true, youngClosed: true, pending: true, unexported: true, other: true} {
		if got := f.exists(id); got != want {
			t.Errorf("%s exists = %v, want %v", id, got, want)
		}
	}
	if _, err := f.s.Audit(f.ctx, oldClosed); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Audit of a deleted request: %v", err)
	}
	for _, k := range []string{"req:" + oldClosed, "doc:" + oldClosed, "audit:" + oldClosed, "deliveries:" + oldClosed, "copies:" + oldClosed} {
		if n := f.rdb.Exists(f.ctx, f.key(shard, k)).Val(); n != 0 {
			t.Errorf("%s survived the sweep", k)
		}
	}
	for _, idx := range []string{"idx:status:withdrawn", "idx:agent:agent:all", "idx:agent:agent:withdrawn"} {
		if _, err := f.rdb.ZScore(f.ctx, f.key(shard, idx), oldClosed).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s still indexes the deleted request (%v)", idx, err)
		}
	}
	if base := f.rdb.Get(f.ctx, f.key(shard, "audit-base")).Val(); !strings.HasPrefix(base, "6:") {
		t.Errorf("base = %q, want entry 6", base)
	}
	if v := f.verifyAll(t); len(v.Problems) != 0 || v.Requests != 5 {
		t.Errorf("VerifyAll after the sweep = %+v, want 5 requests and no problem", v)
	}
	if again := f.sweep(t, shard, o); again.Deleted != 0 || again.Trimmed != 0 {
		t.Errorf("a second sweep = %+v, want nothing done", again)
	}
	// A new export starts at the base and verifies; it holds the
	// kept requests whose global entries were all trimmed too.
	exp := f.exportAll(t, "ret-key", time.Time{})
	if !slices.Contains(exp.Trimmed, fmt.Sprintf("shard %02d", shard)) || exp.Chains != 6 {
		t.Errorf("export after the sweep = %+v, want the trimmed shard and 5 request chains", exp)
	}
	// Now exported: the unexported request goes too; the pending
	// delivery keeps its request until it is done.
	rep = f.sweep(t, shard, o)
	if rep.Deleted != 1 || f.exists(unexported) || !f.exists(pending) || rep.Waiting != 0 || !rep.UnexportedSince.IsZero() {
		t.Errorf("sweep after the export = %+v", rep)
	}
	if v := f.verifyAll(t); len(v.Problems) != 0 {
		t.Errorf("VerifyAll = %+v", v)
	}
}

// Tampering with what a sweep leaves is still caught: an edited first
// entry after the base, a base moved, a request chain deleted although no
// export covers it.
func TestRetentionTamperingAfterTrimIsDetected(t *testing.T) {
	t.Parallel()
	for name, tamper := range map[string]func(f retentionFixture, shard int, ids []string){
		"first entry after the base edited": func(f retentionFixture, shard int, _ []string) {
			raw := f.rdb.LIndex(f.ctx, f.key(shard, "audit"), 0).Val()
			f.rdb.LSet(f.ctx, f.key(shard, "audit"), 0, strings.Replace(raw, `"request_id":"`, `"request_id":"x`, 1))
		},
		"base moved": func(f retentionFixture, shard int, _ []string) {
			f.rdb.Set(f.ctx, f.key(shard, "audit-base"), "2:0000", 0)
		},
		"entries removed after the base": func(f retentionFixture, shard int, _ []string) {
			f.rdb.LPop(f.ctx, f.key(shard, "audit"))
		},
		"unexported request deleted": func(f retentionFixture, shard int, ids []string) {
			f.rdb.Del(f.ctx, f.key(shard, "req:"+ids[2]), f.key(shard, "audit:"+ids[2]))
		},
	} {
		for backend, open := range rawBackends() {
			t.Run(name+"/"+backend, func(t *testing.T) {
				t.Parallel()
				f := open(t, "k")
				const shard = 3
				ids := idsInShard("tamper", shard, 3)
				f.mustCreate(t, newReq(ids[0], "agent"))
				f.mustWithdraw(t, ids[0])
				f.exportAll(t, "k", time.Time{})
				f.clk.Advance(2 * day)
				f.mustCreate(t, newReq(ids[1], "agent"))
				f.mustCreate(t, newReq(ids[2], "agent"))
				f.sweep(t, shard, store.RetentionOptions{Retention: day})
				if v := f.verifyAll(t); len(v.Problems) != 0 {
					t.Fatalf("before tampering: %+v", v)
				}
				tamper(f, shard, ids)
				if v := f.verifyAll(t); len(v.Problems) == 0 {
					t.Errorf("VerifyAll found nothing after %s", name)
				}
			})
		}
	}
}

// The export mark advances only over contiguous runs: an export starting
// past the entry after the mark leaves it; a time-range export that starts
// at or before it advances it.
func TestExportMarksAdvanceContiguously(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "")
			const shard = 7
			ids := idsInShard("mark", shard, 3)
			mark := func() int64 {
				t.Helper()
				m, err := f.s.ExportMarks(f.ctx)
				if err != nil {
					t.Fatal(err)
				}
				return m[shard]
			}
			export := func(since time.Time) {
				t.Helper()
				sum, err := f.s.Export(f.ctx, &bytes.Buffer{}, since, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.s.MarkExported(f.ctx, sum.Runs); err != nil {
					t.Fatal(err)
				}
			}
			f.mustCreate(t, newReq(ids[0], "agent")) // entry 1 at t0
			f.clk.Advance(time.Hour)
			f.mustCreate(t, newReq(ids[1], "agent")) // entry 2 at t0+1h
			export(t0.Add(time.Minute))              // entry 2 only: a gap before it
			if m := mark(); m != 0 {
				t.Errorf("mark = %d after an export with a gap, want 0", m)
			}
			export(time.Time{})
			if m := mark(); m != 2 {
				t.Errorf("mark = %d after a full export, want 2", m)
			}
			f.clk.Advance(time.Hour)
			f.mustCreate(t, newReq(ids[2], "agent")) // entry 3
			export(f.clk.Now())                      // from entry 3: contiguous with the mark
			if m := mark(); m != 3 {
				t.Errorf("mark = %d after a contiguous time-range export, want 3", m)
			}
			export(time.Time{}) // nothing new: stays
			if m := mark(); m != 3 {
				t.Errorf("mark = %d, want 3", m)
			}
		})
	}
}

// A request deleted by retention may be submitted again under its id: the
// new request has a chain of its own, and the old global entries (exported,
// not yet trimmed) do not make it look tampered with, in Redis or in an
// export.
func TestRetentionResubmittedIDVerifies(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "k")
			const shard = 9
			ids := idsInShard("again", shard, 2)
			f.mustCreate(t, newReq(ids[0], "agent")) // global entry 1, trimmed below
			f.mustCreate(t, newReq(ids[1], "agent"))
			f.mustWithdraw(t, ids[1]) // entries 2 and 3, kept (batch of 1)
			f.exportAll(t, "k", time.Time{})
			f.clk.Advance(2 * day)
			rep := f.sweep(t, shard, store.RetentionOptions{Retention: day, Batch: 1})
			if rep.Deleted != 1 || rep.Trimmed != 1 || !rep.More || f.exists(ids[1]) {
				t.Fatalf("sweep = %+v", rep)
			}
			if v := f.verifyAll(t); len(v.Problems) != 0 || v.Deleted != 2 {
				t.Errorf("VerifyAll with a deleted request's entries = %+v", v)
			}
			f.mustCreate(t, newReq(ids[1], "agent"))
			if v := f.verifyAll(t); len(v.Problems) != 0 || v.Deleted != 2 {
				t.Errorf("VerifyAll after the id came back = %+v", v)
			}
			exp := f.exportAll(t, "k", time.Time{})
			if exp.Unchecked != 2 || exp.CrossChecked != 1 {
				t.Errorf("export = %+v, want the old request's 2 entries unchecked and the new one cross-checked", exp)
			}
		})
	}
}

// The retention job is scheduled once per shard however many replicas
// start, and records what the sweeps saw for the gauges.
func TestRetentionJobAndState(t *testing.T) {
	t.Parallel()
	testRetentionJobAndState(t, rawBackends()["redis"](t, ""))
}

func testRetentionJobAndState(t *testing.T, f retentionFixture) {
	for range 3 {
		if err := f.s.ScheduleRetention(f.ctx, f.clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	jobs := f.claimExactly(t, 4, 10, time.Minute, store.RetainJobID(4))
	if jobs[0].Kind != store.JobRetain || jobs[0].RequestID != "s04" {
		t.Errorf("job = %+v", jobs[0])
	}
	// While it runs, starting another replica does not schedule it again.
	if err := f.s.ScheduleRetention(f.ctx, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	f.claimExactly(t, 4, 10, time.Minute)

	id := idsInShard("state", 4, 1)[0]
	f.mustCreate(t, newReq(id, "agent"))
	f.mustWithdraw(t, id)
	f.clk.Advance(2 * day)
	f.sweep(t, 4, store.RetentionOptions{Retention: day})
	st, err := f.s.Retention(f.ctx)
	if err != nil || st.Waiting != 1 || !st.UnexportedSince.Equal(t0) {
		t.Errorf("Retention = %+v, %v; want 1 waiting since t0", st, err)
	}
	if _, err := f.s.Sweep(f.ctx, 4, store.RetentionOptions{}); err == nil {
		t.Error("a sweep without a retention ran")
	}
}

// Requests stored before audit_gseq was recorded (and not audited since)
// are swept too: the sweep finds their newest global entry in the chain,
// or knows it was trimmed, and records it.
func TestRetentionSweepsRequestsStoredBeforeTheUpgrade(t *testing.T) {
	t.Parallel()
	for name, open := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "")
			const shard = 2
			ids := idsInShard("legacy", shard, 3)
			for i, id := range ids {
				f.mustCreate(t, newReq(id, "agent"))
				if i == 0 {
					f.mustWithdraw(t, id)
				} else if _, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
					return &store.Change{Status: aah.StatusResolved, Resolution: &store.Resolution{Response: []byte(`{}`), At: f.clk.Now()},
						Audit: []store.AuditEvent{{Event: "resolved", Actor: "system"}}}, nil
				}); err != nil {
					t.Fatal(err)
				}
				f.rdb.HDel(f.ctx, f.key(shard, "req:"+id), "audit_gseq", "audit_gseq0")
			}
			for _, j := range f.claimAll(t) { // their posts, done
				if err := f.s.Ack(f.ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			f.exportAll(t, "", time.Time{})
			f.clk.Advance(2 * day)
			// The resolved ones are looked at first (found in the chain);
			// ids[0]'s entries, first in the chain, are trimmed meanwhile.
			rep := f.sweep(t, shard, store.RetentionOptions{Retention: day, Batch: 2, Scan: 2})
			if rep.Deleted != 2 || !f.exists(ids[0]) || f.exists(ids[1]) || f.exists(ids[2]) || rep.Trimmed != 2 {
				t.Fatalf("first sweep = %+v", rep)
			}
			// ids[0]'s newest global entry is gone: the base covers it.
			rep = f.sweep(t, shard, store.RetentionOptions{Retention: day})
			if rep.Deleted != 1 || f.exists(ids[0]) {
				t.Errorf("second sweep = %+v", rep)
			}
			if v := f.verifyAll(t); len(v.Problems) != 0 {
				t.Errorf("VerifyAll = %+v", v)
			}
		})
	}
}
