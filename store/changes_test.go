package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// TestSubscribeChangesShared: a process's consumers of the change feed
// share one Redis subscription (so Redis delivers each change to a process
// once), each consumer gets every change, and creations only while the feed
// follows them.
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
			feed := s.SubscribeChanges(ctx, 2)
			if len(feed.Consumers) != 2 {
				t.Fatalf("%d channels, want 2", len(feed.Consumers))
			}
			changes, created := prefix+":changes", prefix+":created"
			// The subscription is made by the feed's goroutine: wait for
			// Redis to count it, then check it stays one.
			waitNumSub(t, rdb, changes, 1)
			// Each consumer's next id is want: what was published before
			// it on the one subscription came first.
			next := func(want string) {
				t.Helper()
				for i, ch := range feed.Consumers {
					select {
					case id := <-ch:
						if id != want {
							t.Errorf("consumer %d got %q, want %s", i, id, want)
						}
					case <-ctx.Done():
						t.Fatalf("consumer %d got no %s", i, want)
					}
				}
			}
			touch := func(id string) { // a change that wakes waiters
				t.Helper()
				if _, err := s.Update(ctx, id, func(store.Record) (*store.Change, error) {
					return &store.Change{Status: aah.StatusEscalated}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}

			mustCreate(t, s, "unfollowed", "agent-a") // told to no one
			touch("unfollowed")
			next("unfollowed")

			if err := feed.FollowCreations(ctx, true); err != nil {
				t.Fatal(err)
			}
			waitNumSub(t, rdb, created, 1)
			waitNumSub(t, rdb, changes, 1)
			mustCreate(t, s, "followed", "agent-a")
			next("followed")

			if err := feed.FollowCreations(ctx, false); err != nil {
				t.Fatal(err)
			}
			waitNumSub(t, rdb, created, 0)
			mustCreate(t, s, "unfollowed-again", "agent-a")
			touch("followed")
			next("followed")
		})
	}
}

func mustCreate(t *testing.T, s *store.Store, id, agent string) {
	t.Helper()
	if _, _, err := s.Create(testCtx(t), newReq(id, agent)); err != nil {
		t.Fatal(err)
	}
}

// waitNumSub waits for Redis to count want subscriptions to channel.
func waitNumSub(t *testing.T, rdb redis.UniversalClient, channel string, want int64) {
	t.Helper()
	var subs int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if subs = numSub(t, rdb, channel); subs == want {
			return
		}
	}
	t.Fatalf("%d subscriptions to %s, want %d", subs, channel, want)
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
