package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The change feed: what tells processes that a request changed, so that no
// waiter polls Redis. A commit publishes the request's id on one of two
// pub/sub channels, by what it was:
//
//   - <p>:changes, a change of a stored request (an answer, a resolution,
//     an edit): long polls wait for those, and the event streams' reader
//     reads their events.
//   - <p>:created, a new request: only the event streams' reader wants it
//     (its input:requested event), and only while streams are open on its
//     process, so a process subscribes to it only then (FollowCreations).
//     Intake is the hottest path: every process receiving, decoding and
//     dispatching a message per create that nothing waits for cost each
//     of them (BenchmarkIntake: ~16% of a create's time, issue #17), and
//     Redis writes a published message to no one when nothing follows (on
//     one node; a Cluster still passes it to every node).

// queuePublish records the message that tells every process's waiters
// (long polls, the event streams' reader) that a request changed, sent by
// the write's script as it applies.
func (s *Store) queuePublish(ctx context.Context, p redis.Pipeliner, id string) {
	p.Publish(ctx, s.keys.changes(), id)
}

// queuePublishCreated records the message that tells the processes that
// follow creations (ChangeFeed.FollowCreations) that request id was
// created.
func (s *Store) queuePublishCreated(ctx context.Context, p redis.Pipeliner, id string) {
	p.Publish(ctx, s.keys.created(), id)
}

// ChangeFeed is a process's one subscription to the change feed.
type ChangeFeed struct {
	// Consumers each get the id of every request that changes, from any
	// process, and of every request created while FollowCreations is on;
	// each is closed when the feed's context ends.
	Consumers []<-chan string

	sub     *redis.PubSub
	created string
}

// SubscribeChanges delivers the id of every request that changes, from any
// process, until ctx ends, on each of consumers channels (at least one).
// They share one Redis subscription: Redis sends each change once per
// subscription, to every process, so a process that subscribed once per
// consumer (its long polls, its event streams' reader) paid a delivery
// more for every write anywhere (issue #17).
func (s *Store) SubscribeChanges(ctx context.Context, consumers int) *ChangeFeed {
	sub := s.rdb.Subscribe(ctx, s.keys.changes())
	outs := make([]chan string, max(consumers, 1))
	f := &ChangeFeed{Consumers: make([]<-chan string, len(outs)), sub: sub, created: s.keys.created()}
	for i := range outs {
		outs[i] = make(chan string, 256)
		f.Consumers[i] = outs[i]
	}
	go func() {
		defer func() {
			for _, out := range outs {
				close(out)
			}
		}()
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				for _, out := range outs {
					select {
					case out <- m.Payload:
					default: // a slow consumer misses a wake-up, never blocks the others
					}
				}
			}
		}
	}()
	return f
}

// FollowCreations turns on (or off) delivering the ids of requests created
// from now on, from any process, to the feed's consumers. It returns once
// the (un)subscription is sent; Redis takes it a moment later, so a
// creation in between may not be told (the event streams' reader also
// reads every second regardless). go-redis keeps the channels subscribed
// across reconnections, and forgets one as it sends its UNSUBSCRIBE, even
// when that fails.
func (f *ChangeFeed) FollowCreations(ctx context.Context, on bool) error {
	var err error
	if on {
		err = f.sub.Subscribe(ctx, f.created)
	} else {
		err = f.sub.Unsubscribe(ctx, f.created)
	}
	if err != nil {
		return fmt.Errorf("store: follow creations (%t): %w", on, err)
	}
	return nil
}
