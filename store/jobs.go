package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Job is one claimed unit of work: run it, then Ack, Retry or Bury it with
// the same Job value. The lease token inside fences a worker whose lease ran
// out and was reclaimed: its Ack then fails with ErrLeaseLost.
type Job struct {
	ID        string // "<kind>:<request id>"
	Kind      string
	RequestID string
	Attempt   int // 1 on the first run
	Shard     int
	// Due is when the job was due; claim time minus Due is its lateness.
	Due   time.Time
	token string
}

// ErrLeaseLost means the job's lease expired and another worker may own it.
var ErrLeaseLost = errors.New("store: job lease lost")

// DeadJob is a dead-lettered job.
type DeadJob struct {
	ID       string    `json:"id"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	DiedAt   time.Time `json:"died_at"`
}

// Claim leases up to max due jobs of one shard for lease. Expired leases of
// crashed workers are reclaimed first.
func (s *Store) Claim(ctx context.Context, shard, max int, lease time.Duration) ([]Job, error) {
	jobs, _, err := s.ClaimNext(ctx, shard, max, lease)
	return jobs, err
}

// ClaimNext is Claim that also returns when the shard's next job is due
// after now (zero when none is), in the same round trip: a runner sleeps
// until then instead of polling.
func (s *Store) ClaimNext(ctx context.Context, shard, max int, lease time.Duration) ([]Job, time.Time, error) {
	k := s.keys.jobs(shard)
	token := uuid.NewString()
	res, err := claimJobs.Run(ctx, s.rdb, []string{k.due, k.inflight, k.lease, k.attempts},
		s.nowMs(), lease.Milliseconds(), max, token).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, time.Time{}, fmt.Errorf("store: claim jobs of shard %d: %w", shard, err)
	}
	jobs := make([]Job, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		id, _ := res[i].(string)
		attempt, _ := res[i+1].(int64)
		kind, reqID, _ := strings.Cut(id, ":")
		jobs = append(jobs, Job{ID: id, Kind: kind, RequestID: reqID, Attempt: int(attempt), Shard: shard,
			Due: fromScore(res[i+2]), token: token})
	}
	var next time.Time
	if len(res)%3 == 1 {
		next = nextScore(res[len(res)-1])
	}
	return jobs, next, nil
}

// nextScore reads a script's "next job due" answer: a due score, or "-1"
// (zero time) when the shard has none.
func nextScore(v any) time.Time {
	if ms, _ := strconv.ParseFloat(fmt.Sprint(v), 64); ms > 0 {
		return fromScore(v)
	}
	return time.Time{}
}

// fromScore reads a due score (Unix ms, possibly with a fraction: intake
// schedules a post to the microsecond, which orders its channel's queue).
func fromScore(v any) time.Time {
	ms, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return time.UnixMicro(int64(math.Round(ms * 1000)))
}

// Ack completes a job.
func (s *Store) Ack(ctx context.Context, j Job) error {
	k := s.keys.jobs(j.Shard)
	ok, err := ackJob.Run(ctx, s.rdb, []string{k.inflight, k.lease, k.attempts}, j.ID, j.token).Int()
	return leaseResult("ack", j, ok, err)
}

// AckNext is Ack that also tells when the job's shard has its earliest job
// due (zero: it has none): a job often schedules its request's next, and a
// runner that knows when that is due need not claim the shard again to
// find out.
func (s *Store) AckNext(ctx context.Context, j Job) (next time.Time, err error) {
	k := s.keys.jobs(j.Shard)
	res, err := ackJobNext.Run(ctx, s.rdb, []string{k.inflight, k.lease, k.attempts, k.due}, j.ID, j.token).Slice()
	ok := 0
	if err == nil && len(res) == 2 {
		n, _ := res[0].(int64)
		ok = int(n)
		next = nextScore(res[1])
	} else if err == nil {
		err = fmt.Errorf("store: unexpected answer %v", res)
	}
	return next, leaseResult("ack", j, ok, err)
}

// Retry releases a job to run again at `at`. When countAttempt is false the
// run does not count against the job's attempts (pacing and rate limits are
// not failures).
func (s *Store) Retry(ctx context.Context, j Job, at time.Time, countAttempt bool) error {
	k := s.keys.jobs(j.Shard)
	free := "0"
	if !countAttempt {
		free = "1"
	}
	ok, err := retryJob.Run(ctx, s.rdb, []string{k.due, k.inflight, k.lease, k.attempts},
		j.ID, j.token, at.UnixMilli(), free).Int()
	return leaseResult("retry", j, ok, err)
}

// Bury moves a job to its shard's dead-letter list.
func (s *Store) Bury(ctx context.Context, j Job, reason string) error {
	k := s.keys.jobs(j.Shard)
	entry, err := json.Marshal(DeadJob{ID: j.ID, Attempts: j.Attempt, Error: reason, DiedAt: s.now().UTC()})
	if err != nil {
		return fmt.Errorf("store: bury job %s: %w", j.ID, err)
	}
	ok, err := buryJob.Run(ctx, s.rdb, []string{k.inflight, k.lease, k.attempts, k.dead},
		j.ID, j.token, entry, s.deadCap).Int()
	return leaseResult("bury", j, ok, err)
}

func leaseResult(op string, j Job, ok int, err error) error {
	if err != nil {
		return fmt.Errorf("store: %s job %s: %w", op, j.ID, err)
	}
	if ok == 0 {
		return fmt.Errorf("store: %s job %s: %w", op, j.ID, ErrLeaseLost)
	}
	return nil
}

// QueueDepth counts jobs across all shards.
type QueueDepth struct {
	Due, InFlight, Dead int64
	// OldestDue is how long the oldest due job has waited (0 when none is due).
	OldestDue time.Duration
}

// Depth reports the job queue's size; it backs the outbox metrics.
func (s *Store) Depth(ctx context.Context) (QueueDepth, error) {
	pipe := s.rdb.Pipeline()
	type shardCmds struct {
		due, inflight, dead *redis.IntCmd
		oldest              *redis.ZSliceCmd
	}
	cmds := make([]shardCmds, Shards)
	now := s.nowMs()
	for shard := range Shards {
		k := s.keys.jobs(shard)
		cmds[shard] = shardCmds{
			due:      pipe.ZCount(ctx, k.due, "-inf", fmt.Sprint(now)),
			inflight: pipe.ZCard(ctx, k.inflight),
			dead:     pipe.LLen(ctx, k.dead),
			oldest:   pipe.ZRangeWithScores(ctx, k.due, 0, 0),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return QueueDepth{}, fmt.Errorf("store: queue depth: %w", err)
	}
	var d QueueDepth
	for _, c := range cmds {
		d.Due += c.due.Val()
		d.InFlight += c.inflight.Val()
		d.Dead += c.dead.Val()
		if z := c.oldest.Val(); len(z) > 0 && int64(z[0].Score) < now {
			d.OldestDue = max(d.OldestDue, time.Duration(now-int64(z[0].Score))*time.Millisecond)
		}
	}
	return d, nil
}

// DeadJobs lists a shard's dead-lettered jobs, newest first.
func (s *Store) DeadJobs(ctx context.Context, shard int) ([]DeadJob, error) {
	raw, err := s.rdb.LRange(ctx, s.keys.jobs(shard).dead, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("store: list dead jobs of shard %d: %w", shard, err)
	}
	out := make([]DeadJob, 0, len(raw))
	for _, r := range raw {
		var d DeadJob
		if json.Unmarshal([]byte(r), &d) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}
