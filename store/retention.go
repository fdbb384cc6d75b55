package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// JobRetain is the retention sweep of one shard, a periodic job of that
// shard's queue: "retain:sNN" (Job.RequestID is "sNN", Job.Shard the shard).
// Its handler runs Sweep and schedules the next run (ScheduleRetention).
const JobRetain = "retain"

// RetainJobID names the retention job of a shard.
func RetainJobID(shard int) string { return fmt.Sprintf("%s:s%02d", JobRetain, shard) }

// ScheduleRetention schedules each shard's retention job at `at`, unless it
// is already due or running: every replica calls it at start, and the job
// then stays one per shard.
func (s *Store) ScheduleRetention(ctx context.Context, at time.Time) error {
	for shard := range Shards {
		k := s.keys.jobs(shard)
		if err := scheduleOnce.Run(ctx, s.rdb, []string{k.due, k.inflight}, RetainJobID(shard), at.UnixMilli()).Err(); err != nil {
			return fmt.Errorf("store: schedule the retention job of shard %d: %w", shard, err)
		}
	}
	return nil
}

// RescheduleRetention sets the next run of a shard's retention job (its
// handler calls it before it returns; the ack leaves the due entry).
func (s *Store) RescheduleRetention(ctx context.Context, shard int, at time.Time) error {
	err := s.rdb.ZAdd(ctx, s.keys.jobs(shard).due, redis.Z{Score: float64(at.UnixMilli()), Member: RetainJobID(shard)}).Err()
	if err != nil {
		return fmt.Errorf("store: reschedule the retention job of shard %d: %w", shard, err)
	}
	return nil
}

// RetentionOptions configure one Sweep.
type RetentionOptions struct {
	// Retention is how long a closed request, and an exported audit entry,
	// are kept; it must be positive.
	Retention time.Duration
	// Batch bounds the requests deleted and the global entries trimmed by
	// one run (default 200); Scan the closed requests looked at (default
	// 10 × Batch).
	Batch, Scan int
}

// SweepReport is what one Sweep did and saw.
type SweepReport struct {
	Deleted int // requests deleted
	Trimmed int // global entries removed from the front of the chain
	// Waiting counts closed requests past retention that are kept only
	// because the export mark does not cover their audit yet (among those
	// looked at).
	Waiting int
	// UnexportedSince is the time of the shard's oldest global entry no
	// export covers (zero: all are covered).
	UnexportedSince time.Time
	// More says a limit cut the run short: run again soon.
	More bool
}

// closedStatuses are the statuses retention deletes requests in.
var closedStatuses = []aah.Status{aah.StatusResolved, aah.StatusExpired, aah.StatusWithdrawn}

// retainedJobKinds are the jobs of a request that keep it: while one is
// due or running (a delivery of its response, above all) it is not deleted.
var retainedJobKinds = []string{JobDeliver, JobPost, JobSync, JobCopies, JobSweep, JobHome, JobEvents}

