package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sealing the shards' global audit chains.
//
// A write appends its global entries to the shard's pending list with the
// next sequence numbers, atomically with the write itself (applyWrite's
// cmdGlobalAudit), but does not link them: linking needs the previous
// entry's hash, and reading it would serialise every write of the shard
// (they used to WATCH the chain's head and retry each other). The sealer
// links them afterwards, in sequence order: for each pending entry it
// writes prev (the hash of the entry before it) and hash (HMAC-SHA256 under
// AUDIT_KEY, as every entry), moves it to the chain and advances the head,
// in one script that applies only if the head is still the one it read.
// Any number of sealers (one per process) may run: they compute the same
// links, and the one whose script finds the head moved writes nothing.
//
// What a pending entry proves: its request entry's hash (entry_hash, which
// the request's own chain covers) and its place (seq). Until it is sealed,
// removing it from the end of the pending list is not detected by the
// shard's chain (as removing the newest sealed entries together with the
// head is not, without an external anchor of the heads); every request
// chain still is. Sealing follows the writes of this process within
// sealGather and runs over every shard each interval of RunSealer (bot:
// one second), so an entry stays pending for some 50 ms, or that interval
// after its writer crashed.

// sealGather is how long the sealer waits after a write wakes it, so that
// the writes that follow join the same batch. Each batch costs two round
// trips and two scripts per shard written whatever it holds: at 5 ms, a
// thousand requests a second (a create and a post each) sealed in some 150
// batches a second, 1.5 seals per request (issue #17); at 20 ms, some 45,
// still 2.2 script calls per request end to end; at 50 ms, some 18.
const sealGather = 50 * time.Millisecond

// sealBatch is the most entries one seal script moves.
const sealBatch = 512

// sealGlobal moves sealed entries from a shard's pending list to its chain.
//
//	KEYS[1] -> <p>:{sNN}:audit-pending
//	KEYS[2] -> <p>:{sNN}:audit
//	KEYS[3] -> <p>:{sNN}:audit:head
//	ARGV[1] -> the head the entries were linked to ("" when none)
//	ARGV[2] -> the new head, "<seq>:<hash>" of the last entry
//	ARGV[3…] -> the sealed entries, oldest first: the first len(ARGV)-2
//	            entries of the pending list, prev and hash filled in
//
// Returns the number of entries moved, 0 when the head moved meanwhile
// (another sealer sealed them).
var sealGlobal = redis.NewScript(`
if (redis.call('GET', KEYS[3]) or '') ~= ARGV[1] then return 0 end
-- One RPUSH for the batch (at most sealBatch entries: well within what
-- unpack can pass), not one per entry: a call per request saved.
if #ARGV > 2 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 3)) end
redis.call('LTRIM', KEYS[1], #ARGV - 2, -1)
redis.call('SET', KEYS[3], ARGV[2])
return #ARGV - 2
`)

// readPending reads what sealing a shard needs, atomically.
//
//	KEYS[1] -> <p>:{sNN}:audit-pending
//	KEYS[2] -> <p>:{sNN}:audit
//	KEYS[3] -> <p>:{sNN}:audit:head
//	ARGV[1] -> the most pending entries to read
//
// Returns {head or "", the chain's last entry or "", pending entries…}.
var readPending = redis.NewScript(`
local out = {redis.call('GET', KEYS[3]) or '', redis.call('LINDEX', KEYS[2], -1) or ''}
for _, e in ipairs(redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do out[#out + 1] = e end
return out
`)

// SealShard links the pending global entries of one shard (up to
// sealBatch per round trip, until none is left) and returns how many it
// sealed.
func (s *Store) SealShard(ctx context.Context, shard int) (int, error) {
	total := 0
	for {
		read, err := readPending.Run(ctx, s.rdb, s.sealKeys(shard), sealBatch).StringSlice()
		if err != nil {
			return total, fmt.Errorf("store: seal the audit of shard %d: read: %w", shard, err)
		}
		args, err := s.link(shard, read)
		if err != nil || args == nil {
			return total, err
		}
		n, err := sealGlobal.Run(ctx, s.rdb, s.sealKeys(shard), args...).Int()
		if err != nil {
			return total, fmt.Errorf("store: seal the audit of shard %d: %w", shard, err)
		}
		total += n
		if n > 0 && len(read)-2 < sealBatch {
			return total, nil
		}
		// A full batch, or another sealer moved the head: read again.
	}
}

// sealShards seals the shards named, in two round trips for all of them
// (the reads pipelined, then the seals), under load the common case; a
// shard with more than a batch pending, or sealed meanwhile by another
// replica, goes on by itself (SealShard).
func (s *Store) sealShards(ctx context.Context, shards []int) error {
	reads := make([]*redis.Cmd, len(shards))
	pipe := s.rdb.Pipeline()
	for i, shard := range shards {
		reads[i] = readPending.EvalSha(ctx, pipe, s.sealKeys(shard), sealBatch)
	}
	_, _ = pipe.Exec(ctx) // each command's error is read below
	var errs []error
	alone := func(shard int) {
		if _, err := s.SealShard(ctx, shard); err != nil {
			errs = append(errs, err)
		}
	}
	type sealing struct {
		shard int
		full  bool
		cmd   *redis.Cmd
	}
	var seals []sealing
	pipe = s.rdb.Pipeline()
	for i, shard := range shards {
		read, err := reads[i].StringSlice()
		if err != nil {
			alone(shard) // NOSCRIPT after Redis restarted, say: Run loads it
			continue
		}
		args, err := s.link(shard, read)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if args != nil {
			seals = append(seals, sealing{shard, len(read)-2 >= sealBatch, sealGlobal.EvalSha(ctx, pipe, s.sealKeys(shard), args...)})
		}
	}
	if len(seals) > 0 {
		_, _ = pipe.Exec(ctx)
	}
	for _, sl := range seals {
		if n, err := sl.cmd.Int(); err != nil || n == 0 || sl.full {
			alone(sl.shard)
		}
	}
	return errors.Join(errs...)
}

