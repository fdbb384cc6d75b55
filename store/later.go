package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// laterQueue holds writes that need not happen on their caller's path and
// may be lost (a crash, Redis failing) without changing what the store
// means: a confirmation of an open-request slot (ConfirmOpenLater), a post
// job deferred to its turn (deferPostJob). One goroutine, started with the
// first, writes what has queued a batch at a time: under load one round
// trip carries many.
type laterQueue[T any] struct {
	once  sync.Once
	queue chan T
	// dropped counts the writes dropped on a full backlog, failed those
	// Redis did not apply (an error, a batch timed out): see LaterWritesLost.
	dropped, failed atomic.Uint64
}

// laterBatch is the most writes one round trip carries; laterBacklog the
// most that wait: a backlog that full means Redis is not keeping up, and a
// write that finds it so is dropped rather than hold its caller.
const (
	laterBatch   = 256
	laterBacklog = 4096
)

// add queues item for write, which gets every batch, under a context with
// a deadline, for the life of the process, and says how many of its writes
// failed.
func (q *laterQueue[T]) add(item T, write func(ctx context.Context, batch []T) (failed int)) {
	q.once.Do(func() {
		q.queue = make(chan T, laterBacklog)
		go q.run(write)
	})
	select {
	case q.queue <- item:
	default:
		q.dropped.Add(1)
	}
}

// countFailed is how many of a batch's pipelined commands failed: what a
// batch writer returns.
func countFailed(cmds []redis.Cmder) (n int) {
	for _, c := range cmds {
		if c.Err() != nil {
			n++
		}
	}
	return n
}

func (q *laterQueue[T]) run(write func(ctx context.Context, batch []T) (failed int)) {
	for item := range q.queue {
		batch := []T{item}
	more:
		for len(batch) < laterBatch {
			select {
			case next := <-q.queue:
				batch = append(batch, next)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		q.failed.Add(uint64(write(ctx, batch)))
		cancel()
	}
}

// LaterLost counts the writes of one kind queued off their caller's path
// (laterQueue) that never applied: dropped on a full backlog (Redis not
// keeping up), or failed in Redis. Each such loss is safe (the store's
// meaning does not change) but costs something until it is made good: see
// LaterWritesLost.
type LaterLost struct{ Dropped, Failed uint64 }

// LaterWritesLost counts, since the process started, the open-slot
// confirmations (ConfirmOpenLater; lost, the slot stays reserved until the
// next reconcile of the agent's count, so it may refuse a request under
// INTAKE_MAX_OPEN meanwhile) and the post deferrals (lost, the post's job
// runs at its arrival and is told then to wait for its turn: a run more)
// that never applied. A growing count means Redis is failing or not
// keeping up.
func (s *Store) LaterWritesLost() (confirms, deferrals LaterLost) {
	return s.confirms.lost(), s.deferrals.lost()
}

func (q *laterQueue[T]) lost() LaterLost {
	return LaterLost{Dropped: q.dropped.Load(), Failed: q.failed.Load()}
}