// Sweep applies retention to one shard: it deletes the closed requests
// whose close is older than Retention and whose every audit entry the
// shard's export mark covers, with no job of theirs pending (each in one
// script that checks all of it again, see deleteRequest), then trims the
// front of the shard's global chain over the entries that are exported and
// older than Retention, recording the last one removed as the chain's base.
// Work is bounded by Batch and Scan. It is idempotent: a second run over
// the same state does nothing.
func (s *Store) Sweep(ctx context.Context, shard int, o RetentionOptions) (SweepReport, error) {
	var rep SweepReport
	if o.Retention <= 0 {
		return rep, errors.New("store: sweep: retention must be positive")
	}
	o.Batch = cmp.Or(o.Batch, 200)
	o.Scan = cmp.Or(o.Scan, 10*o.Batch)
	cutoff := s.now().Add(-o.Retention).UnixMilli()
	// The sweep reads the chain up to its head: seal what is pending first.
	if _, err := s.SealShard(ctx, shard); err != nil {
		return rep, err
	}
	mark, err := s.exportMark(ctx, shard)
	if err != nil {
		return rep, err
	}
	// Each status index is scanned from where the last run stopped (its
	// offset among the requests received before the cutoff): requests
	// that must be kept (a callback pending, no export yet) would
	// otherwise fill the window of every run, and the run, cut short
	// by Scan, would ask to run again at once, forever, without ever
	// reaching the requests after them. A pass that reaches the end of
	// an index starts it over at the next run.
	offsets, err := s.rdb.HMGet(ctx, s.keys.retention(shard), scanOffsetFields()...).Result()
	if err != nil {
		return rep, fmt.Errorf("store: sweep shard %d: %w", shard, err)
	}
	next := make([]any, 0, 2*len(closedStatuses))
	scanned := 0
	for i, st := range closedStatuses {
		off, _ := strconv.ParseInt(fmt.Sprint(offsets[i]), 10, 64)
		off = max(off, 0)
		if scanned >= o.Scan || rep.Deleted >= o.Batch {
			rep.More = true
			next = append(next, scanOffsetField(st), off)
			continue
		}
		want := o.Scan - scanned
		ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.keys.statusIndex(shard, st), ByScore: true,
			Start: "-inf", Stop: strconv.FormatInt(cutoff, 10), Offset: off, Count: int64(want)}).Result()
		if err != nil {
			return rep, fmt.Errorf("store: sweep shard %d: %w", shard, err)
		}
		scanned += len(ids)
		if err := s.backfillGseq(ctx, shard, ids); err != nil {
			return rep, err
		}
		looked, gone := 0, 0
		for _, id := range ids {
			if rep.Deleted >= o.Batch {
				break
			}
			looked++
			switch res, err := s.deleteRequest(ctx, id, st, cutoff); {
			case err != nil:
				return rep, err
			case res == deleted:
				rep.Deleted++
				gone++
			case res == unexported:
				rep.Waiting++
			}
		}
		if looked == len(ids) && len(ids) < want {
			off = 0 // the end of the index: the next run starts it over
		} else {
			off += int64(looked - gone) // the deleted ones no longer take a rank
			rep.More = true
		}
		next = append(next, scanOffsetField(st), off)
	}
	// Recorded now: a trim that fails below must not send the next run
	// back over the same window.
	if err := s.rdb.HSet(ctx, s.keys.retention(shard), next...).Err(); err != nil {
		return rep, fmt.Errorf("store: sweep shard %d: record where it stopped: %w", shard, err)
	}
	trimmed, oldest, err := s.trimGlobal(ctx, shard, mark, cutoff, o.Batch)
	if err != nil {
		return rep, err
	}
	rep.Trimmed, rep.UnexportedSince = trimmed, oldest
	rep.More = rep.More || trimmed >= o.Batch
	fields := []any{"swept_ms", s.nowMs(), "waiting", rep.Waiting, "unexported_ms", 0}
	if !oldest.IsZero() {
		fields[5] = oldest.UnixMilli()
	}
	if err := s.rdb.HSet(ctx, s.keys.retention(shard), fields...).Err(); err != nil {
		return rep, fmt.Errorf("store: sweep shard %d: record it: %w", shard, err)
	}
	return rep, nil
}

// scanOffsetField is the retention hash's field holding where the next
// sweep goes on scanning a closed status's index.
func scanOffsetField(st aah.Status) string { return "scan_offset:" + string(st) }

func scanOffsetFields() []string {
	out := make([]string, len(closedStatuses))
	for i, st := range closedStatuses {
		out[i] = scanOffsetField(st)
	}
	return out
}

// backfillGseq records audit_gseq on the requests among ids stored before
// it was recorded (no audit write since), so the sweep can tell whether an
// export covers them: the global entry naming the request's newest entry is
// looked up in the shard's chain, in one pass for all of them. Not found,
// it was trimmed (the chain's base covers it, and only exported entries are
// trimmed). HSETNX: an audit write meanwhile recorded a newer value itself.
func (s *Store) backfillGseq(ctx context.Context, shard int, ids []string) error {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.request(id), gseqField, "audit_head")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("store: sweep shard %d: %w", shard, err)
	}
	legacy := map[string]string{} // newest entry's hash -> request id
	for i, c := range cmds {
		if v := c.Val(); len(v) == 2 && v[0] == nil && v[1] != nil {
			legacy[parseHead(v[1].(string)).hash] = ids[i]
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	g, err := s.readShardChainMeta(ctx, shard)
	if err != nil {
		return err
	}
	found := map[string]int64{}
	head := parseHead(g.head).seq
	last := g.base.seq
	err = s.pageChain(ctx, s.keys.auditShard(shard), 0, head-g.base.seq-1, func(i int64, e AuditEntry) error {
		// Another sweep trimmed the chain's front while it was read a
		// page at a time: the pages shifted and entries were skipped,
		// so "not found" would no longer mean "trimmed" (exported).
		if e.Seq != g.base.seq+1+i {
			return errChainShifted
		}
		last = e.Seq
		if id, ok := legacy[e.EntryHash]; ok && e.RequestID == id {
			found[id] = e.Seq
		}
		return nil
	})
	if errors.Is(err, errChainShifted) || (err == nil && last != head) {
		return nil // skipped entries (the list came up short): leave them for the next run
	} else if err != nil {
		return err
	}
	for _, id := range legacy {
		seq, ok := found[id]
		if !ok && g.base.seq == 0 {
			continue // nothing was trimmed, so it should be there: leave the request be
		} else if !ok {
			seq = g.base.seq
		}
		if err := s.rdb.HSetNX(ctx, s.keys.request(id), gseqField, seq).Err(); err != nil {
			return fmt.Errorf("store: sweep shard %d: %w", shard, err)
		}
	}
	return nil
}

var errChainShifted = errors.New("store: the chain was trimmed while it was read")

// readShardChainMeta reads a shard chain's head and base (not its entries).
func (s *Store) readShardChainMeta(ctx context.Context, shard int) (shardChain, error) {
	var head, base *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		head = p.Get(ctx, s.keys.auditShardHead(shard))
		base = p.Get(ctx, s.keys.auditShardBase(shard))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return shardChain{}, fmt.Errorf("store: read audit head of shard %d: %w", shard, err)
	}
	return shardChain{head: head.Val(), base: parseHead(base.Val())}, nil
}

