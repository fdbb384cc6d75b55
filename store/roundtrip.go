package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sharedRoundTrips sends the commands of concurrent callers in shared
// pipelines (a group commit): a caller that finds fewer than max pipelines
// in flight sends its own commands at once, with every caller's that
// waits; one that finds max in flight waits, and is sent with the next.
// Below max, a caller's commands go as they would on their own: at once,
// in a round trip of their own, so sharing costs no latency until that
// many round trips are out, which is when Redis is queuing work. Then one
// round trip carries the creates that arrived meanwhile, and Redis reads,
// runs and answers them in one pass of its event loop, one read and one
// write for them all (issue #17: in the intake benchmark, with two
// pipelines at most out, a round trip carried 6.8 creates and Redis spent
// 8% less CPU per create; the closed loop's throughput did not rise, as
// its creates waited for the round trips out).
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

// maxSharedRoundTrips is how many pipelines may be out at once before
// creates share them: as many as a busy process keeps out when Redis keeps
// up (the intake benchmark's 32 senders on two cores).
const maxSharedRoundTrips = 8

type roundTripCall struct {
	ctx  context.Context
	cmds []*redis.Cmd
	// wake gets true once the commands ran (their answers are set), or
	// false when the caller is to send the next pipeline itself: it was
	// handed the pipeline slot of one that ended.
	wake chan bool
}

// do sends cmds with rdb, in a pipeline shared with other callers', and
// returns once each has its answer (read them from the commands). A
// caller whose ctx ends before its commands are sent has them fail with
// ctx's error. Any command left with neither an answer nor an error (the
// pipeline failed before Redis answered, in a way that set none: a hook's
// error) gets the pipeline's error.
func (r *sharedRoundTrips) do(ctx context.Context, rdb redis.UniversalClient, cmds ...*redis.Cmd) {
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
	defer func() {
		// Deferred, so that a panic (recovered by the lead's HTTP
		// handler) leaves no caller waiting and no slot taken for good.
		// The callers carried get an error even if Redis ran their
		// commands: a create retried then is answered as a duplicate.
		if v := recover(); v != nil {
			for _, c := range calls[1:] {
				for _, cmd := range c.cmds {
					cmd.SetErr(fmt.Errorf("store: a shared round trip to Redis panicked: %v", v))
				}
			}
			defer panic(v)
		}
		for _, c := range calls[1:] {
			c.wake <- true
		}
		r.handOff()
	}()

	pipe := rdb.Pipeline()
	sent := make([]*roundTripCall, 0, len(calls))
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			for _, cmd := range c.cmds {
				cmd.SetErr(err)
			}
			continue
		}
		sent = append(sent, c)
		for _, cmd := range c.cmds {
			_ = pipe.Process(c.ctx, cmd) // queued, not sent: never fails
		}
	}
	if len(sent) > 0 {
		ctx, cancel := sharedContext(lead.ctx, sent)
		defer cancel()
		// Each command's error is its own. (go-redis sends a pipeline
		// again after a read timeout: every create it carries then, not
		// one, finds itself stored, and is answered as a duplicate.)
		if _, err := pipe.Exec(ctx); err != nil {
			for _, c := range sent {
				for _, cmd := range c.cmds {
					if cmd.Err() == nil && cmd.Val() == nil {
						cmd.SetErr(err)
					}
				}
			}
		}
	}
}

// handOff gives the slot of a pipeline that ended to the first caller that
// waits, or frees it.
func (r *sharedRoundTrips) handOff() {
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

// sharedContext is the context of a pipeline that sends calls: lead's
// values, not its end (which must not fail the other callers' commands),
// and the latest of the callers' deadlines, if each has one. The client
// cuts a command short at its context's deadline (ContextTimeoutEnabled,
// how the request paths keep STORE_REQUEST_TIMEOUT): so no caller's
// commands are cut before its own deadline, and none waits much past its
// own, the callers' deadlines being their arrival and one budget.
func sharedContext(lead context.Context, calls []*roundTripCall) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(lead)
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}
