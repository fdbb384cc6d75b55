package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// JobAt schedules a job.
type JobAt struct {
	ID string
	At time.Time
	// NotEarlier keeps the job's due time when it is already later (a
	// sweep must wait for the latest overlap it serves).
	NotEarlier bool
}

// JobID names a job of a kind for a request.
func JobID(kind, requestID string) string { return jobID(kind, requestID) }

// Update reads a request, lets decide say what changes, and applies the
// change atomically. It runs optimistically: the request and its shard's
// audit head are WATCHed, and if either changes before EXEC, decide runs
// again on the fresh state. decide may return (nil, nil) for "nothing to do";
// its errors are returned as they are. Update returns the record as written.
func (s *Store) Update(ctx context.Context, id string, decide func(Record) (*Change, error)) (Record, error) {
	return s.update(ctx, id, decide, true)
}

// apply is Update for a caller that needs no record back: it saves the
// round trip that reads the request again after the change (a post job
// makes three such changes).
func (s *Store) apply(ctx context.Context, id string, decide func(Record) (*Change, error)) error {
	_, err := s.update(ctx, id, decide, false)
	return err
}

func (s *Store) update(ctx context.Context, id string, decide func(Record) (*Change, error), reread bool) (Record, error) {
	if !aah.ValidRequestID(id) {
		return Record{}, ErrNotFound
	}
	reqKey, headKey := s.keys.request(id), s.keys.auditShardHead(shardOf(id))
	// The shard's event stream is watched too: the ids of the events a
	// change writes follow the newest one read here.
	eventsKey := s.keys.events(shardOf(id))
	writeBy, fenced := ctx.Value(writeByKey{}).(time.Time)
	for attempt := range 200 {
		var out Record
		var quiet, execSent, closed bool
		var agent string
		watched := []string{reqKey, headKey, eventsKey}
		var fenceKey string
		if fenced {
			var err error
			if fenceKey, err = s.setFence(ctx, id, writeBy); err != nil {
				return Record{}, err
			}
			watched = append(watched, fenceKey)
		}
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			// What decide reads, in one round trip (after WATCH, before
			// MULTI: still watched).
			var all *redis.MapStringStringCmd
			var headCmd *redis.StringCmd
			var alive *redis.IntCmd
			_, _ = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				all = p.HGetAll(ctx, reqKey)
				headCmd = p.Get(ctx, headKey)
				if fenceKey != "" {
					alive = p.Exists(ctx, fenceKey)
				}
				return nil
			})
			h, err := all.Result()
			if err != nil {
				return err
			}
			if len(h) == 0 {
				return ErrNotFound
			}
			head, err := headCmd.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if alive != nil {
				// Expired before WATCH saw it, the fence could not fail
				// the EXEC: the deadline has passed, write nothing.
				if n, err := alive.Result(); err != nil {
					return err
				} else if n == 0 {
					return ErrWriteDeadline
				}
			}
			rec := decodeRecord(h)
			ch, err := decide(rec)
			if err != nil {
				return err
			}
			if ch == nil {
				out = rec
				return errNoChange
			}
			quiet = ch.auditOnly() || ch.Quiet
			closed, agent = ch.Status != "" && !ch.Status.Open() && rec.Status.Open(), rec.Agent
			events := changeEvents(rec, ch)
			lastEvent := ""
			if len(events) > 0 {
				if lastEvent, err = s.lastEventID(ctx, tx, shardOf(id)); err != nil {
					return err
				}
				quiet = false // the event streams' reader is woken
			}
			execSent = true
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				s.queueChange(ctx, p, rec, parseHead(h["audit_head"]), parseHead(head), ch)
				s.queueEvents(ctx, p, rec, lastEvent, s.now(), events)
				return nil
			})
			return err
		}, watched...)
		switch {
		case err == nil:
			if closed && s.openCounts {
				// After the commit, in another slot: if this is lost the
				// agent's count only overcounts, until reconcile.
				_ = s.forgetOpen(ctx, agent, id)
			}
			if !quiet {
				s.publishChange(ctx, id)
			}
			if !reread {
				return Record{}, nil
			}
			return s.Get(ctx, id)
		case errors.Is(err, errNoChange):
			return out, nil
		case errors.Is(err, redis.TxFailedErr):
			// Someone else changed the request or the shard's chain (or
			// the write deadline passed: the next attempt says so): back
			// off a little (more as contention grows) and decide again.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20)))))
			continue
		case execSent && Unavailable(err) && !errors.Is(err, ErrWriteDeadline):
			// The MULTI/EXEC went out and no answer came back: Redis may
			// have applied it (before the fence, with WriteBy).
			return Record{}, fmt.Errorf("store: update %s: %w: %w", id, ErrOutcomeUnknown, err)
		default:
			return Record{}, err
		}
	}
	return Record{}, fmt.Errorf("store: update %s: too much contention", id)
}

