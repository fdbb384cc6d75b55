// Package jobs runs approvalbot's durable jobs: a Runner drains the job
// queue in Redis (the outbox of Slack posts, deliveries and timers), hands
// each job to the Handler of its kind, and acks, retries or dead-letters it.
// It knows nothing of Slack or of requests: bot registers the handlers.
package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Queue is the durable job queue the runner drains; *store.Store implements it.
type Queue interface {
	Claim(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, error)
	Ack(ctx context.Context, j store.Job) error
	Retry(ctx context.Context, j store.Job, at time.Time, countAttempt bool) error
	Bury(ctx context.Context, j store.Job, reason string) error
}

// NextClaimer is a Queue that also tells, with each claim, when the shard's
// next job is due (zero when none is): the runner then sleeps until the
// earliest of them instead of a whole poll interval. *store.Store
// implements it.
type NextClaimer interface {
	ClaimNext(ctx context.Context, shard, max int, lease time.Duration) ([]store.Job, time.Time, error)
}

// NextAcker is a Queue whose acks also tell when the acked job's shard has
// its earliest job due (zero when none is): a job that scheduled its
// request's next one then costs no claim of its shard to find when that is
// due. *store.Store implements it.
type NextAcker interface {
	AckNext(ctx context.Context, j store.Job) (next time.Time, err error)
}

// Handler runs one kind of job. Handle returns nil when the job is done
// (including when it found nothing left to do), a *RetryError to run it again
// at a chosen time, or any other error for a retry with backoff. Once a job
// has failed MaxAttempts times it is dead-lettered and GaveUp is called.
type Handler interface {
	Handle(ctx context.Context, job store.Job) error
	GaveUp(ctx context.Context, job store.Job, err error)
}

// RetryError asks the runner to run the job again after After. Free runs
// (pacing, Slack rate limits) do not count as failed attempts.
type RetryError struct {
	After  time.Duration
	Free   bool
	Reason string
}

func (e *RetryError) Error() string { return fmt.Sprintf("retry in %s: %s", e.After, e.Reason) }

// Options configure a Runner; zero values take the defaults.
type Options struct {
	Handlers     map[string]Handler // by job kind
	Concurrency  int                // jobs run at once; default 4
	Lease        time.Duration      // how long a claim is exclusive; default 60s
	PollInterval time.Duration      // longest idle sleep, jittered ±25%; default 250ms
	MaxAttempts  int                // before dead-lettering; default 12
	BaseBackoff  time.Duration      // first retry delay, doubling; default 1s
	MaxBackoff   time.Duration      // default 5m
	Metrics      *Metrics
	Logger       *slog.Logger
	// Now is the clock job due times are measured against (the store's).
	Now func() time.Time
}

// Runner drains the job queue: it claims due jobs shard by shard, runs each
// under a deadline shorter than its lease, and acks, retries or buries it.
// Any number of runners, in any number of processes, may share one Redis:
// a job is leased to one of them at a time.
type Runner struct {
	q    Queue
	opts Options
	log  *slog.Logger
	wake chan struct{}

	// soonest is the earliest time a job this runner rescheduled is due,
	// since its last round of claims (zero: none): the round's claims did
	// not see it, so an idle runner would otherwise sleep past it. sooner
	// signals that it moved earlier.
	mu      sync.Mutex
	soonest time.Time
	sooner  chan struct{}

	// dirty has a bit for each shard that may have jobs due that the
	// runner's last claim of it did not see (Wake, WakeFor, one of the
	// shard's jobs ran): see Run.
	dirty atomic.Uint32

	// told holds, per shard, the earliest due time an ack told since the
	// last round of claims (zero: none told), under mu: see NextAcker.
	told [store.Shards]time.Time
}

// allShards is dirty with every shard's bit.
const allShards = 1<<store.Shards - 1

// fullPassEvery bounds how long a runner goes without claiming a shard it
// was not woken for once it passed one over (see Run): a job another
// process adds there, or this one adds with no wake for it (a Home tab's
// publish, or another request's post made due by a withdrawal, in another
// shard than the request woken for), waits at most this long and a pass.
// Otherwise the poll interval bounds them, as before.
const fullPassEvery = 50 * time.Millisecond

