package store

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// sharedRoundTrips sends the commands of concurrent callers in shared
// pipelines (a group commit): a caller that finds fewer than max pipelines
// in flight sends its own commands at once, with every caller's that
// waits; one that finds max in flight waits, and is sent with the next.
// Alone, a caller's commands go as they would on their own: at once, in a
// round trip of their own. Under load, one round trip carries the creates
// that arrived while the last was out: Redis reads, runs and answers them
// in one pass of its event loop, and both sides make one write and one
// read for them all (issue #17: on two cores a round trip of its own cost
// each create about as much CPU, in the bot and in Redis, as the create's
// script itself).
//
// The callers' commands are independent: each gets its own answer, as in
// any pipeline (a command's error is its own), and a caller's commands
// run in Redis in the order given, with no other caller's between them.
type sharedRoundTrips struct {
	max int

	mu       sync.Mutex
	inFlight int
	waiting  []*roundTripCall
}

// maxSharedRoundTrips is how many shared pipelines may be out at once:
// two, so the next one's callers gather while Redis runs one and the bot
// reads the answers of the other.
const maxSharedRoundTrips = 2

type roundTripCall struct {
	ctx  context.Context
	cmds []redis.Cmder
	// wake gets true once the commands ran (their answers are set), or
	// false when the caller is to send the next pipeline itself: it was
	// handed the pipeline slot of one that ended.
	wake chan bool
}

// do sends cmds with rdb, in a pipeline shared with other callers', and
// returns once each has its answer (read them from the commands). A
// caller whose ctx ends before its commands are sent has them fail with
// ctx's error.
func (r *sharedRoundTrips) do(ctx context.Context, rdb redis.UniversalClient, cmds ...redis.Cmder) {
	call := &roundTripCall{ctx: ctx, cmds: cmds}
	r.mu.Lock()
	if r.inFlight < r.max {
		r.inFlight++
		r.mu.Unlock()
		r.send(rdb, call)
		return
	}
	call.wake = make(chan bool, 1)
	r.waiting = append(r.waiting, call)
	r.mu.Unlock()
	if done := <-call.wake; !done {
		r.send(rdb, call)
	}
}

// send sends lead's commands with every waiting caller's, in one pipeline,
// holding one of the max slots; then hands the slot to the first caller
// that waits meanwhile (or frees it).
func (r *sharedRoundTrips) send(rdb redis.UniversalClient, lead *roundTripCall) {
	r.mu.Lock()
	calls := append([]*roundTripCall{lead}, r.waiting...)
	r.waiting = nil
	r.mu.Unlock()

	pipe := rdb.Pipeline()
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			for _, cmd := range c.cmds {
				cmd.SetErr(err)
			}
			continue
		}
		for _, cmd := range c.cmds {
			_ = pipe.Process(c.ctx, cmd) // queued, not sent: never fails
		}
	}
	if pipe.Len() > 0 {
		// Not the lead's context alone: its end must not fail the other
		// callers' commands (the client's timeouts bound the round trip).
		_, _ = pipe.Exec(context.WithoutCancel(lead.ctx)) // each command's error is its own
	}
	for _, c := range calls[1:] {
		c.wake <- true
	}

	r.mu.Lock()
	if len(r.waiting) == 0 {
		r.inFlight--
		r.mu.Unlock()
		return
	}
	next := r.waiting[0]
	r.waiting = r.waiting[1:]
	r.mu.Unlock()
	next.wake <- false
}
