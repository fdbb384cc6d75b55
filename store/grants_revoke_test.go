package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// midCopyHook calls during once, after the n-th shard copy of a grant was
// written (CreateGrant's writeGrantCopy): a revocation while the grant is
// still being created.
type midCopyHook struct {
	n      int
	mu     sync.Mutex
	copies int
	fired  bool
	during func(grantID string)
}

func (h *midCopyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *midCopyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *midCopyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		name := strings.ToLower(fmt.Sprint(args[0]))
		if err != nil || (name != "evalsha" && name != "eval") || len(args) < 5 {
			return err
		}
		key := fmt.Sprint(args[3])
		_, id, ok := strings.Cut(key, "}:grant:")
		if !ok || !strings.Contains(key, ":{s") || fmt.Sprint(args[2]) != "2" {
			return err
		}
		if n, _ := cmd.(*redis.Cmd).Int64(); n != 1 {
			return err // not written: not a copy write (a tombstone returns 1 too, but after fired)
		}
		h.mu.Lock()
		h.copies++
		fire := !h.fired && h.copies == h.n
		h.fired = h.fired || fire
		h.mu.Unlock()
		if fire {
			h.during(id)
		}
		return err
	}
}

// A grant revoked while CreateGrant is still writing its shard copies is
// matched nowhere once the revoke returned: the copies written before are
// tombstoned, the ones after find the tombstone (SET NX), so requests of
// every shard stay pending, and the grant is not listed.
func TestRevokeWhileTheGrantIsCreated(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 5, store.Shards - 1} {
		t.Run(fmt.Sprintf("after %d copies", n), func(t *testing.T) {
			t.Parallel()
			var s *store.Store
			var revokeErr error
			revoked := false
			h := &midCopyHook{n: n}
			f := newFixture(t, realRedis(h))
			s = f.s
			h.during = func(id string) {
				_, _, revokeErr = s.RevokeGrant(f.ctx, id, alice)
				revoked = true
			}
			g, err := s.CreateGrant(f.ctx, store.NewGrant{Agent: "deployer", ActionKey: "scale_service", By: alice,
				Duration: time.Hour, FromRequest: "origin-1"})
			if err != nil {
				t.Fatalf("CreateGrant: %v", err)
			}
			if !revoked || revokeErr != nil {
				t.Fatalf("the revoke did not run mid-create: ran %v, %v", revoked, revokeErr)
			}
			got, err := s.GetGrant(f.ctx, g.ID)
			if err != nil || got.RevokedAt.IsZero() {
				t.Errorf("grant after the create: %+v, %v; want revoked", got, err)
			}
			if list, _ := s.Grants(f.ctx, "deployer"); len(list) != 0 {
				t.Errorf("listed: %v", list)
			}
			seen := map[int]bool{}
			for i := 0; len(seen) < store.Shards && i < 400; i++ {
				id := fmt.Sprintf("mid-%d", i)
				seen[shardOf(id)] = true
				if rec := f.createMatching(t, id, "deployer", "scale_service"); rec.Status != aah.StatusPending {
					t.Fatalf("%s (shard %d) resolved by a revoked grant: %s", id, shardOf(id), rec.Status)
				}
			}
		})
	}
}

// A revocation is marked audited only on a revoked grant that still
// exists: the mark never creates a key (which would have no TTL).
func TestMarkRevocationAudited(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			g := f.mustGrant(t, "deployer", "scale_service", time.Hour)
			if err := f.s.MarkRevocationAudited(f.ctx, g.ID); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.s.GetGrant(f.ctx, g.ID); got.RevocationAudited {
				t.Errorf("a live grant marked: %+v", got)
			}
			if _, _, err := f.s.RevokeGrant(f.ctx, g.ID, alice); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.s.GetGrant(f.ctx, g.ID); got.RevocationAudited {
				t.Errorf("revoked, not yet audited, but marked: %+v", got)
			}
			if err := f.s.MarkRevocationAudited(f.ctx, g.ID); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.s.GetGrant(f.ctx, g.ID); !got.RevocationAudited || got.RevokedAt.IsZero() {
				t.Errorf("after the mark: %+v", got)
			}
			if err := f.s.MarkRevocationAudited(f.ctx, "grant_gone"); err != nil {
				t.Errorf("a grant gone: %v", err)
			}
			if _, err := f.s.GetGrant(f.ctx, "grant_gone"); !errors.Is(err, store.ErrGrantNotFound) {
				t.Errorf("the mark created a grant: %v", err)
			}
		})
	}
}