// NewRunner returns a Runner over q.
func NewRunner(q Queue, opts Options) (*Runner, error) {
	if q == nil {
		return nil, errors.New("jobs: runner needs a queue")
	}
	if len(opts.Handlers) == 0 {
		return nil, errors.New("jobs: runner needs at least one job handler")
	}
	opts.Concurrency = cmp.Or(opts.Concurrency, 4)
	opts.Lease = cmp.Or(opts.Lease, 60*time.Second)
	opts.PollInterval = cmp.Or(opts.PollInterval, 250*time.Millisecond)
	opts.MaxAttempts = cmp.Or(opts.MaxAttempts, 12)
	opts.BaseBackoff = cmp.Or(opts.BaseBackoff, time.Second)
	opts.MaxBackoff = cmp.Or(opts.MaxBackoff, 5*time.Minute)
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{q: q, opts: opts, log: log, wake: make(chan struct{}, 1), sooner: make(chan struct{}, 1)}, nil
}

// Wake makes an idle runner look for work now instead of at its next poll,
// in every shard.
func (r *Runner) Wake() { r.wakeShards(allShards) }

// WakeFor is Wake for new work that is request id's own jobs: only their
// shard is claimed (one round trip, not one per shard), unless a pass over
// every shard is due anyway.
func (r *Runner) WakeFor(id string) { r.wakeShards(1 << uint(store.ShardOf(id))) }

func (r *Runner) wakeShards(bits uint32) {
	r.dirty.Or(bits)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run drains the queue until ctx is cancelled, then waits for running jobs.
// Idle, it sleeps until the earliest job it saw due (when the queue is a
// NextClaimer), a Wake, the poll interval or, when its last pass skipped
// shards, the next pass over every shard, whichever comes first: the
// interval still bounds how late it sees jobs another process added.
func (r *Runner) Run(ctx context.Context) error {
	r.log.InfoContext(ctx, "job runner started", "concurrency", r.opts.Concurrency, "lease", r.opts.Lease)
	sem := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	start := rand.IntN(store.Shards) // processes start on different shards
	// Each claim of a shard tells when its next job is due (a
	// NextClaimer). Until then the shard is not claimed again unless it is
	// woken for (WakeFor; Wake wakes all; a job of the shard ran, which may
	// have scheduled its request's next), or a pass over every shard is
	// due: at every poll, and fullPassEvery after the last one once a
	// pass has passed shards over (busy or not). A runner that claimed all
	// 16 shards whenever it was woken made some 44 claims per request at
	// 200 requests a second (issue #17).
	var nextDue [store.Shards]time.Time // zero: not known, claim it
	_, tells := r.q.(NextClaimer)
	var fullAt time.Time // when the next pass over every shard is due
	for {
		claimed, skipped := 0, false
		var next time.Time // the earliest job due later, zero if unknown
		now := r.opts.Now()
		r.mu.Lock()
		if !r.soonest.After(now) {
			// The claims below find what was rescheduled so far. A job
			// rescheduled to later is kept in mind: a queue's claims may
			// not tell when their next job is due, and this pass may claim
			// none of its shard.
			r.soonest = time.Time{}
		}
		for shard, at := range r.told {
			// What acks told (NextAcker) is as good as a claim's answer;
			// a shard not known yet (zero) is claimed anyway.
			if !at.IsZero() && !nextDue[shard].IsZero() && at.Before(nextDue[shard]) {
				nextDue[shard] = at
			}
			r.told[shard] = time.Time{}
		}
		r.mu.Unlock()
		woken := r.dirty.Swap(0)
		if !tells || !now.Before(fullAt) {
			woken, fullAt = allShards, now.Add(fullPassEvery)
		}
		for i := range store.Shards {
			if ctx.Err() != nil {
				return nil
			}
			shard := (start + i) % store.Shards
			if woken&(1<<uint(shard)) == 0 && nextDue[shard].After(now) {
				if nextDue[shard] != never && (next.IsZero() || nextDue[shard].Before(next)) {
					next = nextDue[shard]
				}
				skipped = true
				continue // nothing due there yet, as far as this runner knows
			}
			// Lease only as many jobs as can start now: reserve a slot
			// (waiting while all are busy), then claim for every free slot.
			// Only this loop fills sem, so the free slots counted stay free.
			sem <- struct{}{}
			free := 1 + cap(sem) - len(sem)
			jobs, due, err := r.claim(ctx, shard, free)
			if !due.IsZero() && (next.IsZero() || due.Before(next)) {
				next = due
			}
			switch {
			case err != nil || len(jobs) == free:
				nextDue[shard] = time.Time{} // more may be due now
			case due.IsZero():
				nextDue[shard] = never // none at all: until woken, or the next full pass
			default:
				nextDue[shard] = due
			}
			if err != nil {
				<-sem
				if ctx.Err() == nil {
					r.log.ErrorContext(ctx, "claim jobs failed", "shard", shard, "err", err)
				}
				continue
			}
			claimed += len(jobs)
			for k, j := range jobs {
				if k > 0 {
					sem <- struct{}{}
				}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					// It may have scheduled its request's next job (or
					// been rescheduled): its shard is looked at again,
					// unless its ack told when that is due (dueAt). A
					// round follows either way: it may also have made a job
					// due in another shard with no wake for it (a post
					// leaving its channel's queue hands the turn on), which
					// the pass over every shard finds once fullPassEvery has
					// passed, as it did when every job woke its shard.
					if r.process(ctx, j) {
						r.wakeShards(0)
					} else {
						r.wakeShards(1 << uint(shard))
					}
				}()
			}
			if len(jobs) == 0 {
				<-sem
			}
		}
		start = (start + 1) % store.Shards
		if claimed > 0 {
			continue // more may be due; poll again at once
		}
		if skipped && (next.IsZero() || fullAt.Before(next)) {
			// Shards were passed over: a job this runner was not woken for
			// may wait there (another request's post handed the turn by a
			// withdrawal, a Home tab publish), so the pass over every shard
			// comes when due, not at the next poll.
			next = fullAt
		}
		if !r.sleep(ctx, next) {
			return nil
		}
	}
}

