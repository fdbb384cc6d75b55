package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Standing approvals ("approve this agent's <action key> for the next N
// minutes"): how they are stored, matched, revoked and expired.
//
// The guarantees:
//
//   - once RevokeGrant returns, no request created afterwards resolves by
//     the grant;
//   - no request resolves by a grant that has expired, by the store's
//     clock (Redis's, never the replica's);
//   - a grant is gone from Redis once it expires.
//
// The design. A request is matched inside its own create transaction
// (Create with NewRequest.MatchGrants), which lives in the request's shard
// {sNN}; a MULTI cannot span slots, so the grants it matches against must
// live in that shard too. Each grant therefore has:
//
//   - its record, <p>:{grants}:grant:<id> (a hash, one slot for all grants:
//     they are few), indexed by <p>:{grants}:live and
//     <p>:{grants}:agent:<agent> (zsets by expiry): what is listed, read and
//     revoked, with who revoked it and when;
//   - a copy in every request shard, <p>:{sNN}:grant:<id> (a string: the
//     grant as JSON), indexed by <p>:{sNN}:grants:<agent> (a zset by
//     expiry): what a create matches against.
//
// CreateGrant writes the record with a script that takes its expiry from
// Redis's TIME (now + the duration), then one copy per shard, each with
// PEXPIREAT at that expiry: Redis itself drops every key of a grant when it
// expires, and a read of an expired copy finds nothing, by Redis's clock.
//
// RevokeGrant marks the record revoked (who, when), then overwrites the copy
// of every shard with a tombstone ("-", expiring with the grant) before it
// returns. A create that matches WATCHes the copies it reads: a revocation
// (or an expiry, which Redis 6.0.9+ counts as a change of a watched key)
// between its read and its EXEC fails the EXEC, and the retry reads the
// tombstone or nothing. So a create either committed before the tombstone
// of its shard was written (it was created before the revoke returned) or
// does not resolve by the grant. The tombstone, not a delete, is what a
// CreateGrant still writing its copies meets (SET NX): a copy can never be
// written after the revocation of its grant.
//
// A CreateGrant that fails half way leaves the grant live in some shards
// only: requests in the others are posted as usual, which is the safe side.

// Grant is a standing approval: the agent's requests whose decisions all
// carry ActionKey resolve as approved by By until ExpiresAt.
type Grant struct {
	ID        string     `json:"id"`
	Agent     string     `json:"agent"`
	ActionKey string     `json:"action_key"`
	By        aah.Person `json:"by"`
	GrantedAt time.Time  `json:"granted_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	// FromRequest is the request whose approval granted it.
	FromRequest string `json:"from_request,omitempty"`
	Comment     string `json:"comment,omitempty"`
	// RevokedAt and RevokedBy are set once it was revoked.
	RevokedAt time.Time   `json:"revoked_at,omitzero"`
	RevokedBy *aah.Person `json:"revoked_by,omitempty"`
	// RevocationAudited is set once the revocation was audited on the
	// request it was granted from (MarkRevocationAudited): a revocation
	// whose first attempt failed before its audit is audited by the next.
	RevocationAudited bool `json:"-"`
}

// Ref is the grant as an answer, a response and the audit carry it.
func (g Grant) Ref() aah.GrantRef {
	return aah.GrantRef{ID: g.ID, ActionKey: g.ActionKey, Agent: g.Agent, By: g.By,
		GrantedAt: g.GrantedAt, ExpiresAt: g.ExpiresAt, FromRequest: g.FromRequest}
}

// NewGrant is a standing approval to create.
type NewGrant struct {
	Agent       string
	ActionKey   string
	By          aah.Person
	Duration    time.Duration // from now, by Redis's clock
	FromRequest string
	Comment     string
}

// GrantMatch decides, inside a request's create transaction, whether the
// new request resolves by the agent's live grants (copies of its shard,
// read under WATCH): the change that resolves it, or nil to leave it
// pending. It must not block: it runs between WATCH and EXEC.
type GrantMatch func(rec Record, live []Grant) (*Change, error)

// ErrGrantNotFound: no grant has the id (never granted, or expired and gone).
var ErrGrantNotFound = errors.New("store: no such standing approval (never granted, or expired)")

// CreateGrant stores a standing approval and its copy in every shard; its
// expiry is Redis's now plus n.Duration.
func (s *Store) CreateGrant(ctx context.Context, n NewGrant) (Grant, error) {
	if n.Agent == "" || n.ActionKey == "" || n.By.ID == "" || n.Duration < time.Millisecond {
		return Grant{}, errors.New("store: create grant: agent, action key, granter and a duration are required")
	}
	g := Grant{ID: "grant_" + uuid.NewString(), Agent: n.Agent, ActionKey: n.ActionKey, By: n.By,
		FromRequest: n.FromRequest, Comment: n.Comment}
	res, err := createGrant.Run(ctx, s.rdb, []string{s.keys.grant(g.ID), s.keys.grantsLive(), s.keys.grantsOf(n.Agent)},
		g.ID, g.Agent, g.ActionKey, mustJSON(g.By), n.Duration.Milliseconds(), g.FromRequest, g.Comment).Int64Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("store: create grant for %s: %w", n.Agent, err)
	}
	g.GrantedAt, g.ExpiresAt = fromMs(res[0]), fromMs(res[1])
	copyJSON := mustJSON(g)
	for shard := range Shards {
		err := writeGrantCopy.Run(ctx, s.rdb, []string{s.keys.grantCopy(shard, g.ID), s.keys.grantCopies(shard, g.Agent)},
			g.ID, copyJSON, res[1]).Err()
		if err != nil {
			return Grant{}, fmt.Errorf("store: create grant %s: copy to shard %d: %w", g.ID, shard, err)
		}
	}
	return g, nil
}

// GetGrant reads a grant, revoked or not, until it expires.
func (s *Store) GetGrant(ctx context.Context, id string) (Grant, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.grant(id)).Result()
	if err != nil {
		return Grant{}, fmt.Errorf("store: read grant %s: %w", id, err)
	}
	if len(h) == 0 {
		return Grant{}, ErrGrantNotFound
	}
	return decodeGrant(h), nil
}

// Grants lists the live grants (neither revoked nor expired) of agent, or
// of every agent when agent is "", soonest to expire first.
func (s *Store) Grants(ctx context.Context, agent string) ([]Grant, error) {
	idx := s.keys.grantsLive()
	if agent != "" {
		idx = s.keys.grantsOf(agent)
	}
	ids, err := s.rdb.ZRange(ctx, idx, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("store: list grants: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.keys.grant(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list grants: %w", err)
	}
	var out []Grant
	for _, c := range cmds {
		// Expired (Redis dropped the record) or revoked: not live.
		if h := c.Val(); len(h) > 0 && h["revoked_ms"] == "" {
			out = append(out, decodeGrant(h))
		}
	}
	return out, nil
}

// RevokeGrant revokes a grant: its record says by whom and when, and the
// copy of every shard is a tombstone before it returns (see the design
// above). already is true when it was revoked before (the copies are
// tombstoned again all the same, so a retry after a failure completes it).
// ErrGrantNotFound when it does not exist or expired.
func (s *Store) RevokeGrant(ctx context.Context, id string, by aah.Person) (g Grant, already bool, err error) {
	g, err = s.GetGrant(ctx, id)
	if err != nil {
		return Grant{}, false, err
	}
	res, err := revokeGrant.Run(ctx, s.rdb, []string{s.keys.grant(id), s.keys.grantsLive(), s.keys.grantsOf(g.Agent)},
		id, mustJSON(by)).StringSlice()
	if errors.Is(err, redis.Nil) {
		return Grant{}, false, ErrGrantNotFound
	}
	if err != nil {
		return Grant{}, false, fmt.Errorf("store: revoke grant %s: %w", id, err)
	}
	already = res[0] == "1"
	h := map[string]string{}
	for i := 1; i+1 < len(res); i += 2 {
		h[res[i]] = res[i+1]
	}
	g = decodeGrant(h)
	for shard := range Shards {
		err := tombstoneGrant.Run(ctx, s.rdb, []string{s.keys.grantCopy(shard, id), s.keys.grantCopies(shard, g.Agent)},
			id, g.ExpiresAt.UnixMilli()).Err()
		if err != nil {
			return Grant{}, false, fmt.Errorf("store: revoke grant %s: tombstone in shard %d: %w", id, shard, err)
		}
	}
	return g, already, nil
}

// MarkRevocationAudited records that a revoked grant's revocation was
// audited (Grant.RevocationAudited). A grant gone (expired) is left alone:
// the mark never outlives it.
func (s *Store) MarkRevocationAudited(ctx context.Context, id string) error {
	if err := markRevocationAudited.Run(ctx, s.rdb, []string{s.keys.grant(id)}).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("store: mark the revocation of grant %s audited: %w", id, err)
	}
	return nil
}

func decodeGrant(h map[string]string) Grant {
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	g := Grant{ID: h["id"], Agent: h["agent"], ActionKey: h["action_key"], FromRequest: h["from_request"],
		Comment: h["comment"], GrantedAt: fromMs(num("granted_ms")), ExpiresAt: fromMs(num("expires_ms")),
		RevokedAt: fromMs(num("revoked_ms")), RevocationAudited: h["revoke_audited"] == "1"}
	_ = json.Unmarshal([]byte(h["by"]), &g.By)
	if h["revoked_by"] != "" {
		var p aah.Person
		if json.Unmarshal([]byte(h["revoked_by"]), &p) == nil {
			g.RevokedBy = &p
		}
	}
	return g
}

// grantTombstone is the value of a revoked grant's copy.
const grantTombstone = "-"

// watchGrantCopies reads agent's live grant copies of a shard inside a
// create's WATCH, watching each copy it reads (the copies' index is
// watched by the caller), so that their revocation or expiry before the
// EXEC fails it.
func (s *Store) watchGrantCopies(ctx context.Context, tx *redis.Tx, shard int, agent string) ([]Grant, error) {
	ids, err := tx.ZRange(ctx, s.keys.grantCopies(shard, agent), 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.grantCopy(shard, id)
	}
	if err := tx.Watch(ctx, keys...).Err(); err != nil {
		return nil, err
	}
	vals, err := tx.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	var live []Grant
	for _, v := range vals {
		raw, _ := v.(string)
		if raw == "" || raw == grantTombstone {
			continue // expired (Redis dropped it) or revoked
		}
		var g Grant
		if json.Unmarshal([]byte(raw), &g) == nil && g.Agent == agent {
			live = append(live, g)
		}
	}
	return live, nil
}
