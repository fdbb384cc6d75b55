package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Creating a request: one script (applyWrite) that checks the id is free
// (or holds this very request: a retry) and stores it, indexes it, appends
// its first audit entry and event, and schedules its post and timers, in
// one round trip with no optimistic retries (the fields it writes are
// decoded by decodeRecord in record.go). On one Redis node the same script
// also confirms the request's slot of its agent's open-request cap and
// queues its post in its channel (createAndQueue), after the agent's
// limits in the same round trip.

// Create stores a new request and schedules its Slack post atomically, with
// the "requested" audit entry. created is false when the same agent already
// stored the identical body (the stored record is returned); ErrConflict when
// the id is taken otherwise.
//
// Under WriteBy, as for Update, Redis applies the create only before the
// time given (ErrWriteDeadline otherwise): intake creates under the
// reservation of a slot of the agent's open-request cap (ReserveOpen).
func (s *Store) Create(ctx context.Context, n NewRequest) (rec Record, created bool, err error) {
	if n.ID == "" || n.Agent == "" || len(n.Document) == 0 || n.BodyHash == "" || n.Channel == "" {
		return Record{}, false, errors.New("store: create: id, agent, document, hash and channel are required")
	}
	if !aah.ValidRequestID(n.ID) {
		return Record{}, false, fmt.Errorf("store: create: invalid request id %q", n.ID)
	}
	if ReservedID(n.ID) {
		return Record{}, false, fmt.Errorf("store: create %q: %w", n.ID, ErrReservedID)
	}
	adm := admissionOf(ctx)
	_, cluster := s.rdb.(*redis.ClusterClient)
	if adm != nil && cluster {
		return s.admitThenCreate(ctx, adm, n)
	}
	writeBy, err := writeByMs(ctx)
	if err != nil {
		return Record{}, false, err
	}
	_, storedOnly := ctx.Value(storedOnlyKey{}).(bool)
	guard := &createGuard{hash: n.BodyHash, agent: n.Agent, storedOnly: storedOnly}
	var admit *admitCall
	if adm != nil {
		// The limits are applied by the create's script, before its
		// guards; the create is admitted only by the slot they reserve.
		// (No deadline: the slot is taken and confirmed in one step.)
		c := s.admitCallFor(adm, n.ID)
		admit = &c
	}
	if n.MatchGrants != nil {
		// Checked in the script: with no live grant copy of the agent in
		// the shard, nothing can resolve it as it is created.
		guard.grantsKey = s.keys.grantCopies(shardOf(n.ID), n.Agent)
	}
	p := s.record()
	now := s.now()
	rec, _ = s.queueCreate(ctx, p, n, now)
	s.queueEvents(ctx, p, rec, now, createEvents(n), eventsCursorField(n))
	s.queuePublishCreated(ctx, p, n.ID) // wakes the event streams' readers that follow creations
	w := write{cmds: p.Cmds(), writeBy: writeBy, create: guard, sealShard: shardOf(n.ID)}
	turn := PostTurn{Channel: n.Channel, ID: n.ID, Arrival: now}
	var turnIn time.Duration
	var limits []any
	rec.Events.Cursor, turnIn, limits, err = s.applyQueued(ctx, s.keys.request(n.ID), w, turn, admit)
	if limits != nil {
		// (The script answered: a write past its deadline, or stopped by
		// another guard, wrote nothing, and the caller settles the slot.)
		err = s.settleAdmission(ctx, *admit, limits, err)
		if err == nil && adm.Slot.Allowed() {
			// The create confirmed the slot as it committed
			// (createAndQueue): nothing left for the caller to confirm.
			adm.Slot.confirmed = true
		}
	}
	if err == nil && turnIn > 0 && cluster {
		// Posts are ahead of it in its channel: its job waits for its turn
		// (the post ending the turn before it hands it on, PullPostJob)
		// rather than run now only to be told so. On one node the queuing
		// script did so itself (queuePostArgs); on a Cluster it is done
		// here, off the create's path. Should this be lost, the job runs
		// at its arrival and is told then.
		s.deferPostJob(n.ID, now, now.Add(turnIn))
	}
	if errors.Is(err, errGrantsMayMatch) {
		return s.createMatchingGrants(ctx, n, writeBy, storedOnly)
	}
	// (A create refused, a duplicate, a conflict, past its deadline, queued
	// nothing: its post is queued only by the script that stored it.)
	return s.created(ctx, n.ID, rec, false, err)
}