// never is the nextDue of a shard whose claim found no job at all.
var never = time.Unix(1<<40, 0)

// sleep waits while the runner is idle: until next (or a job rescheduled
// meanwhile to run sooner), a Wake, or the poll interval. It returns false
// when ctx ended.
func (r *Runner) sleep(ctx context.Context, next time.Time) bool {
	for {
		r.mu.Lock()
		until := r.soonest
		r.mu.Unlock()
		if until.IsZero() || (!next.IsZero() && next.Before(until)) {
			until = next
		}
		timer := time.NewTimer(r.idle(until))
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-r.wake:
			timer.Stop()
			return true
		case <-timer.C:
			return true
		case <-r.sooner:
			timer.Stop() // and sleep again, until the sooner time
		}
	}
}

// rescheduled notes that a job was rescheduled to at: an idle runner wakes
// for it rather than at its next poll.
func (r *Runner) rescheduled(at time.Time) {
	r.mu.Lock()
	earlier := r.soonest.IsZero() || at.Before(r.soonest)
	if earlier {
		r.soonest = at
	}
	r.mu.Unlock()
	if earlier {
		select {
		case r.sooner <- struct{}{}:
		default:
		}
	}
}

// claim leases up to max jobs of shard, and says when the shard's next job
// is due when the queue can tell.
func (r *Runner) claim(ctx context.Context, shard, max int) ([]store.Job, time.Time, error) {
	if nc, ok := r.q.(NextClaimer); ok {
		return nc.ClaimNext(ctx, shard, max, r.opts.Lease)
	}
	jobs, err := r.q.Claim(ctx, shard, max, r.opts.Lease)
	return jobs, time.Time{}, err
}

// idle is how long the runner sleeps when it found nothing to run: until
// next (at least 1ms, as due times count in whole ms in Redis), at most the
// poll interval, jittered ±25% so processes do not poll in step.
func (r *Runner) idle(next time.Time) time.Duration {
	jitter := time.Duration(rand.Int64N(int64(r.opts.PollInterval)/2+1)) - r.opts.PollInterval/4
	d := r.opts.PollInterval + jitter
	if !next.IsZero() {
		d = min(d, max(next.Sub(r.opts.Now()), time.Millisecond))
	}
	return d
}

