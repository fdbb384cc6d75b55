package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// EventIntakeRefused is the audit event of a decision request intake
// refused by the workspace's authorization policy.
const EventIntakeRefused = "intake_refused"

// IntakeRefusal is a decision request that intake refused by policy: it
// would loosen the workspace's sign-off rules, or nobody could decide it.
// The request itself is not stored (it was refused), only who sent it, how
// to recognise it, and why.
type IntakeRefusal struct {
	ArtifactID string // as sent; "" when the agent sent none
	Agent      string // the authenticated agent
	BodyHash   string // canonical SHA-256 of the body, so the agent's copy can be matched
	Rule       string // the policy rule that refused it
	// Problems are the refusal's field errors, "field: message".
	Problems []string
}

// AuditIntakeRefusal records a refused request in the audit. A refused
// request has no record and so no chain of its own: the entry goes straight
// into the global chain of the shard its artifact id (or, without one, its
// body hash) maps to, as a standalone entry (Event set, no EntryHash) whose
// own hash covers what it says. VerifyAll checks it like every link of that
// chain; it references no request chain.
//
// Keys: <p>:{sNN}:audit and <p>:{sNN}:audit:head of that shard (WATCHed, as
// every writer of the shard's chain does).
func (s *Store) AuditIntakeRefusal(ctx context.Context, r IntakeRefusal) error {
	if r.Agent == "" || r.BodyHash == "" || r.Rule == "" {
		return errors.New("store: audit intake refusal: agent, body hash and rule are required")
	}
	shard := shardOf(r.BodyHash)
	if r.ArtifactID != "" {
		shard = shardOf(r.ArtifactID)
	}
	chainKey, headKey := s.keys.auditShard(shard), s.keys.auditShardHead(shard)
	data := map[string]any{"rule": r.Rule, "body_hash": r.BodyHash, "problems": r.Problems}
	for attempt := range 200 {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			raw, err := tx.Get(ctx, headKey).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			head := parseHead(raw)
			e := AuditEntry{Seq: head.seq + 1, At: s.now().UTC(), RequestID: r.ArtifactID, Event: EventIntakeRefused,
				Actor: "agent:" + r.Agent, Data: data, Prev: head.hash}
			e.Hash = s.hasher.sum(e)
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.RPush(ctx, chainKey, mustJSON(e))
				p.Set(ctx, headKey, chainHead{seq: e.Seq, hash: e.Hash}.String(), 0)
				return nil
			})
			return err
		}, headKey)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, redis.TxFailedErr):
			// Another write to the shard's chain: back off a little, read the head again.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20)))))
		default:
			return fmt.Errorf("store: audit intake refusal of agent %s: %w", r.Agent, err)
		}
	}
	return fmt.Errorf("store: audit intake refusal of agent %s: too much contention", r.Agent)
}

// IntakeRefusals returns every refused intake in the audit, shard by shard,
// oldest first within a shard.
func (s *Store) IntakeRefusals(ctx context.Context) ([]AuditEntry, error) {
	var out []AuditEntry
	for shard := range Shards {
		global, err := s.readChain(ctx, s.keys.auditShard(shard))
		if err != nil {
			return nil, err
		}
		for _, e := range global {
			if e.Event == EventIntakeRefused && e.EntryHash == "" {
				out = append(out, e)
			}
		}
	}
	return out, nil
}
