package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Creating a request: one optimistic transaction that stores it, indexes
// it, appends its first audit entry and event, and schedules its post and
// timers (the fields it writes are decoded by decodeRecord in record.go).

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
	shard := shardOf(n.ID)
	reqKey, headKey := s.keys.request(n.ID), s.keys.auditShardHead(shard)
	writeBy, fenced := ctx.Value(writeByKey{}).(time.Time)
	_, storedOnly := ctx.Value(storedOnlyKey{}).(bool)
	for range 200 {
		watched := []string{reqKey, headKey, s.keys.events(shard)}
		if n.MatchGrants != nil {
			// The agent's grant copies of this shard: a grant created or
			// revoked meanwhile fails the EXEC (grants.go).
			watched = append(watched, s.keys.grantCopies(shard, n.Agent))
		}
		var byGrant bool
		var fenceKey string
		if fenced {
			if fenceKey, err = s.setFence(ctx, n.ID, writeBy); err != nil {
				return Record{}, false, err
			}
			watched = append(watched, fenceKey)
		}
		err = s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			// Everything the create decides on, read in one round trip
			// (after WATCH, before MULTI: still watched).
			var hm *redis.SliceCmd
			var alive *redis.IntCmd
			var headCmd *redis.StringCmd
			var newest *redis.XMessageSliceCmd
			_, _ = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				hm = p.HMGet(ctx, reqKey, "hash", "agent")
				if fenceKey != "" {
					alive = p.Exists(ctx, fenceKey)
				}
				headCmd = p.Get(ctx, headKey)
				newest = p.XRevRangeN(ctx, s.keys.events(shard), "+", "-", 1)
				return nil
			})
			h, err := hm.Result()
			if err != nil {
				return err
			}
			if h[0] != nil {
				if h[0] == n.BodyHash && h[1] == n.Agent {
					return errDuplicate
				}
				return ErrConflict
			}
			if storedOnly {
				return ErrNotFound
			}
			if alive != nil {
				// Expired before WATCH saw it, the fence could not fail
				// the EXEC: the time has passed, create nothing.
				if n, err := alive.Result(); err != nil {
					return err
				} else if n == 0 {
					return ErrWriteDeadline
				}
			}
			head, err := headCmd.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			lastEvent, err := newestEventID(newest)
			if err != nil {
				return err
			}
			var live []Grant
			if n.MatchGrants != nil {
				if live, err = s.watchGrantCopies(ctx, tx, shard, n.Agent); err != nil {
					return err
				}
			}
			now := s.now()
			ms := now.UnixMilli()
			byGrant = false
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				reqHead, shardHead := s.queueAudit(ctx, p, n.ID, now, chainHead{}, parseHead(head),
					[]AuditEvent{{Event: "requested", Actor: "agent:" + n.Agent, Data: map[string]any{"channel": n.Channel}}})
				timerIDs := make([]string, len(n.Timers))
				for i, tm := range n.Timers {
					timerIDs[i] = tm.ID
					p.ZAdd(ctx, s.keys.jobs(shard).due, redis.Z{Score: float64(tm.At.UnixMilli()), Member: tm.ID})
				}
				reviewers := uniqueUsers(nil, n.Reviewers)
				fields := map[string]string{"id": n.ID, "agent": n.Agent, "status": string(aah.StatusPending),
					"timers": mustJSON(timerIDs), reviewerIdxField: mustJSON(reviewers),
					"doc": string(n.Document), "hash": n.BodyHash, "channel": n.Channel, "response_url": n.ResponseURL,
					"version": "1", "received_ms": strconv.FormatInt(ms, 10), "updated_ms": strconv.FormatInt(ms, 10),
					"audit_head": reqHead.String(), gseq0Field: strconv.FormatInt(parseHead(head).seq+1, 10)}
				if n.NoRequester {
					fields[noRequesterField] = "1"
				}
				createEventsFields(n.Events, lastEvent, fields)
				p.HSet(ctx, reqKey, fields)
				rec = decodeRecord(fields) // exactly what Get will read back
				events := createEvents(n)
				// To the microsecond: the post job's first due time is the
				// request's arrival, which orders its channel's queue (pace.go).
				p.ZAdd(ctx, s.keys.jobs(shard).due, redis.Z{Score: float64(now.UnixMicro()) / 1000, Member: jobID(JobPost, n.ID)})
				if s.homeJobs {
					p.ZAdd(ctx, s.keys.jobs(shard).due, redis.Z{Score: float64(ms), Member: jobID(JobHome, n.ID)})
				}
				idxs := []string{s.keys.statusIndex(shard, aah.StatusPending), s.keys.agentIndex(shard, n.Agent, ""),
					s.keys.agentIndex(shard, n.Agent, aah.StatusPending), s.keys.openIndex(shard),
					s.keys.channelIndex(shard, n.Channel)}
				for _, u := range reviewers {
					idxs = append(idxs, s.keys.reviewerIndex(shard, u))
				}
				for _, idx := range idxs {
					p.ZAdd(ctx, idx, redis.Z{Score: float64(ms), Member: n.ID})
				}
				if !n.Deadline.IsZero() {
					p.ZAdd(ctx, s.keys.deadlineIndex(shard), redis.Z{Score: float64(n.Deadline.UnixMilli()), Member: n.ID})
				}
				if len(live) > 0 {
					// Resolved by a standing approval as it is created: the
					// change applies on top of the create, in its MULTI.
					ch, err := n.MatchGrants(rec, live)
					if err != nil {
						return err
					}
					if ch != nil {
						byGrant = true
						s.queueChange(ctx, p, rec, reqHead, shardHead, ch)
						events = append(events, changeEvents(rec, ch)...)
					}
				}
				s.queueEvents(ctx, p, rec, lastEvent, now, events)
				return nil
			})
			return err
		}, watched...)
		switch {
		case err == nil:
			s.publishChange(ctx, n.ID) // wakes the event streams' reader
			if byGrant {
				rec, err = s.Get(ctx, n.ID) // as the change left it
				return rec, true, err
			}
			return rec, true, nil
		case errors.Is(err, ErrWriteDeadline), errors.Is(err, ErrNotFound):
			return Record{}, false, err
		case errors.Is(err, errDuplicate):
			rec, err = s.Get(ctx, n.ID)
			return rec, false, err
		case errors.Is(err, ErrConflict):
			return Record{}, false, ErrConflict
		case errors.Is(err, redis.TxFailedErr):
			continue // a concurrent create or audit write: look again
		default:
			return Record{}, false, fmt.Errorf("store: create request %s: %w", n.ID, err)
		}
	}
	return Record{}, false, fmt.Errorf("store: create request %s: too much contention", n.ID)
}

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
