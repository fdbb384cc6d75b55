package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/aah"
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
// change atomically. It runs optimistically: the request is WATCHed, and if
// it changes before EXEC, decide runs again on the fresh state. decide may
// return (nil, nil) for "nothing to do"; its errors are returned as they
// are. Update returns the record as written.
//
// Only the request is watched: the change's global audit entries and
// events are appended by its script (applyWrite), so writes to other
// requests of the shard never make it retry.
func (s *Store) Update(ctx context.Context, id string, decide func(Record) (*Change, error)) (Record, error) {
	return s.update(ctx, id, decide, true)
}

// change is Update for a caller that needs no record back: it saves the
// round trip that reads the request again after the change (a post job
// makes two such changes). Its decide sees the record without its
// document (Document nil): no caller's needs it, and inflating it is most
// of the CPU of decoding a record whose document left the cache.
func (s *Store) change(ctx context.Context, id string, decide func(Record) (*Change, error)) error {
	_, err := s.update(ctx, id, decide, false)
	return err
}

func (s *Store) update(ctx context.Context, id string, decide func(Record) (*Change, error), reread bool) (Record, error) {
	if !aah.ValidRequestID(id) {
		return Record{}, ErrNotFound
	}
	reqKey := s.keys.request(id)
	for attempt := range 200 {
		var out Record
		var quiet, execSent, closed bool
		var agent, unposted string
		writeBy, err := writeByMs(ctx)
		if err != nil {
			return Record{}, err
		}
		if err := s.loadWrite(ctx); err != nil {
			return Record{}, fmt.Errorf("store: update %s: %w", id, err)
		}
		err = s.watchRead(ctx, id, reread, func(tx *redis.Tx, h map[string]string) error {
			if len(h) == 0 {
				return ErrNotFound
			}
			rec := decodeRecord(id, h)
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
			if slices.Contains(ch.Cancel, jobID(JobPost, id)) {
				unposted = rec.Channel // its post will not run: it leaves the channel's queue
			}
			events := changeEvents(rec, ch)
			if len(events) > 0 {
				quiet = false // the event streams' reader is woken
			}
			p := s.record()
			s.queueChange(ctx, p, rec, parseHead(h["audit_head"]), ch)
			s.queueEvents(ctx, p, rec, s.now(), events, "")
			if !quiet {
				s.queuePublish(ctx, p, id)
			}
			execSent = true
			_, err = s.applyInTx(ctx, tx, reqKey, write{cmds: p.Cmds(), writeBy: writeBy, sealShard: shardOf(id)})
			return err
		})
		switch {
		case err == nil:
			if closed && s.openCounts {
				// After the commit, in another slot: if this is lost the
				// agent's count only overcounts, until reconcile.
				_ = s.forgetOpen(ctx, agent, id)
			}
			if unposted != "" {
				// After the commit, in the channel's slot: if this is lost the
				// channel waits for it at most Pacing.Grace past the time its
				// turn was to come (its arrival when it was told none).
				_ = s.LeavePostQueue(ctx, PostTurn{Channel: unposted, ID: id})
			}
			if !reread {
				return Record{}, nil
			}
			return s.Get(ctx, id)
		case errors.Is(err, errNoChange):
			return out, nil
		case errors.Is(err, redis.TxFailedErr):
			// Someone else changed the request (or the script cache was
			// flushed: loadWrite loads it first): back off a little (more
			// as contention grows) and decide again.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20)))))
			continue
		case execSent && Unavailable(err) && !errors.Is(err, ErrWriteDeadline):
			// The MULTI/EXEC went out and no answer came back: Redis may
			// have applied it (before the deadline, with WriteBy).
			return Record{}, fmt.Errorf("store: update %s: %w: %w", id, ErrOutcomeUnknown, err)
		default:
			return Record{}, err
		}
	}
	return Record{}, fmt.Errorf("store: update %s: too much contention", id)
}