// sealKeys are the keys of readPending and sealGlobal.
func (s *Store) sealKeys(shard int) []string {
	return []string{s.keys.auditShardPending(shard), s.keys.auditShard(shard), s.keys.auditShardHead(shard)}
}

// link computes the sealGlobal arguments for what readPending read of a
// shard: nil when nothing is pending.
func (s *Store) link(shard int, read []string) ([]any, error) {
	if len(read) <= 2 {
		return nil, nil
	}
	head, raw := read[0], read[2:]
	prev := parseHead(head)
	if err := s.sealsUnderThisKey(read[1], prev); err != nil {
		return nil, fmt.Errorf("store: seal the audit of shard %d: %w", shard, err)
	}
	args := make([]any, 0, 2+len(raw))
	args = append(args, head, "")
	for _, r := range raw {
		var e AuditEntry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			return nil, fmt.Errorf("store: seal the audit of shard %d: pending entry is not JSON: %w", shard, err)
		}
		if e.Seq != prev.seq+1 {
			// Never link over a gap: the chain would verify without the
			// missing entry. Left for an operator (audit verify names it).
			return nil, fmt.Errorf("store: seal the audit of shard %d: pending entry %d does not follow entry %d", shard, e.Seq, prev.seq)
		}
		e.Prev = prev.hash
		var encoded string
		if payload, ok := linkPending(r, e); ok {
			e.Hash, encoded = s.hasher.sealPayload(payload)
		} else {
			e.Hash, encoded = s.hasher.seal(e)
		}
		args = append(args, encoded)
		prev = chainHead{seq: e.Seq, hash: e.Hash}
	}
	args[1] = prev.String()
	return args, nil
}

// pendingSuffix ends a pending entry's JSON: not linked, not hashed.
const pendingSuffix = `"prev":"",` + hashSuffix

// linkPending is the payload a pending entry is hashed over, its link
// (e.Prev) written in, made from its JSON as stored when that is exactly
// what encoding the decoded entry gives (an entry without data, as every
// entry naming a request entry is), so that it need not be encoded again.
func linkPending(raw string, e AuditEntry) ([]byte, bool) {
	head, ok := strings.CutSuffix(raw, pendingSuffix)
	if !ok || e.Data != nil || e.Event != "" || e.Actor != "" {
		return nil, false
	}
	return []byte(head + `"prev":"` + e.Prev + `",` + hashSuffix), true
}

// sealsUnderThisKey refuses to seal after a last sealed entry (raw, at
// head) whose hash this process's hasher does not reproduce: a process with
// another AUDIT_KEY (a command line run without it, say) would otherwise
// link new entries under the wrong key for good.
func (s *Store) sealsUnderThisKey(raw string, head chainHead) error {
	if raw == "" {
		return nil // nothing sealed yet, or all of it trimmed: nothing to check against
	}
	var last AuditEntry
	if err := json.Unmarshal([]byte(raw), &last); err != nil {
		return fmt.Errorf("the chain's last entry is not JSON: %w", err)
	}
	if last.Seq != head.seq || last.Hash != head.hash || s.hasher.sum(last) != last.Hash {
		return errors.New("the chain's last sealed entry does not verify under this process's audit key " +
			"(is AUDIT_KEY the one the service runs with?): nothing sealed")
	}
	return nil
}

// Seal seals every shard's pending global entries.
func (s *Store) Seal(ctx context.Context) error {
	all := make([]int, Shards)
	for shard := range all {
		all[shard] = shard
	}
	return s.sealShards(ctx, all)
}

// sealer is the state of RunSealer, woken by this process's writes.
type sealer struct {
	dirty atomic.Uint32 // a bit per shard written since the last seal
	wake  chan struct{}
}

func newSealer() *sealer { return &sealer{wake: make(chan struct{}, 1)} }

// wakeSealer tells the sealer that shard has pending entries.
func (s *Store) wakeSealer(shard int) {
	s.sealer.dirty.Or(1 << uint(shard))
	select {
	case s.sealer.wake <- struct{}{}:
	default:
	}
}

// RunSealer seals pending global audit entries until ctx ends: the shards
// this process wrote to as soon as it wrote (a seal in progress collects
// the writes that arrive meanwhile into the next batch), and every shard
// each interval (other processes' writes, when they are gone).
func (s *Store) RunSealer(ctx context.Context, interval time.Duration, log *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var shards uint32
		select {
		case <-ctx.Done():
			return
		case <-s.sealer.wake:
			// Let the writes of the next few ms join this seal: one
			// batch per shard instead of two round trips per write.
			select {
			case <-ctx.Done():
				return
			case <-time.After(sealGather):
			}
			shards = s.sealer.dirty.Swap(0)
		case <-tick.C:
			shards = 1<<Shards - 1
		}
		var dirty []int
		for shard := range Shards {
			if shards&(1<<uint(shard)) != 0 {
				dirty = append(dirty, shard)
			}
		}
		if err := s.sealShards(ctx, dirty); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "audit: sealing the shards' chains failed", "err", err)
		}
	}
}
