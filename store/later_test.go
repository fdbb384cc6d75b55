package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A later write that never applies is counted: dropped when the backlog is
// full, failed when Redis does not take it.
func TestLaterWritesLostAreCounted(t *testing.T) {
	t.Run("dropped on a full backlog", func(t *testing.T) {
		var q laterQueue[int]
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		started := make(chan struct{}, 1)
		write := func(context.Context, []int) int {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return 0
		}
		q.add(0, write)
		<-started // the writer holds the first batch: the backlog fills behind it
		for i := range laterBacklog + 3 {
			q.add(i+1, write)
		}
		if got := q.lost(); got.Dropped != 3 || got.Failed != 0 {
			t.Fatalf("lost = %+v, want 3 dropped", got)
		}
	})
	t.Run("failed", func(t *testing.T) {
		var q laterQueue[int]
		first, second := make(chan struct{}), make(chan struct{})
		write := func(_ context.Context, batch []int) int {
			if batch[0] == 2 {
				close(second) // the first batch's count is in: run counts it before it takes the next
				return 0
			}
			close(first)
			return len(batch)
		}
		q.add(1, write)
		<-first // taken alone: the second comes after its batch was made
		q.add(2, write)
		<-second
		if got := q.lost(); got.Failed != 1 || got.Dropped != 0 {
			t.Fatalf("lost = %+v, want 1 failed", got)
		}
	})
	t.Run("a batch Redis does not take fails whole", func(t *testing.T) {
		// Nothing listens there: every command of the batch fails.
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := New(rdb, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		slots := []OpenSlot{{agent: "a", id: "r1", Reserved: true}, {agent: "b", id: "r2", Reserved: true}}
		if n := s.confirmBatch(ctx, slots); n != 2 {
			t.Errorf("confirmBatch: %d failed, want 2", n)
		}
		now := time.Now()
		if n := s.deferBatch(ctx, []postDeferral{{id: "r3", arrival: now, at: now.Add(time.Second)}}); n != 1 {
			t.Errorf("deferBatch: %d failed, want 1", n)
		}
	})
}
