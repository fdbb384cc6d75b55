// Package store owns approvalbot's state in Redis: decision requests, their
// indexes, and the durable job queue (the outbox) that drives every Slack
// call. Every key is built in keys.go and every Lua script lives in
// scripts.go with its KEYS and ARGV documented.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors callers branch on.
var (
	ErrNotFound = errors.New("store: request not found")
	ErrConflict = errors.New("store: request id already used by a different request")
	ErrNotOpen  = errors.New("store: request is no longer open")
	// ErrReservedID: the id names one of the store's own keys (ReservedID).
	ErrReservedID = errors.New("store: the request id is reserved")
)

// DefaultPrefix prefixes every key unless Options.Prefix says otherwise.
const DefaultPrefix = "ab"

// Options configure a Store.
type Options struct {
	// Prefix namespaces every key, so several deployments (or tests) can share
	// one Redis. Default "ab".
	Prefix string
	// DeadLetterCap bounds each shard's dead-letter list. Default 1000.
	DeadLetterCap int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// AuditKey, when set, makes audit hashes HMAC-SHA256 under this key, so
	// only a holder of the key can forge a consistent chain.
	AuditKey []byte
	// HomeJobs schedules a JobHome job, in the same transaction, whenever a
	// request is created or first posted, escalated, closed, or filed under
	// new reviewers: the changes that move it in or out of someone's App
	// Home tab. Set it where a job runner handles JobHome (the bot).
	HomeJobs bool
	// NotifyJobs schedules a JobNotify job (unless the request names no
	// requester: NewRequest.NoRequester), in the same transaction,
	// whenever a request closes (resolved, expired, withdrawn): its
	// requester is told by DM. Set it where a job runner handles JobNotify
	// (the bot, unless NOTIFY_REQUESTER=false).
	NotifyJobs bool
	// OpenCounts removes a request from its agent's count of open requests
	// (opencap.go) once the change that closed it committed. Set it where
	// intake caps open requests (INTAKE_MAX_OPEN): without it the count
	// still never undercounts, but each closed request stays counted until
	// a reconcile at the cap removes it.
	OpenCounts bool
	// EventsRetention is how long progress events are kept (progress.go);
	// default DefaultEventsRetention.
	EventsRetention time.Duration
}

// Store is approvalbot's Redis state. It is safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	keys    keys
	deadCap int
	now     func() time.Time
	hasher  auditHasher
	// homeJobs: see Options.HomeJobs.
	homeJobs bool
	// notifyJobs: see Options.NotifyJobs.
	notifyJobs bool
	// openCounts: see Options.OpenCounts.
	openCounts bool
	// eventsRetention: see Options.EventsRetention.
	eventsRetention time.Duration
	// sealer is woken by writes that append global audit entries (seal.go).
	sealer *sealer
	// confirms queues ConfirmOpenLater's confirmations (opencap.go),
	// deferrals deferPostJob's (createpost.go).
	confirms  laterQueue[OpenSlot]
	deferrals laterQueue[postDeferral]
	// writeLoaded: applyWrite is known loaded in Redis (loadWrite).
	writeLoaded atomic.Bool
	// docs: parsed documents for LoadShared.
	docs *docCache
	// postPacing: see PacePosts; nil until told.
	postPacing atomic.Pointer[Pacing]
	// roundTrips: creates share them under load (roundtrip.go).
	roundTrips sharedRoundTrips
}

// New returns a Store over rdb, which may be a standalone, Sentinel or
// Cluster client.
func New(rdb redis.UniversalClient, opts Options) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("store: nil redis client")
	}
	s := &Store{
		rdb:     rdb,
		keys:    newKeys(cmp.Or(opts.Prefix, DefaultPrefix)),
		deadCap: cmp.Or(opts.DeadLetterCap, 1000),
		docs:    newDocCache(docCacheSize),
		now:     opts.Now,
		hasher:  auditHasher{key: opts.AuditKey},
		sealer:  newSealer(),

		roundTrips: sharedRoundTrips{max: maxSharedRoundTrips},

		homeJobs:   opts.HomeJobs,
		notifyJobs: opts.NotifyJobs,
		openCounts: opts.OpenCounts,

		eventsRetention: cmp.Or(opts.EventsRetention, DefaultEventsRetention),
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Ping reports whether Redis answers; it backs the readiness probe.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("store: ping redis: %w", err)
	}
	return nil
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