// created turns a create's outcome into Create's answer.
func (s *Store) created(ctx context.Context, id string, rec Record, byGrant bool, err error) (Record, bool, error) {
	switch {
	case err == nil:
		if byGrant {
			rec, err = s.Get(ctx, id) // as the change left it
			return rec, true, err
		}
		return rec, true, nil
	case errors.Is(err, ErrWriteDeadline), errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict), errors.Is(err, ErrNotAdmitted):
		return Record{}, false, err
	case errors.Is(err, errDuplicate):
		rec, err = s.Get(ctx, id)
		return rec, false, err
	default:
		return Record{}, false, fmt.Errorf("store: create request %s: %w", id, err)
	}
}

// createMatchingGrants is Create for a request its agent's live standing
// approvals might resolve as it is created: the grants are matched in Go, so
// the agent's grant copies of the shard are WATCHed (a grant created,
// revoked or expiring meanwhile fails the EXEC, and the match runs again on
// what is live then).
func (s *Store) createMatchingGrants(ctx context.Context, n NewRequest, writeBy int64, storedOnly bool) (Record, bool, error) {
	shard := shardOf(n.ID)
	reqKey := s.keys.request(n.ID)
	guard := &createGuard{hash: n.BodyHash, agent: n.Agent, storedOnly: storedOnly}
	for range 200 {
		var rec Record
		var byGrant bool
		var now time.Time
		if err := s.loadWrite(ctx); err != nil {
			return Record{}, false, fmt.Errorf("store: create request %s: %w", n.ID, err)
		}
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			live, err := s.watchGrantCopies(ctx, tx, shard, n.Agent)
			if err != nil {
				return err
			}
			p := s.record()
			now = s.now()
			var reqHead chainHead
			rec, reqHead = s.queueCreate(ctx, p, n, now)
			events := createEvents(n)
			if len(live) > 0 {
				// Resolved by a standing approval as it is created: the
				// change applies on top of the create, in its script.
				ch, err := n.MatchGrants(rec, live)
				if err != nil {
					return err
				}
				if ch != nil {
					byGrant = true
					s.queueChange(ctx, p, rec, reqHead, ch)
					events = append(events, changeEvents(rec, ch)...)
				}
			}
			s.queueEvents(ctx, p, rec, now, events, eventsCursorField(n))
			// Created, even when resolved as it is: no long poll can wait
			// for a request before it exists.
			s.queuePublishCreated(ctx, p, n.ID)
			rec.Events.Cursor, err = s.applyInTx(ctx, tx, reqKey, write{cmds: p.Cmds(), writeBy: writeBy, create: guard, sealShard: shard})
			return err
		}, s.keys.grantCopies(shard, n.Agent))
		if errors.Is(err, redis.TxFailedErr) {
			continue // a grant changed: match again
		}
		if err == nil {
			// Applied in a WATCH transaction, so queued after it; lost,
			// the post job queues itself when it runs (TakePostTurn).
			_ = s.queuePostAfter(ctx, PostTurn{Channel: n.Channel, ID: n.ID, Arrival: now})
		}
		return s.created(ctx, n.ID, rec, byGrant, err)
	}
	return Record{}, false, fmt.Errorf("store: create request %s: too much contention", n.ID)
}

