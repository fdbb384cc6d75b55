package store_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// sealBackends are both stores, each with its client and prefix, so that a
// test can run two Stores (two replicas) over one key space.
func sealBackends() map[string]func(t *testing.T) (redis.UniversalClient, string) {
	return map[string]func(t *testing.T) (redis.UniversalClient, string){
		"redis":    func(t *testing.T) (redis.UniversalClient, string) { return redistest.Client(t) },
		"embedded": func(t *testing.T) (redis.UniversalClient, string) { return redistest.Embedded(t, nil) },
	}
}

// TestGlobalChainVerifiesUnderConcurrency is the proof that writes which no
// longer serialise on their shard's chain still leave a chain that verifies:
// two replicas create and update requests concurrently (many per shard)
// while both seal continuously; once the writes are done and the last
// pending entries sealed, every shard's chain and every request chain
// verify, each global entry names a request entry, and nothing is pending.
func TestGlobalChainVerifiesUnderConcurrency(t *testing.T) {
	for name, client := range sealBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := client(t)
			key := []byte("audit key")
			a := mustNew(t, rdb, store.Options{Prefix: prefix, AuditKey: key})
			b := mustNew(t, rdb, store.Options{Prefix: prefix, AuditKey: key})
			ctx := testCtx(t)
			sealCtx, stopSealing := context.WithCancel(ctx)
			var sealers sync.WaitGroup
			for _, s := range []*store.Store{a, b} {
				// A short interval: the sweep over every shard races the
				// other replica's wake-ups too.
				sealers.Go(func() { s.RunSealer(sealCtx, time.Millisecond, slog.New(slog.DiscardHandler)) })
			}
			const writers, perWriter = 8, 12
			var wg sync.WaitGroup
			errs := make(chan error, writers*perWriter)
			for w := range writers {
				s := []*store.Store{a, b}[w%2]
				wg.Go(func() {
					for i := range perWriter {
						id := fmt.Sprintf("conc-%d-%d", w, i)
						if _, _, err := s.Create(ctx, newReq(id, "agent")); err != nil {
							errs <- err
							return
						}
						// And a change of an earlier request (the other
						// replica's, half the time), as clicks make.
						target := fmt.Sprintf("conc-%d-%d", (w+i)%writers, i/2)
						_, err := s.Update(ctx, target, func(store.Record) (*store.Change, error) {
							return &store.Change{Bump: true, Audit: []store.AuditEvent{{Event: "noted", Actor: "system"}}}, nil
						})
						if err != nil && err != store.ErrNotFound {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			stopSealing()
			sealers.Wait()
			if err := b.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			rep, err := a.VerifyAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) > 0 || rep.Pending != 0 || rep.Requests != writers*perWriter {
				t.Fatalf("VerifyAll = %+v; want %d requests, nothing pending, no problem", rep, writers*perWriter)
			}
			// The export of it verifies offline too.
			var buf bytes.Buffer
			if _, err := a.Export(ctx, &buf, time.Time{}, time.Time{}); err != nil {
				t.Fatal(err)
			}
			if res, err := store.NewAuditVerifier(key).VerifyExport(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatalf("offline verification of the export: %+v, %v", res, err)
			}
		})
	}
}

// TestPendingEntriesAreChecked: entries not sealed yet are not a problem,
// but one removed from the middle of the pending list, or linked by someone
// other than the sealer, is; and sealing never links over a gap.
func TestPendingEntriesAreChecked(t *testing.T) {
	onEachSealBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string, s *store.Store, ctx context.Context) {
		ids := idsInShard("pend", 3, 3)
		for _, id := range ids {
			if _, _, err := s.Create(ctx, newReq(id, "agent")); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := s.VerifyAll(ctx)
		if err != nil || len(rep.Problems) > 0 || rep.Pending != 3 {
			t.Fatalf("before sealing: %+v, %v; want 3 pending, no problem", rep, err)
		}
		pending := fmt.Sprintf("%s:{s%02d}:audit-pending", prefix, 3)
		if err := rdb.LRem(ctx, pending, 1, rdb.LIndex(ctx, pending, 1).Val()).Err(); err != nil {
			t.Fatal(err)
		}
		rep, err = s.VerifyAll(ctx)
		if err != nil || !hasProblem(rep, "pending entry's sequence number is 3, want 2") {
			t.Fatalf("after removing a pending entry: %+v, %v", rep, err)
		}
		if _, err := s.SealShard(ctx, 3); err == nil || !strings.Contains(err.Error(), "does not follow") {
			t.Fatalf("SealShard over a gap = %v; want it refused", err)
		}
	})
}

