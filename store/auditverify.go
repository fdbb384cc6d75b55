package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Verifying every chain at once (approvalbot audit verify): the shards'
// global chains, their pending entries, and every request chain.

// VerifyReport is the outcome of verifying every chain.
type VerifyReport struct {
	Requests, Entries int
	// Deleted counts global entries whose request the retention sweep
	// deleted after they were exported.
	Deleted int
	// Pending counts global entries not sealed yet (seal.go): their
	// sequence and the request entries they name are checked, their links
	// are written by the sealer shortly after they are.
	Pending  int
	Problems []error
}

// VerifyAll verifies every shard's global chain (from its base, when
// retention trimmed its front) and every request chain, and that each
// global entry matches the request entry it names. Request chains are found
// through the global chain and through the shard's indexes (a request whose
// global entries were all trimmed is still checked). A global entry may
// name a request that is gone only when the export mark covers it (the
// retention sweep deleted it), and entries before a request's first global
// entry belong to an earlier request of that id, deleted by retention.
func (s *Store) VerifyAll(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	for shard := range Shards {
		g, err := s.readShardChain(ctx, shard)
		if err != nil {
			return rep, err
		}
		global := g.entries
		name := fmt.Sprintf("shard %02d", shard)
		if err := (AuditVerifier{hasher: s.hasher}).verifyFrom(name, g.base, global); err != nil {
			rep.Problems = append(rep.Problems, err)
		}
		if err := lastMatchesHead(name, lastOr(global, g.base), g.head); err != nil {
			rep.Problems = append(rep.Problems, err)
		}
		if err := pendingFollows(name, lastOr(global, g.base), g.pending); err != nil {
			rep.Problems = append(rep.Problems, err)
		}
		rep.Pending += len(g.pending)
		global = append(global, g.pending...)
		if g.base.seq > g.mark {
			// The sweep trims only entries the mark covers (and the mark
			// never moves back): entries no export holds were removed.
			// Read the mark again first: an export may have run since.
			if g.mark, err = s.exportMark(ctx, shard); err != nil {
				return rep, err
			}
			if g.base.seq > g.mark {
				rep.Problems = append(rep.Problems, &ChainError{Chain: name, Seq: g.base.seq, Reason: fmt.Sprintf(
					"the chain's base is entry %d, past the export mark %d: entries no export covers were removed from its front", g.base.seq, g.mark)})
			}
		}
		chains := map[string]requestChainRead{}
		check := func(id string) (requestChainRead, error) {
			c, seen := chains[id]
			if seen {
				return c, nil
			}
			c, err := s.readRequestChain(ctx, id)
			if err != nil {
				return c, err
			}
			chains[id] = c
			if c.head != "" || len(c.entries) > 0 {
				rep.Requests++
				rep.Entries += len(c.entries)
				rep.Problems = append(rep.Problems, s.verifyRequestChain(id, c.entries, c.head)...)
			}
			return c, nil
		}
		for _, e := range global {
			if e.EntryHash == "" && e.Event == EventIntakeRefused {
				// A standalone entry (a refused intake, see
				// AuditIntakeRefusal): no request chain holds it, and the
				// chain's hashes, checked above, cover it.
				continue
			}
			c, err := check(e.RequestID)
			if err != nil {
				return rep, err
			}
			gone := c.head == "" && len(c.entries) == 0
			held := containsHash(c.entries, e.EntryHash)
			if !held && (gone || e.Seq < c.gseq0) && e.Seq > g.mark {
				// An export and a sweep (and a new request of the id)
				// may have run since the chain was read: the mark now
				// may cover it.
				if g.mark, err = s.exportMark(ctx, shard); err != nil {
					return rep, err
				}
			}
			switch {
			case held:
			case gone && e.Seq <= g.mark:
				rep.Deleted++ // exported, then deleted by the retention sweep
			case gone:
				rep.Problems = append(rep.Problems, &ChainError{Chain: name, Seq: e.Seq,
					Reason: "references request " + e.RequestID + ", which is gone although no export covers the entry"})
			case e.Seq < c.gseq0 && e.Seq <= g.mark:
				rep.Deleted++ // of an earlier request of that id, exported and deleted
			default:
				rep.Problems = append(rep.Problems, &ChainError{Chain: name, Seq: e.Seq,
					Reason: "references entry " + e.EntryHash + " which request " + e.RequestID + "'s chain does not hold"})
			}
		}
		if err := s.eachRequest(ctx, shard, func(id string) error { _, err := check(id); return err }); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// shardChain is a shard's global chain as read in one transaction: its
// entries (after base), its head, its base (the last entry the retention
// sweep removed; zero when none was), its export mark, and the entries
// written but not sealed yet (seal.go).
type shardChain struct {
	entries []AuditEntry
	head    string
	base    chainHead
	mark    int64
	pending []AuditEntry
}

func (s *Store) readShardChain(ctx context.Context, shard int) (shardChain, error) {
	var list, pending *redis.StringSliceCmd
	var head, base, mark *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		list = p.LRange(ctx, s.keys.auditShard(shard), 0, -1)
		head = p.Get(ctx, s.keys.auditShardHead(shard))
		base = p.Get(ctx, s.keys.auditShardBase(shard))
		mark = p.Get(ctx, s.keys.auditShardExported(shard))
		pending = p.LRange(ctx, s.keys.auditShardPending(shard), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return shardChain{}, fmt.Errorf("store: read audit chain of shard %d: %w", shard, err)
	}
	entries, err := decodeChain(s.keys.auditShard(shard), list.Val())
	if err != nil {
		return shardChain{}, err
	}
	waiting, err := decodeChain(s.keys.auditShardPending(shard), pending.Val())
	m, _ := strconv.ParseInt(mark.Val(), 10, 64)
	return shardChain{entries: entries, head: head.Val(), base: parseHead(base.Val()), mark: m, pending: waiting}, err
}

// eachRequest calls fn with the id of every request of a shard, as its
// indexes hold them, a page at a time: the open ones (idx:open, as pending
// requests have no status index), then the closed ones by status. A
// request that closes meanwhile may be named twice.
func (s *Store) eachRequest(ctx context.Context, shard int, fn func(string) error) error {
	keys := []string{s.keys.openIndex(shard)}
	for _, st := range aah.Statuses {
		if !st.Open() {
			keys = append(keys, s.keys.statusIndex(shard, st))
		}
	}
	for _, key := range keys {
		for start := int64(0); ; start += exportPage {
			ids, err := s.rdb.ZRange(ctx, key, start, start+exportPage-1).Result()
			if err != nil {
				return fmt.Errorf("store: list requests of shard %d: %w", shard, err)
			}
			for _, id := range ids {
				if err := fn(id); err != nil {
					return err
				}
			}
			if len(ids) < exportPage {
				break
			}
		}
	}
	return nil
}

// tailMatches checks a chain ends where its stored head says it does, so
// dropping the newest entries is noticed too. (Dropping them and rewriting
// the head as well takes write access to Redis; an external anchor of the
// heads is the defence against that.)
func tailMatches(name string, entries []AuditEntry, head string) error {
	return lastMatchesHead(name, lastOf(entries), head)
}

// lastOr is the head a chain of entries ends at, base when it is empty.
func lastOr(entries []AuditEntry, base chainHead) chainHead {
	if len(entries) == 0 {
		return base
	}
	return lastOf(entries)
}

// lastOf is the head a chain of entries ends at (zero when it is empty).
func lastOf(entries []AuditEntry) chainHead {
	if n := len(entries); n > 0 {
		return chainHead{seq: entries[n-1].Seq, hash: entries[n-1].Hash}
	}
	return chainHead{}
}

// lastMatchesHead checks that a chain whose last entry is last ends at
// head, the "seq:hash" stored for it.
func lastMatchesHead(name string, last chainHead, head string) error {
	if head == "" && last == (chainHead{}) {
		return nil
	}
	if got := parseHead(head); got != last {
		return &ChainError{Chain: name, Seq: last.seq + 1,
			Reason: fmt.Sprintf("the chain ends at entry %d but its head records entry %d: entries were removed from its end", last.seq, got.seq)}
	}
	return nil
}

// pendingFollows checks that a shard's pending entries continue its chain,
// whose last entry is last: consecutive seqs, not linked yet.
func pendingFollows(name string, last chainHead, pending []AuditEntry) error {
	seq := last.seq
	for _, e := range pending {
		seq++
		switch {
		case e.Seq != seq:
			return &ChainError{Chain: name, Seq: seq, Reason: fmt.Sprintf("pending entry's sequence number is %d, want %d (an entry was removed or inserted)", e.Seq, seq)}
		case e.Prev != "" || e.Hash != "":
			return &ChainError{Chain: name, Seq: seq, Reason: "a pending entry is linked, but only the sealer links entries, as it seals them"}
		}
	}
	return nil
}

func containsHash(entries []AuditEntry, h string) bool {
	for _, e := range entries {
		if e.Hash == h {
			return true
		}
	}
	return false
}
