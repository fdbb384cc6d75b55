package store

import (
	"context"
	"sync"
	"time"
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
}

// laterBatch is the most writes one round trip carries; laterBacklog the
// most that wait: a backlog that full means Redis is not keeping up, and a
// write that finds it so is dropped rather than hold its caller.
const (
	laterBatch   = 256
	laterBacklog = 4096
)

// add queues item for write, which gets every batch, under a context with
// a deadline, for the life of the process.
func (q *laterQueue[T]) add(item T, write func(ctx context.Context, batch []T)) {
	q.once.Do(func() {
		q.queue = make(chan T, laterBacklog)
		go q.run(write)
	})
	select {
	case q.queue <- item:
	default:
	}
}

func (q *laterQueue[T]) run(write func(ctx context.Context, batch []T)) {
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
		write(ctx, batch)
		cancel()
	}
}