// ErrWriteDeadline is Update's error when the time given by WriteBy passed
// before Redis applied the change: nothing was written. It is a deadline
// (errors.Is context.DeadlineExceeded), so Unavailable reports it.
var ErrWriteDeadline = fmt.Errorf("store: the write deadline passed before Redis applied the change, nothing was written: %w",
	context.DeadlineExceeded)

// ErrOutcomeUnknown marks Update's error when the transaction was sent but
// no answer came back in time: Redis may or may not have applied it. Under
// WriteBy it was applied, if at all, before the fence.
var ErrOutcomeUnknown = errors.New("store: the change was sent but not confirmed")

type writeByKey struct{}

// WriteBy returns a context under which Update applies a change only if
// Redis applies it before at, by Redis's clock (it must agree with this
// process's, as NTP keeps it): past at, the transaction fails in Redis
// itself, however late its EXEC reaches a frozen or slow server. A caller
// that answers "not recorded" once at has passed (and before ctx's
// deadline, which should come a little later so the answer of a change
// applied just in time can still arrive) is then never contradicted by a
// write that lands afterwards.
//
// It works by a fence: a key that expires at at, WATCHed with the request,
// so that its expiry fails the EXEC (Redis 6.0.9 and later; PXAT needs
// 6.2).
func WriteBy(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, writeByKey{}, at)
}

// setFence writes the fence of one attempt of Update under WriteBy, or
// returns ErrWriteDeadline when at has passed already.
func (s *Store) setFence(ctx context.Context, id string, at time.Time) (string, error) {
	if !time.Now().Before(at) {
		return "", ErrWriteDeadline
	}
	key := s.keys.fence(shardOf(id), uuid.NewString())
	if err := setFence.Run(ctx, s.rdb, []string{key}, at.UnixMilli()).Err(); err != nil {
		return "", fmt.Errorf("store: update %s: set the write fence: %w", id, err)
	}
	return key, nil
}

