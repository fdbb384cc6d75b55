package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// gatedPipelines holds each pipeline of the test's commands (INCRBY first)
// as it starts, telling its size, until the test releases it; a new
// connection's handshake, a pipeline too, goes by.
type gatedPipelines struct {
	started chan gatedPipeline
	release chan struct{}
}

type gatedPipeline struct {
	cmds     int
	deadline time.Time // zero: none
}

func (g gatedPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g gatedPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g gatedPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "incrby" {
			return next(ctx, cmds)
		}
		d, _ := ctx.Deadline()
		g.started <- gatedPipeline{cmds: len(cmds), deadline: d}
		<-g.release
		return next(ctx, cmds)
	}
}

func onEachRoundTripBackend(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	for name, client := range map[string]func(testing.TB) (redis.UniversalClient, string){
		"redis":    redistest.Client,
		"embedded": func(tb testing.TB) (redis.UniversalClient, string) { return redistest.Embedded(tb, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := client(t)
			test(t, rdb, "{"+prefix+"}")
		})
	}
}

// waitForWaiting returns once n callers wait for the pipeline in flight.
func (r *sharedRoundTrips) waitForWaiting(n int) {
	for {
		r.mu.Lock()
		have := len(r.waiting)
		r.mu.Unlock()
		if have >= n {
			return
		}
		runtime.Gosched()
	}
}

// Callers that arrive while the one pipeline allowed is out go together in
// the next, each with its own answers; one whose context ended meanwhile
// sends nothing and gets its context's error.
func TestSharedRoundTripsGatherTheCallersThatWait(t *testing.T) {
	t.Parallel()
	onEachRoundTripBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		gate := gatedPipelines{started: make(chan gatedPipeline), release: make(chan struct{})}
		rdb.AddHook(gate)
		r := &sharedRoundTrips{max: 1}
		ctx := context.Background()
		incr := func(ctx context.Context, who string, by int64) (*redis.Cmd, *redis.Cmd) {
			return redis.NewCmd(ctx, "incrby", prefix+who, by), redis.NewCmd(ctx, "get", prefix+who)
		}
		var wg sync.WaitGroup
		call := func(ctx context.Context, cmds ...*redis.Cmd) { wg.Go(func() { r.do(ctx, rdb, cmds...) }) }

		aIncr, aGet := incr(ctx, "a", 1)
		call(ctx, aIncr, aGet)
		if p := <-gate.started; p.cmds != 2 || !p.deadline.IsZero() {
			t.Fatalf("the first caller's pipeline: %+v, want its 2 commands and no deadline (it has none)", p)
		}
		cctx, cancel := context.WithCancel(ctx)
		bDeadline, dDeadline := time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)
		bctx, cancelB := context.WithDeadline(ctx, bDeadline)
		defer cancelB()
		dctx, cancelD := context.WithDeadline(ctx, dDeadline)
		defer cancelD()
		bIncr, bGet := incr(bctx, "b", 2)
		cIncr, cGet := incr(cctx, "c", 3)
		dIncr, dGet := incr(dctx, "d", 4)
		call(bctx, bIncr, bGet)
		call(cctx, cIncr, cGet)
		call(dctx, dIncr, dGet)
		r.waitForWaiting(3)
		cancel()
		gate.release <- struct{}{}
		if p := <-gate.started; p.cmds != 4 || !p.deadline.Equal(dDeadline) {
			t.Fatalf("the second pipeline: %+v, want b's and d's 4 commands, by d's deadline %v (the later)", p, dDeadline)
		}
		gate.release <- struct{}{}
		wg.Wait()

		for who, c := range map[string]struct {
			incr, get *redis.Cmd
			want      int64
		}{"a": {aIncr, aGet, 1}, "b": {bIncr, bGet, 2}, "d": {dIncr, dGet, 4}} {
			if n, err := c.incr.Int64(); err != nil || n != c.want {
				t.Errorf("%s: INCRBY answered %d, %v; want %d", who, n, err, c.want)
			}
			if v, err := c.get.Text(); err != nil || v != fmt.Sprint(c.want) {
				t.Errorf("%s: GET answered %q, %v; want %d", who, v, err, c.want)
			}
		}
		if !errors.Is(cIncr.Err(), context.Canceled) || !errors.Is(cGet.Err(), context.Canceled) {
			t.Errorf("c, cancelled while waiting: %v, %v; want context.Canceled", cIncr.Err(), cGet.Err())
		}
		if n, err := rdb.Exists(ctx, prefix+"c").Result(); err != nil || n != 0 {
			t.Errorf("c's key exists (%d, %v): its commands were sent", n, err)
		}
		if r.inFlight != 0 || len(r.waiting) != 0 {
			t.Errorf("after every call: %d in flight, %d waiting; want none", r.inFlight, len(r.waiting))
		}
	})
}

