package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// TestSubscribeChangesShared: a process's consumers of the change feed
// share one Redis subscription (so Redis delivers each change to a process
// once), and each consumer gets every change.
func TestSubscribeChangesShared(t *testing.T) {
	clients := map[string]func(t *testing.T) (redis.UniversalClient, string){
		"redis":    func(t *testing.T) (redis.UniversalClient, string) { return redistest.Client(t) },
		"embedded": func(t *testing.T) (redis.UniversalClient, string) { return redistest.Embedded(t, nil) },
	}
	for name, client := range clients {
		t.Run(name, func(t *testing.T) {
			rdb, prefix := client(t)
			s := mustNew(t, rdb, store.Options{Prefix: prefix})
			ctx := testCtx(t)
			changes := s.SubscribeChanges(ctx, 2)
			if len(changes) != 2 {
				t.Fatalf("%d channels, want 2", len(changes))
			}
			channel := prefix + ":changes"
			// The subscription is made by the feed's goroutine: wait for
			// Redis to count it, then check it stays one.
			var subs int64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if subs = numSub(t, rdb, channel); subs > 0 {
					break
				}
			}
			if subs != 1 {
				t.Fatalf("%d subscriptions to %s, want 1", subs, channel)
			}
			if _, _, err := s.Create(ctx, newReq("shared-feed", "agent-a")); err != nil {
				t.Fatal(err)
			}
			for i, ch := range changes {
				select {
				case id := <-ch:
					if id != "shared-feed" {
						t.Errorf("consumer %d got %q, want shared-feed", i, id)
					}
				case <-ctx.Done():
					t.Fatalf("consumer %d got no change", i)
				}
			}
		})
	}
}

// numSub counts the subscriptions to channel that Redis knows: on a
// Cluster, each node counts its own clients', so every master is asked.
func numSub(t *testing.T, rdb redis.UniversalClient, channel string) int64 {
	t.Helper()
	ctx := testCtx(t)
	cluster, ok := rdb.(*redis.ClusterClient)
	if !ok {
		n, err := rdb.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		return n[channel]
	}
	var total atomic.Int64
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := c.PubSubNumSub(ctx, channel).Result()
		total.Add(n[channel])
		return err
	})
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB on each master: %v", err)
	}
	return total.Load()
}