// process runs one job and settles it. The job's context ends well before
// its lease, so a slow Slack call is abandoned before another runner may
// reclaim the job: a job is never executing in two places at once. It
// reports whether its ack told when the job's shard has its next job due
// (NextAcker): the runner need not claim the shard to find out.
func (r *Runner) process(ctx context.Context, j store.Job) (toldNext bool) {
	r.opts.Metrics.lateness.WithLabelValues(j.Kind).Observe(max(r.opts.Now().Sub(j.Due), 0).Seconds())
	h, ok := r.opts.Handlers[j.Kind]
	if !ok {
		r.settle(ctx, j, "bury", r.q.Bury(context.WithoutCancel(ctx), j, "no handler for job kind "+j.Kind))
		return false
	}
	jobCtx, cancel := context.WithTimeout(ctx, r.opts.Lease*3/4)
	start := time.Now()
	err := h.Handle(jobCtx, j)
	cancel()
	r.opts.Metrics.duration.WithLabelValues(j.Kind).Observe(time.Since(start).Seconds())
	// Settle even when shutting down, so the job is not left to its lease.
	settleCtx, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelSettle()
	var retry *RetryError
	switch {
	case err == nil:
		r.opts.Metrics.jobs.WithLabelValues(j.Kind, "done").Inc()
		if na, ok := r.q.(NextAcker); ok {
			next, err := na.AckNext(settleCtx, j)
			if r.settle(ctx, j, "ack", err) {
				r.dueAt(j.Shard, next)
				return true
			}
			return false
		}
		r.settle(ctx, j, "ack", r.q.Ack(settleCtx, j))
	case errors.As(err, &retry) && (retry.Free || j.Attempt < r.opts.MaxAttempts):
		r.opts.Metrics.jobs.WithLabelValues(j.Kind, "rescheduled").Inc()
		r.log.DebugContext(ctx, "job rescheduled", append(jobAttrs(j), "after", retry.After, "reason", retry.Reason)...)
		at := r.opts.Now().Add(retry.After)
		if r.settle(ctx, j, "retry", r.q.Retry(settleCtx, j, at, !retry.Free)) {
			r.rescheduled(at)
		}
	case j.Attempt >= r.opts.MaxAttempts:
		r.opts.Metrics.jobs.WithLabelValues(j.Kind, "dead").Inc()
		r.log.ErrorContext(ctx, "job failed for the last time; dead-lettered", append(jobAttrs(j), "attempt", j.Attempt, "err", err)...)
		if r.settle(ctx, j, "bury", r.q.Bury(settleCtx, j, err.Error())) {
			h.GaveUp(settleCtx, j, err)
		}
	default:
		delay := r.backoff(j.Attempt)
		r.opts.Metrics.jobs.WithLabelValues(j.Kind, "failed").Inc()
		r.log.WarnContext(ctx, "job failed; will retry", append(jobAttrs(j), "attempt", j.Attempt, "retry_in", delay, "err", err)...)
		at := r.opts.Now().Add(delay)
		if r.settle(ctx, j, "retry", r.q.Retry(settleCtx, j, at, true)) {
			r.rescheduled(at)
		}
	}
	return false
}

// dueAt notes that shard's earliest job is due at next (zero: it has
// none), as an ack told: due already, the shard is claimed at once;
// later, the runner claims it then (and wakes for it), unless told sooner.
func (r *Runner) dueAt(shard int, next time.Time) {
	switch {
	case next.IsZero():
		return
	case !next.After(r.opts.Now()):
		r.wakeShards(1 << uint(shard))
		return
	}
	r.mu.Lock()
	if at := r.told[shard]; at.IsZero() || next.Before(at) {
		r.told[shard] = next
	}
	r.mu.Unlock()
	r.rescheduled(next)
}

// jobAttrs name a job in log lines: its id and kind, and the AAH request it
// belongs to under request_id, the key the access log, intake and callback
// lines of that request use.
func jobAttrs(j store.Job) []any {
	attrs := []any{"job", j.ID, "kind", j.Kind}
	if j.RequestID != "" {
		attrs = append(attrs, "request_id", j.RequestID)
	}
	return attrs
}

func (r *Runner) settle(ctx context.Context, j store.Job, op string, err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, store.ErrLeaseLost) {
		r.log.WarnContext(ctx, "job lease was lost before "+op+"; another runner owns it now", jobAttrs(j)...)
	} else {
		r.log.ErrorContext(ctx, "could not "+op+" job; it will run again when its lease expires", append(jobAttrs(j), "err", err)...)
	}
	return false
}

// backoff is the delay before attempt+1: BaseBackoff doubling per attempt,
// capped at MaxBackoff, with ±20% jitter so failing jobs do not retry in step.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.opts.BaseBackoff << min(attempt-1, 20)
	if d <= 0 || d > r.opts.MaxBackoff {
		d = r.opts.MaxBackoff
	}
	return d - d/5 + time.Duration(rand.Int64N(int64(d)*2/5+1))
}