// watchRead runs fn in a transaction that WATCHes request id's hash, with
// the hash as read under the watch (empty when there is none) and, when
// document is true, the request's document in its "doc" field
// (storedRead.fields). fn either ends it with its MULTI/EXEC or returns
// without one.
//
// On one Redis node (standalone or Sentinel's master) the WATCH and the
// read go in one round trip: Redis runs them in order on the connection,
// so the hash is read under the watch as when they go one by one (a change
// that precedes the read is in it; one that follows fails the EXEC). Every
// Update saves a round trip this way, and a post makes three. Should fn
// return without its EXEC having run, the watch is released (UNWATCH)
// before the connection goes back to the pool. A Cluster client's Watch
// finds the key's node (following MOVED) first: there the two go one by
// one.
func (s *Store) watchRead(ctx context.Context, id string, document bool, fn func(tx *redis.Tx, h map[string]string) error) error {
	key := s.keys.request(id)
	c, ok := s.rdb.(*redis.Client)
	if !ok {
		return s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var r storedRead
			_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				r = s.queueRead(ctx, p, id, document)
				return nil
			})
			h, err := r.fields(err)
			if err != nil {
				return err
			}
			return fn(tx, h)
		}, key)
	}
	return c.Watch(ctx, func(tx *redis.Tx) (err error) {
		var watch *redis.Cmd
		var read storedRead
		_, err = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watch = p.Do(ctx, "watch", key)
			// The document is not watched: it is written once, with the
			// hash, and never changed.
			read = s.queueRead(ctx, p, id, document)
			return nil
		})
		if watch.Err() != nil {
			return watch.Err() // nothing watched
		}
		// Until an EXEC is known to have run, the watch is this
		// transaction's to release, whatever ends it (fn may panic, and the
		// process recovers). Unanswered in unwatchTimeout, the connection
		// is closed, and the watch with it.
		armed := true
		defer func() {
			if armed {
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unwatchTimeout)
				_ = tx.Unwatch(uctx).Err()
				cancel()
			}
		}()
		var h map[string]string
		if h, err = read.fields(err); err == nil {
			err = fn(tx, h)
		}
		armed = err != nil && !errors.Is(err, redis.TxFailedErr) && !redis.IsExecAbortError(err)
		return err
	})
}

// unwatchTimeout bounds the UNWATCH of a transaction that ended without
// its EXEC, past the caller's own deadline (which may have ended it).
const unwatchTimeout = 250 * time.Millisecond

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
// It works in the write's script (applyWrite), which reads Redis's clock
// (TIME) as it runs and writes nothing once at has passed: the script is
// atomic, so the write applies at that instant or not at all.
func WriteBy(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, writeByKey{}, at)
}

// queueChange records ch's writes on p (see apply.go); reqHead is the head
// of the request's audit chain, read with it under WATCH.
func (s *Store) queueChange(ctx context.Context, p redis.Pipeliner, rec Record, reqHead chainHead, ch *Change) {
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
		// Pending requests have no status index (keys.go); one stored
		// before that change is still in idx:status:pending, and leaves it.
		p.ZRem(ctx, s.keys.statusIndex(shard, rec.Status), rec.ID)
		if ch.Status != aah.StatusPending {
			p.ZAdd(ctx, s.keys.statusIndex(shard, ch.Status), redis.Z{Score: score, Member: rec.ID})
		}
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
		if rec.Unnamed {
			p.ZRem(ctx, s.keys.unnamedIndex(shard), rec.ID)
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
			fields = append(fields, reviewerIdxField, encodeUsers(added))
		}
	}
	if s.homeJobs && (closing || escalating || newReviewers) {
		// Who has the request waiting changed: their Home tabs follow.
		ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobHome, rec.ID), At: now})
	}
	if len(ch.Timers) > 0 || len(timers) != len(rec.Timers) {
		fields = append(fields, "timers", encodeTimers(rec.ID, timers))
	}
	if ch.Bump {
		fields = append(fields, "version", rec.Version+1)
		if rec.Posted() {
			ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobSync, rec.ID), At: now})
		}
	}
	// The fields a change deletes go before those it sets (the two never
	// overlap): Redis sizes a hash's table for the most fields it ever held
	// at once and does not shrink it back, so setting first would leave a
	// posted request's hash with a table for 32 fields where 16 hold it
	// (128 bytes of every posted request, issue #17). They go before the
	// audit entries too, which set the global entries' sequence fields
	// with the HSET that follows them (applyWrite: one call, not two).
	if len(ch.del) > 0 {
		p.HDel(ctx, key, ch.del...)
	}
	if len(ch.Audit) > 0 {
		reqHead = s.queueAudit(ctx, p, rec.ID, now, reqHead, ch.Audit, false)
		fields = append(fields, "audit_head", reqHead.field())
	}
	if len(fields) > 0 {
		p.HSet(ctx, key, fields...)
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