// queueCreate records a new request's writes: its hash, its first audit
// entry, its indexes, its post and timer jobs. It returns the record as Get
// will read it back and the head of its audit chain.
func (s *Store) queueCreate(ctx context.Context, p redis.Pipeliner, n NewRequest, now time.Time) (Record, chainHead) {
	shard := shardOf(n.ID)
	ms := now.UnixMilli()
	reqHead := s.queueAudit(ctx, p, n.ID, now, chainHead{},
		[]AuditEvent{{Event: "requested", Actor: "agent:" + n.Agent, Data: map[string]any{"channel": n.Channel}}}, true)
	// Its jobs, in one ZADD: the timers, the post, the Home tabs' update.
	jobs := make([]redis.Z, 0, len(n.Timers)+2)
	timerIDs := make([]string, len(n.Timers))
	for i, tm := range n.Timers {
		timerIDs[i] = tm.ID
		jobs = append(jobs, redis.Z{Score: float64(tm.At.UnixMilli()), Member: tm.ID})
	}
	// The post's first due time to the microsecond: it is the request's
	// arrival, which orders its channel's queue (pace.go).
	jobs = append(jobs, redis.Z{Score: postArrivalScore(now), Member: jobID(JobPost, n.ID)})
	if s.homeJobs {
		jobs = append(jobs, redis.Z{Score: float64(homeDueAfterCreate(now)), Member: jobID(JobHome, n.ID)})
	}
	reviewers := uniqueUsers(nil, n.Reviewers)
	// A field that would hold its default (no response_url, no timers, no
	// reviewers, version 1) is not written: every field of a hash costs
	// ~50 bytes of Redis, and decodeRecord reads an absent one as its
	// default. Nor is the id: the key names it. The fields every request
	// has are cmdCreate's own (applyWrite names them); these are the others.
	fields := make([]any, 0, 12)
	if n.ResponseURL != "" {
		fields = append(fields, "response_url", n.ResponseURL)
	}
	if len(timerIDs) > 0 {
		fields = append(fields, "timers", encodeTimers(n.ID, timerIDs))
	}
	if len(reviewers) > 0 {
		fields = append(fields, reviewerIdxField, encodeUsers(reviewers))
	}
	if n.NoRequester {
		fields = append(fields, noRequesterField, "1")
	}
	if n.Unnamed {
		fields = append(fields, unnamedField, "1")
	}
	fields = createEventsFields(n.Events, fields)
	// Exactly what Get will read back (store_test checks it), made
	// without decoding the fields just encoded.
	rec := Record{ID: n.ID, Agent: n.Agent, Status: aah.StatusPending, Document: n.Document, BodyHash: n.BodyHash,
		Channel: n.Channel, ResponseURL: n.ResponseURL, Version: 1, ReceivedAt: fromMs(ms), UpdatedAt: fromMs(ms),
		Timers: nilIfEmpty(timerIDs), IndexedReviewers: nilIfEmpty(reviewers), noRequester: n.NoRequester,
		Unnamed: n.Unnamed}
	if n.Events != nil && n.Events.URL != "" {
		rec.Events = EventsState{URL: n.Events.URL, Types: nilIfEmpty(n.Events.Types)}
	}
	// No status index: the pending are found in idx:open (keys.go).
	idxs := []string{s.keys.agentIndex(shard, n.Agent, ""),
		s.keys.agentIndex(shard, n.Agent, aah.StatusPending), s.keys.openIndex(shard),
		s.keys.channelIndex(shard, n.Channel)}
	for _, u := range reviewers {
		idxs = append(idxs, s.keys.reviewerIndex(shard, u))
	}
	if n.Unnamed {
		idxs = append(idxs, s.keys.unnamedIndex(shard))
	}
	var deadlineKey, deadlineScore any = "", ""
	if !n.Deadline.IsZero() {
		deadlineKey, deadlineScore = s.keys.deadlineIndex(shard), float64(n.Deadline.UnixMilli())
	}
	// The hash right after the audit entry: the write script sets the
	// global entry's sequence fields with it, in one HSET (applyWrite).
	words := make([]any, 0, 14+2*len(jobs)+len(fields)+len(idxs))
	words = append(words, cmdCreate, s.keys.document(n.ID), encodeDoc(n.Document), s.keys.jobs(shard).due,
		ms, n.ID, n.Agent, n.BodyHash, n.Channel, reqHead.field(), deadlineKey, deadlineScore, 2*len(jobs))
	for _, j := range jobs {
		words = append(words, j.Score, j.Member)
	}
	words = append(words, len(fields))
	words = append(words, fields...)
	for _, idx := range idxs {
		words = append(words, idx)
	}
	p.Do(ctx, words...)
	return rec, reqHead
}

// homeAfterCreate is how long after its create a request's Home tabs job
// is due. Its post usually adds reviewers (those its message mentions,
// SetMentions), which schedules the same job again: due a moment later, the
// create's job is still waiting then and the two are one run, not two (a
// third of the job runner's runs per request, issue #17). A post queued
// behind others in its channel has this job moved with its own, to this
// much after its turn (takePostTurn's deferral): a post waiting longer than
// this made the two runs again. A reviewer's tab shows a new request at
// most this much later than its post (or its create, when its post goes at
// once); its publishes are spaced by HomePublishWindow anyway.
const homeAfterCreate = time.Second

var errDuplicate = errors.New("store: duplicate")

type storedOnlyKey struct{}

// StoredOnly returns a context under which Create stores nothing new: it
// answers a resubmission of a stored request as always (created false),
// and ErrNotFound when no request has the id, checked atomically with the
// create. Intake creates a resubmission it let past the agent's limits
// (because that very request was stored) under it: if the request was
// deleted meanwhile (retention), storing it would bypass them.
func StoredOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, storedOnlyKey{}, true)
}

// nilIfEmpty is list as decodeTimers reads it back: nil when empty.
func nilIfEmpty(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return list
}