func (s *Store) exportMark(ctx context.Context, shard int) (int64, error) {
	v, err := s.rdb.Get(ctx, s.keys.auditShardExported(shard)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("store: read the export mark of shard %d: %w", shard, err)
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n, nil
}

// Outcomes of deleteRequest (the script's answers).
const (
	deleted    = 1
	kept       = 0 // gone, moved, not closed long enough, or a job pending
	unexported = 2 // closed long enough, but its audit is not exported yet
)

// deleteRequest deletes one request if, checked again atomically, it is
// still closed in status st, closed before cutoff (ms), its newest audit
// entry is covered by the export mark, and no job of it is due or running.
func (s *Store) deleteRequest(ctx context.Context, id string, st aah.Status, cutoff int64) (int, error) {
	shard := shardOf(id)
	h, err := s.rdb.HMGet(ctx, s.keys.request(id), "agent", "channel").Result()
	if err != nil {
		return 0, fmt.Errorf("store: sweep %s: %w", id, err)
	}
	agent, _ := h[0].(string)
	channel, _ := h[1].(string)
	if agent == "" {
		return kept, nil
	}
	k := s.keys.jobs(shard)
	keys := []string{s.keys.request(id), s.keys.auditRequest(id), s.keys.deliveries(id), s.keys.copies(id),
		s.keys.statusIndex(shard, st), s.keys.agentIndex(shard, agent, ""), s.keys.agentIndex(shard, agent, st),
		s.keys.auditShardExported(shard), k.due, k.inflight,
		s.keys.openIndex(shard), s.keys.deadlineIndex(shard), s.keys.channelIndex(shard, channel),
		s.keys.document(id)}
	args := []any{string(st), agent, channel, cutoff}
	for _, kind := range retainedJobKinds {
		args = append(args, jobID(kind, id))
	}
	res, err := deleteRetained.Run(ctx, s.rdb, keys, append([]any{id}, args...)...).Int()
	if err != nil {
		return 0, fmt.Errorf("store: sweep %s: %w", id, err)
	}
	if res == deleted && channel != "" {
		// A post never made (closed first, or never run) leaves its channel's
		// queue too; that is the channel's slot, so after the delete.
		if err := s.LeavePostQueue(ctx, PostTurn{Channel: channel, ID: id}); err != nil {
			return res, err
		}
	}
	return res, nil
}

// trimGlobal removes from the front of a shard's global chain up to batch
// entries that the mark covers and that are older than cutoff (ms), and
// returns how many it removed and the time of the oldest entry the mark
// does not cover (zero: none).
func (s *Store) trimGlobal(ctx context.Context, shard int, mark, cutoff int64, batch int) (int, time.Time, error) {
	key, baseKey := s.keys.auditShard(shard), s.keys.auditShardBase(shard)
	var list *redis.StringSliceCmd
	var base *redis.StringCmd
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		list = p.LRange(ctx, key, 0, int64(batch))
		base = p.Get(ctx, baseKey)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return 0, time.Time{}, fmt.Errorf("store: sweep shard %d: read its chain: %w", shard, err)
	}
	raw := list.Val()
	n := 0
	var last AuditEntry
	for _, r := range raw[:min(len(raw), batch)] {
		var e AuditEntry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			return 0, time.Time{}, fmt.Errorf("store: sweep shard %d: entry is not JSON: %w", shard, err)
		}
		if e.Seq > mark || e.At.UnixMilli() >= cutoff {
			break
		}
		n, last = n+1, e
	}
	if n > 0 {
		ok, err := trimChain.Run(ctx, s.rdb, []string{key, baseKey}, base.Val(), n, raw[n-1],
			chainHead{seq: last.Seq, hash: last.Hash}.String()).Int()
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("store: sweep shard %d: trim its chain: %w", shard, err)
		}
		if ok == 0 {
			n = 0 // another sweep trimmed it meanwhile: the next run goes on
		}
	}
	oldest, err := s.firstUnexported(ctx, shard, mark)
	return n, oldest, err
}

