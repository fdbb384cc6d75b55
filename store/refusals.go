package store

import (
	"context"
	"errors"
	"fmt"
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
// It is appended as every global entry is (cmdGlobalAudit, then sealed),
// in one round trip.
func (s *Store) AuditIntakeRefusal(ctx context.Context, r IntakeRefusal) error {
	if r.Agent == "" || r.BodyHash == "" || r.Rule == "" {
		return errors.New("store: audit intake refusal: agent, body hash and rule are required")
	}
	shard := shardOf(r.BodyHash)
	if r.ArtifactID != "" {
		shard = shardOf(r.ArtifactID)
	}
	data := map[string]any{"rule": r.Rule, "body_hash": r.BodyHash, "problems": r.Problems}
	e := AuditEntry{At: s.now().UTC(), RequestID: r.ArtifactID, Event: EventIntakeRefused, Actor: "agent:" + r.Agent, Data: data}
	p := s.record()
	chain := s.keys.auditShard(shard)
	p.Do(ctx, cmdGlobalAudit, chain, s.keys.auditShardPending(shard), s.keys.auditShardBase(shard),
		s.keys.auditShardSeq(shard), "", "0", mustJSON(e))
	if _, err := s.apply(ctx, chain, write{cmds: p.Cmds(), sealShard: shard}); err != nil {
		return fmt.Errorf("store: audit intake refusal of agent %s: %w", r.Agent, err)
	}
	return nil
}

// IntakeRefusals returns every refused intake in the audit, shard by shard,
// oldest first within a shard.
func (s *Store) IntakeRefusals(ctx context.Context) ([]AuditEntry, error) {
	var out []AuditEntry
	for shard := range Shards {
		g, err := s.readShardChain(ctx, shard)
		if err != nil {
			return nil, err
		}
		global := append(g.entries, g.pending...)
		for _, e := range global {
			if e.Event == EventIntakeRefused && e.EntryHash == "" {
				out = append(out, e)
			}
		}
	}
	return out, nil
}