// TestSealRefusesAnotherKey: a process whose AUDIT_KEY is not the one the
// chain was sealed with seals nothing (it would link new entries under the
// wrong key for good).
func TestSealRefusesAnotherKey(t *testing.T) {
	for name, client := range sealBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := client(t)
			right := mustNew(t, rdb, store.Options{Prefix: prefix, AuditKey: []byte("right")})
			wrong := mustNew(t, rdb, store.Options{Prefix: prefix, AuditKey: []byte("wrong")})
			ctx := testCtx(t)
			ids := idsInShard("key", 5, 2)
			if _, _, err := right.Create(ctx, newReq(ids[0], "agent")); err != nil {
				t.Fatal(err)
			}
			if err := right.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := wrong.Create(ctx, newReq(ids[1], "agent")); err != nil {
				t.Fatal(err)
			}
			if _, err := wrong.SealShard(ctx, 5); err == nil || !strings.Contains(err.Error(), "AUDIT_KEY") {
				t.Fatalf("sealing under another key = %v; want it refused", err)
			}
			if err := right.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			rep, err := right.VerifyAll(ctx)
			if err != nil || rep.Pending != 0 {
				t.Fatalf("VerifyAll = %+v, %v; want everything sealed", rep, err)
			}
			// The entry the wrong process wrote names a request entry
			// hashed under its key: the request's chain says so.
			if !hasProblem(rep, "request "+ids[1]) {
				t.Fatalf("VerifyAll = %+v; want the wrongly keyed request chain reported", rep)
			}
		})
	}
}

func hasProblem(rep store.VerifyReport, substr string) bool {
	for _, p := range rep.Problems {
		if strings.Contains(p.Error(), substr) {
			return true
		}
	}
	return false
}

// TestAuditSeqCounterRecovers: the write script numbers a shard's global
// entries from a counter (audit-seq) instead of summing the chain's
// lengths at each write. A counter that is missing while the shard holds
// entries (written before it was kept, or evicted) must be rebuilt from
// those lengths, sealed and pending alike, never restarted: a number given
// twice would stop the sealer for good.
func TestAuditSeqCounterRecovers(t *testing.T) {
	onEachSealBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string, s *store.Store, ctx context.Context) {
		const shard = 5
		counter := fmt.Sprintf("%s:{s%02d}:audit-seq", prefix, shard)
		ids := idsInShard("seq", shard, 9)
		create := func(ids []string) {
			t.Helper()
			for _, id := range ids {
				if _, _, err := s.Create(ctx, newReq(id, "agent")); err != nil {
					t.Fatal(err)
				}
			}
		}
		create(ids[:3])
		if _, err := s.SealShard(ctx, shard); err != nil {
			t.Fatal(err)
		}
		create(ids[3:5]) // 3 sealed, 2 pending
		if got := rdb.Get(ctx, counter).Val(); got != "5" {
			t.Fatalf("counter after 5 entries = %q, want 5", got)
		}
		if err := rdb.Del(ctx, counter).Err(); err != nil {
			t.Fatal(err)
		}
		create(ids[5:7])
		if got := rdb.Get(ctx, counter).Val(); got != "7" {
			t.Fatalf("counter rebuilt = %q, want 7 (3 sealed + 2 pending + 2 new)", got)
		}
		if _, err := s.SealShard(ctx, shard); err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, counter) // now with every entry sealed
		create(ids[7:])
		if _, err := s.SealShard(ctx, shard); err != nil {
			t.Fatal(err)
		}
		rep, err := s.VerifyAll(ctx)
		if err != nil || len(rep.Problems) > 0 || rep.Pending != 0 || rep.Requests != len(ids) {
			t.Fatalf("VerifyAll = %+v, %v; want %d requests, nothing pending, no problem", rep, err, len(ids))
		}
		if got := rdb.Get(ctx, counter).Val(); got != "9" {
			t.Fatalf("counter at the end = %q, want 9", got)
		}
	})
}

// onEachSealBackend runs test in parallel on each of sealBackends, with a
// store on its own key prefix.
func onEachSealBackend(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient, prefix string, s *store.Store, ctx context.Context)) {
	for name, client := range sealBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := client(t)
			test(t, rdb, prefix, mustNew(t, rdb, store.Options{Prefix: prefix}), testCtx(t))
		})
	}
}