// firstUnexported is the time of the first global entry past the mark
// (zero: none). The chain holds base+1 onwards; base <= mark.
func (s *Store) firstUnexported(ctx context.Context, shard int, mark int64) (time.Time, error) {
	var first *redis.StringCmd
	var base *redis.StringCmd
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		base = p.Get(ctx, s.keys.auditShardBase(shard))
		first = p.LIndex(ctx, s.keys.auditShard(shard), 0)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, fmt.Errorf("store: sweep shard %d: %w", shard, err)
	}
	idx := mark - parseHead(base.Val()).seq
	raw := first.Val()
	if idx > 0 {
		v, err := s.rdb.LIndex(ctx, s.keys.auditShard(shard), idx).Result()
		if errors.Is(err, redis.Nil) {
			return time.Time{}, nil
		} else if err != nil {
			return time.Time{}, fmt.Errorf("store: sweep shard %d: %w", shard, err)
		}
		raw = v
	}
	if raw == "" {
		return time.Time{}, nil
	}
	var e AuditEntry
	if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Seq <= mark {
		return time.Time{}, err
	}
	return e.At, nil
}

// RetentionState is what the last sweeps of all shards recorded: the
// closed requests past retention that wait for an export, and the oldest
// entry no export covers (zero: none). It backs the retention gauges.
type RetentionState struct {
	Waiting         int64
	UnexportedSince time.Time
}

// Retention sums the shards' retention records (one HMGET each).
func (s *Store) Retention(ctx context.Context) (RetentionState, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, Shards)
	for shard := range Shards {
		cmds[shard] = pipe.HMGet(ctx, s.keys.retention(shard), "waiting", "unexported_ms")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return RetentionState{}, fmt.Errorf("store: read retention state: %w", err)
	}
	var out RetentionState
	for _, c := range cmds {
		v := c.Val()
		if len(v) != 2 {
			continue
		}
		w, _ := v[0].(string)
		n, _ := strconv.ParseInt(w, 10, 64)
		out.Waiting += n
		u, _ := v[1].(string)
		if ms, _ := strconv.ParseInt(u, 10, 64); ms > 0 && (out.UnexportedSince.IsZero() || fromMs(ms).Before(out.UnexportedSince)) {
			out.UnexportedSince = fromMs(ms)
		}
	}
	return out, nil
}

// ExportRun is the part of one shard's global chain an export holds: the
// entries From to To (global seqs, inclusive).
type ExportRun struct {
	Shard    int
	From, To int64
}

// MarkExported records that a completed export holds runs: each shard's
// export mark advances to the run's end when the run starts at or before
// the entry after the mark, so the mark never skips a gap. It returns the
// shards whose mark advanced.
func (s *Store) MarkExported(ctx context.Context, runs []ExportRun) ([]int, error) {
	var advanced []int
	for _, r := range runs {
		ok, err := advanceMark.Run(ctx, s.rdb, []string{s.keys.auditShardExported(r.Shard)}, r.From, r.To).Int()
		if err != nil {
			return advanced, fmt.Errorf("store: mark shard %d exported: %w", r.Shard, err)
		}
		if ok == 1 {
			advanced = append(advanced, r.Shard)
		}
	}
	return advanced, nil
}

// ExportMarks returns every shard's export mark.
func (s *Store) ExportMarks(ctx context.Context) ([]int64, error) {
	out := make([]int64, Shards)
	for shard := range Shards {
		m, err := s.exportMark(ctx, shard)
		if err != nil {
			return nil, err
		}
		out[shard] = m
	}
	return out, nil
}