// queueChange queues ch on a MULTI pipeline; reqHead and shardHead are the
// audit chain heads read under WATCH.
func (s *Store) queueChange(ctx context.Context, p redis.Pipeliner, rec Record, reqHead, shardHead chainHead, ch *Change) {
	now := s.now()
	key := s.keys.request(rec.ID)
	shard := shardOf(rec.ID)
	var fields []any
	if !ch.auditOnly() && !ch.Quiet {
		fields = append(fields, "updated_ms", now.UnixMilli())
	}
	for k, v := range ch.set {
		fields = append(fields, k, v)
	}
	fields = append(fields, ch.typedFields(rec)...)
	for _, a := range ch.Answers {
		fields = append(fields, answerField+a.DecisionID, mustJSON(a))
	}
	if ch.Status != "" && ch.Status != rec.Status {
		fields = append(fields, "status", string(ch.Status))
		score := float64(rec.ReceivedAt.UnixMilli())
		p.ZRem(ctx, s.keys.statusIndex(shard, rec.Status), rec.ID)
		p.ZAdd(ctx, s.keys.statusIndex(shard, ch.Status), redis.Z{Score: score, Member: rec.ID})
		p.ZRem(ctx, s.keys.agentIndex(shard, rec.Agent, rec.Status), rec.ID)
		p.ZAdd(ctx, s.keys.agentIndex(shard, rec.Agent, ch.Status), redis.Z{Score: score, Member: rec.ID})
	}
	jobs := s.keys.jobs(shard)
	timers := rec.Timers
	for _, tm := range ch.Timers {
		timers = append(timers, tm.ID)
		p.ZAdd(ctx, jobs.due, redis.Z{Score: float64(tm.At.UnixMilli()), Member: tm.ID})
	}
	closing := ch.Status != "" && !ch.Status.Open() && rec.Status.Open()
	if closing {
		// Closing the request (resolved, expired, withdrawn) cancels every
		// timer it has, in this same transaction: none can fire late.
		ch.Cancel = append(ch.Cancel, timers...)
		timers = nil
		// It leaves every index of open requests in the same transaction.
		p.ZRem(ctx, s.keys.openIndex(shard), rec.ID)
		p.ZRem(ctx, s.keys.channelIndex(shard, rec.Channel), rec.ID)
		p.ZRem(ctx, s.keys.deadlineIndex(shard), rec.ID)
		for _, u := range uniqueUsers(rec.IndexedReviewers, ch.AddReviewers) {
			p.ZRem(ctx, s.keys.reviewerIndex(shard, u), rec.ID)
		}
		if rec.Slack.Copies > 0 || rec.Slack.CopyTried {
			// Its reminder and escalation copies show the outcome too
			// (a copy recorded after this schedules the job itself), and
			// a copy sent with its answer lost is looked for: the timer
			// jobs that would have retried it are cancelled with the close.
			ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobCopies, rec.ID), At: now})
		}
	}
	if closing && s.notifyJobs && !rec.noRequester {
		// Its requester is told how it ended (a DM sent once: see JobNotify).
		ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobNotify, rec.ID), At: now})
	}
	escalating := ch.Status == aah.StatusEscalated && rec.Status != aah.StatusEscalated
	newReviewers := false
	if !closing && rec.Status.Open() {
		if added := uniqueUsers(rec.IndexedReviewers, ch.AddReviewers); len(added) > len(rec.IndexedReviewers) {
			newReviewers = true
			score := float64(rec.ReceivedAt.UnixMilli())
			for _, u := range added[len(rec.IndexedReviewers):] {
				p.ZAdd(ctx, s.keys.reviewerIndex(shard, u), redis.Z{Score: score, Member: rec.ID})
			}
			fields = append(fields, reviewerIdxField, mustJSON(added))
		}
	}
	if s.homeJobs && (closing || escalating || newReviewers) {
		// Who has the request waiting changed: their Home tabs follow.
		ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobHome, rec.ID), At: now})
	}
	if len(ch.Timers) > 0 || len(timers) != len(rec.Timers) {
		fields = append(fields, "timers", mustJSON(timers))
	}
	if ch.Bump {
		fields = append(fields, "version", rec.Version+1)
		if rec.Posted() {
			ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobSync, rec.ID), At: now})
		}
	}
	if len(ch.Audit) > 0 {
		reqHead, _ = s.queueAudit(ctx, p, rec.ID, now, reqHead, shardHead, ch.Audit)
		fields = append(fields, "audit_head", reqHead.String())
	}
	if len(fields) > 0 {
		p.HSet(ctx, key, fields...)
	}
	if len(ch.del) > 0 {
		p.HDel(ctx, key, ch.del...)
	}
	if r := ch.Resolution; r != nil && r.Deliver {
		ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobDeliver, rec.ID), At: r.At})
	}
	for _, j := range ch.Jobs {
		z := redis.Z{Score: float64(j.At.UnixMilli()), Member: j.ID}
		if j.NotEarlier {
			p.ZAddArgs(ctx, jobs.due, redis.ZAddArgs{GT: true, Members: []redis.Z{z}})
			continue
		}
		p.ZAdd(ctx, jobs.due, z)
	}
	for _, push := range ch.push {
		p.RPush(ctx, push.Key, push.Value)
		p.LTrim(ctx, push.Key, -push.Cap, -1)
	}
	for _, id := range ch.Cancel {
		p.ZRem(ctx, jobs.due, id)
		p.HDel(ctx, jobs.attempts, id)
	}
}

// publishChange tells every process's waiters (long polls) that a request
// changed. Best effort: waiters also time out and re-read.
func (s *Store) publishChange(ctx context.Context, id string) {
	_ = s.rdb.Publish(ctx, s.keys.changes(), id).Err()
}

// SubscribeChanges delivers the id of every request that changes, from any
// process, until ctx ends. One subscription serves a whole process.
func (s *Store) SubscribeChanges(ctx context.Context) <-chan string {
	sub := s.rdb.Subscribe(ctx, s.keys.changes())
	out := make(chan string, 256)
	go func() {
		defer close(out)
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
				select {
				case out <- m.Payload:
				default: // a slow consumer misses a wake-up, never blocks the others
				}
			}
		}
	}()
	return out
}