// Many concurrent callers, two pipelines at most out at once: each gets
// its own answers, in its order, and none is left waiting.
func TestSharedRoundTripsUnderConcurrency(t *testing.T) {
	t.Parallel()
	onEachRoundTripBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		r := &sharedRoundTrips{max: 2}
		ctx := context.Background()
		const callers = 200
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				key := fmt.Sprintf("%s%d", prefix, i)
				set := redis.NewCmd(ctx, "set", key, i)
				incr := redis.NewCmd(ctx, "incrby", key, i)
				r.do(ctx, rdb, set, incr)
				if err := set.Err(); err != nil {
					t.Errorf("caller %d: SET: %v", i, err)
				}
				if n, err := incr.Int64(); err != nil || n != int64(2*i) {
					t.Errorf("caller %d: INCRBY after its SET answered %d, %v; want %d", i, n, err, 2*i)
				}
			})
		}
		wg.Wait()
		if r.inFlight != 0 || len(r.waiting) != 0 {
			t.Errorf("after every call: %d in flight, %d waiting; want none", r.inFlight, len(r.waiting))
		}
	})
}

// panickingPipelines holds the first pipeline of the test's commands until
// the test releases it, and panics in the second.
type panickingPipelines struct{ gatedPipelines }

func (g panickingPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	var n atomic.Int32
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "incrby" {
			switch n.Add(1) {
			case 1:
				g.started <- gatedPipeline{cmds: len(cmds)}
				<-g.release
			case 2:
				panic("hook")
			}
		}
		return next(ctx, cmds)
	}
}

// A pipeline that panics fails the commands of the other callers it
// carried, and leaves its slot free: the next caller is sent.
func TestSharedRoundTripsSurviveAPanic(t *testing.T) {
	t.Parallel()
	onEachRoundTripBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		gate := panickingPipelines{gatedPipelines{started: make(chan gatedPipeline), release: make(chan struct{})}}
		rdb.AddHook(gate)
		r := &sharedRoundTrips{max: 1}
		ctx := context.Background()
		incr := func(key string) *redis.Cmd { return redis.NewCmd(ctx, "incrby", prefix+key, 1) }
		var wg sync.WaitGroup
		first := incr("a")
		wg.Go(func() { r.do(ctx, rdb, first) })
		<-gate.started
		// b leads the second pipeline (handed the slot), carrying c.
		panicked := make(chan any, 1)
		wg.Go(func() {
			defer func() { panicked <- recover() }()
			r.do(ctx, rdb, incr("b"))
		})
		r.waitForWaiting(1)
		carried := incr("c")
		wg.Go(func() { r.do(ctx, rdb, carried) })
		r.waitForWaiting(2)
		gate.release <- struct{}{}
		wg.Wait()
		if n, err := first.Int64(); err != nil || n != 1 {
			t.Errorf("the first call: %d, %v; want 1", n, err)
		}
		if v := <-panicked; v == nil {
			t.Error("the second pipeline's lead did not panic")
		}
		if carried.Err() == nil {
			t.Error("the caller the panicking pipeline carried has no error")
		}
		after := incr("d")
		r.do(ctx, rdb, after)
		if n, err := after.Int64(); err != nil || n != 1 {
			t.Errorf("a call after the panic: %d, %v; want 1", n, err)
		}
	})
}

// failingPipelines fails every pipeline of the test's commands before
// sending it, setting no command's error (as a hook may).
type failingPipelines struct{ err error }

func (f failingPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f failingPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f failingPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "incrby" {
			return f.err
		}
		return next(ctx, cmds)
	}
}

// A pipeline that fails without setting its commands' errors leaves none
// of them looking answered: each gets the pipeline's error.
func TestSharedRoundTripsGiveThePipelinesError(t *testing.T) {
	t.Parallel()
	onEachRoundTripBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		failed := errors.New("hook: refused")
		rdb.AddHook(failingPipelines{err: failed})
		r := &sharedRoundTrips{max: 1}
		ctx := context.Background()
		a, b := redis.NewCmd(ctx, "incrby", prefix+"a", 1), redis.NewCmd(ctx, "get", prefix+"a")
		r.do(ctx, rdb, a, b)
		for _, c := range []*redis.Cmd{a, b} {
			if !errors.Is(c.Err(), failed) {
				t.Errorf("%s: %v, want the pipeline's error", c.Name(), c.Err())
			}
		}
	})
}
