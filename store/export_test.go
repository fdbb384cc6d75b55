package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithFields sets raw request hash fields on ch, for tests that need a
// record in a state only a long history reaches (a delivery on its last
// retry). Production code says what changes with Change's typed fields.
func (ch *Change) WithFields(set map[string]any) *Change {
	ch.set = set
	return ch
}

// OpenCounted lists the members of agent's open-request count with their
// scores, for tests that check what the count holds.
func (s *Store) OpenCounted(ctx context.Context, agent string) (map[string]float64, error) {
	zs, err := s.rdb.ZRangeWithScores(ctx, s.keys.openCount(agent), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(zs))
	for _, z := range zs {
		out[z.Member.(string)] = z.Score
	}
	return out, nil
}

// OpenConfirmed is the least score of a confirmed member of an open-request count.
const OpenConfirmed = openConfirmed

// Prefix is the store's key prefix, and Client its Redis client: a test
// builds another process's store over the same key space with them.
func (s *Store) Prefix() string { return s.keys.prefix }

func (s *Store) Client() redis.UniversalClient { return s.rdb }

// DeferPostJob is what Create does to the post job of a request queued
// behind others (deferPost), at once, for tests that race it with a
// hand-off.
func (s *Store) DeferPostJob(ctx context.Context, id string, arrival, at time.Time) error {
	keys, args := s.deferPostArgs(postDeferral{id: id, arrival: arrival, at: at})
	return deferPost.Run(ctx, s.rdb, keys, args...).Err()
}

// PostJobDue is when the post job of request id is due (false: it is not
// waiting in the due set).
func (s *Store) PostJobDue(ctx context.Context, id string) (time.Time, bool, error) {
	return s.jobDue(ctx, JobPost, id)
}

// HomeJobDue is PostJobDue for the request's Home tabs job.
func (s *Store) HomeJobDue(ctx context.Context, id string) (time.Time, bool, error) {
	return s.jobDue(ctx, JobHome, id)
}

func (s *Store) jobDue(ctx context.Context, kind, id string) (time.Time, bool, error) {
	score, err := s.rdb.ZScore(ctx, s.keys.jobs(shardOf(id)).due, jobID(kind, id)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	return fromScore(score), err == nil, err
}

// OneNodeOnly reports whether ctx carries calls the store makes on one
// Redis node only (oneNodeOnly), for the test that checks every other
// call's KEYS share one Cluster slot.
func OneNodeOnly(ctx context.Context) bool {
	v, _ := ctx.Value(oneNodeKey{}).(bool)
	return v
}

// DeleteDocumentForTest deletes request id's document key alone: what a
// reader sees of a request the retention sweep deleted between its reads.
func (s *Store) DeleteDocumentForTest(ctx context.Context, id string) error {
	return s.rdb.Del(ctx, s.keys.document(id)).Err()
}

// DocS2 is the leading byte of a document stored as an S2 block, what
// every create writes (doccodec.go).
const DocS2 = docS2

// RequestAuditKey is the key of request id's audit chain, for a test that
// makes a create's write fail part-way (a key of the wrong type).
func (s *Store) RequestAuditKey(id string) string { return s.keys.auditRequest(id) }

// RateKey is the key of agent's intake bucket.
func (s *Store) RateKey(agent string) string { return s.keys.rate(agent) }
