package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Exactly-once Slack messages.
//
// Slack has no idempotency key: a chat.postMessage whose answer was lost, or
// whose worker died before recording the ts, cannot be told from one that
// never reached Slack, except by looking. So every message the bot sends for
// a request (the request's own message, and each reminder or escalation
// copy, called an effect: "post", "remind:<n>:<user>", "escalate:<k>:<to>")
// follows one protocol, whose store half is here:
//
//  1. BeginPost / BeginCopy counts an attempt before the Slack call, and says
//     when an earlier attempt already recorded its message (nothing to do).
//  2. From the second attempt on, an earlier one may have reached Slack
//     unrecorded: the bot looks for the message by its metadata (request id
//     and effect) in the conversation, from the first attempt on, and adopts
//     the one it finds instead of sending another.
//  3. The message carries that metadata.
//  4. RecordPost / RecordCopy record the ts fenced: the first ts recorded
//     wins; a worker whose ts lost (two attempts overlapped: a lease ran out
//     while the first was still in its Slack call) deletes its own copy.
//  5. When more than one attempt was ever started, the record also schedules
//     a sweep job one lease later, after every earlier attempt's Slack call has
//     ended: it deletes any copy but the recorded one (a loser that died
//     before deleting its own).

// Job kinds of exactly-once messages: "sweep:<id>" deletes stray copies of
// a request's messages after attempts overlapped; "copies:<id>" brings the
// reminder and escalation copies of a closed request up to date.
const (
	JobSweep  = "sweep"
	JobCopies = "copies"
	// JobNotify ("notify:<id>") tells a closed request's requester how it
	// ended, by DM: one copy effect "notify:requester:<user>". The store
	// schedules it in the transaction that closes the request
	// (Options.NotifyJobs).
	JobNotify = "notify"
)

// PostEffect names the request's own message among its effects.
const PostEffect = "post"

// ErrPostedElsewhere means another attempt recorded its message first; the
// caller's message is a duplicate to delete.
var ErrPostedElsewhere = errors.New("store: another attempt recorded its message first")

// Attempt is what beginning an attempt at an effect learned.
type Attempt struct {
	// N counts the attempts started, this one included; 0 when Done.
	N int
	// FirstAt is when the first attempt started: no copy can be older.
	FirstAt time.Time
	// Done means a message is recorded already (Copy; for the request's
	// own message, Record.Slack): send nothing.
	Done bool
	// Closed means the request closed since the caller read it (BeginPost
	// with ifOpen): no attempt was counted; send nothing.
	Closed bool
	Copy   Copy
}

// Copy is one recorded message of a request besides its own.
type Copy struct {
	Effect  string `json:"-"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	// ThreadTS is the thread the copy is a reply in ("" for top-level).
	ThreadTS string `json:"thread_ts,omitempty"`
	// Version is the request version the copy shows.
	Version int64 `json:"v"`
	// Final means the copy shows the closed request (or cannot be
	// updated): it is not touched again.
	Final bool `json:"final,omitempty"`
	// Failed is why the copy could not be sent (a recipient who cannot be
	// resolved or DM'd): recorded in its place, fenced like a copy, so it
	// is given up on, and audited, once. It has no Channel or TS.
	Failed string `json:"failed,omitempty"`
}

// CopyState is everything stored about one effect.
type CopyState struct {
	Effect   string
	Attempts int
	FirstAt  time.Time
	Copy     *Copy // nil until recorded
}

// beginPost counts an attempt at posting the request's message.
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> "1": only while the request is open (pending, partial,
//	           escalated); "0": whatever its status
//
// Returns {-1, 0} when the request does not exist, {0, 0} when its message
// is recorded, {-2, 0} when ARGV[2] is "1" and it is closed, else
// {attempts started, first attempt ms}.
var beginPost = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local h = redis.call('HMGET', KEYS[1], 'slack_ts', 'status')
if h[1] and h[1] ~= '' then return {0, 0} end
if ARGV[2] == '1' and h[2] ~= 'pending' and h[2] ~= 'partial' and h[2] ~= 'escalated' then return {-2, 0} end
local n = redis.call('HINCRBY', KEYS[1], 'post_attempts', 1)
if n == 1 then redis.call('HSET', KEYS[1], 'post_first_ms', ARGV[1]) end
return {n, tonumber(redis.call('HGET', KEYS[1], 'post_first_ms'))}
`)

// BeginPost counts an attempt at posting request id's message, before the
// Slack call. ErrNotFound when the request is gone. With ifOpen, a request
// closed meanwhile (withdrawn, say, since the caller read it open) counts
// nothing and is Attempt.Closed: checked with the count, so a close either
// comes first and nothing is posted, or finds the attempt counted and
// leaves its post job to adopt what it may have sent (approval.Withdraw).
func (s *Store) BeginPost(ctx context.Context, id string, ifOpen bool) (Attempt, error) {
	open := "0"
	if ifOpen {
		open = "1"
	}
	res, err := beginPost.Run(ctx, s.rdb, []string{s.keys.request(id)}, s.nowMs(), open).Int64Slice()
	if err != nil {
		return Attempt{}, fmt.Errorf("store: begin post of %s: %w", id, err)
	}
	switch {
	case res[0] == -2:
		return Attempt{Closed: true}, nil
	case res[0] < 0:
		return Attempt{}, ErrNotFound
	case res[0] == 0:
		return Attempt{Done: true}, nil
	}
	return Attempt{N: int(res[0]), FirstAt: fromMs(res[1])}, nil
}

// RecordPost records the request's message, fenced: when another attempt
// recorded a different message first, nothing changes and the error is
// ErrPostedElsewhere. renderedVersion is the version the message shows (0
// for a message found rather than sent: a sync job then re-renders it).
// When more than one attempt was started, a sweep job is scheduled at
// sweepAt. Recording the same message again only brings renderedVersion
// up to date.
func (s *Store) RecordPost(ctx context.Context, id, channel, ts string, renderedVersion int64, sweepAt time.Time) error {
	err := s.change(ctx, id, func(rec Record) (*Change, error) {
		if rec.Posted() && rec.Slack.TS != ts {
			return nil, ErrPostedElsewhere
		}
		ch := &Change{
			set:   map[string]any{"slack_channel": channel, "slack_ts": ts, "posted_ms": s.nowMs()},
			del:   []string{"post_error", "post_error_permanent"},
			Audit: []AuditEvent{{Event: "posted", Actor: "system", Data: map[string]any{"channel": channel, "ts": ts}}},
		}
		if renderedVersion == 1 {
			// The usual case, not written: a posted request's absent
			// rendered_version reads as 1 (decodeRecord), one hash field
			// fewer (issue #17: 16 fields keep the hash's table small).
			ch.del = append(ch.del, renderedVersionField)
		} else {
			ch.set[renderedVersionField] = renderedVersion
		}
		if !rec.Posted() && rec.Slack.Attempts <= 1 {
			// One attempt, now recorded: no other can have posted a
			// copy, so no sweep will need the count or its time (the
			// fields cost ~100 bytes of every posted request, issue #17).
			// beginPost sees slack_ts from now on and counts no more.
			ch.del = append(ch.del, "post_attempts", "post_first_ms")
		}
		if rec.Version != renderedVersion {
			ch.Jobs = []JobAt{{ID: jobID(JobSync, id), At: s.now()}}
		}
		if rec.Slack.Attempts > 1 && !rec.Posted() {
			ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobSweep, id), At: sweepAt, NotEarlier: true})
		}
		if s.homeJobs && !rec.Posted() {
			// Its Home entries gain the message's link.
			ch.Jobs = append(ch.Jobs, JobAt{ID: jobID(JobHome, id), At: s.now()})
		}
		return ch, nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrPostedElsewhere) {
		return fmt.Errorf("store: record the message of %s: %w", id, err)
	}
	return err
}

// abandonPost uncounts an attempt at posting the request's message that
// certainly sent nothing (Slack refused it, or it never called Slack).
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
var abandonPost = redis.NewScript(`
local ts = redis.call('HGET', KEYS[1], 'slack_ts')
if ts and ts ~= '' then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'post_attempts') or '0') > 0 then
  redis.call('HINCRBY', KEYS[1], 'post_attempts', -1)
end
return 1
`)

// AbandonPost uncounts an attempt begun with BeginPost that certainly sent
// nothing: Slack answered it with an error or 429, or it ended before its
// Slack call. The next attempt then needs no look-up, and no sweep follows,
// unless another attempt may still have reached Slack.
func (s *Store) AbandonPost(ctx context.Context, id string) error {
	if err := abandonPost.Run(ctx, s.rdb, []string{s.keys.request(id)}).Err(); err != nil {
		return fmt.Errorf("store: abandon an attempt at posting %s: %w", id, err)
	}
	return nil
}

// abandonCopy is abandonPost for one copy effect.
//
//	KEYS[1] -> <p>:{sNN}:copies:<id>
//	ARGV[1] -> effect
var abandonCopy = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'copy:' .. ARGV[1]) == 1 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'try:' .. ARGV[1]) or '0') > 0 then
  redis.call('HINCRBY', KEYS[1], 'try:' .. ARGV[1], -1)
end
return 1
`)

// AbandonCopy is AbandonPost for an attempt begun with BeginCopy.
func (s *Store) AbandonCopy(ctx context.Context, id, effect string) error {
	if err := abandonCopy.Run(ctx, s.rdb, []string{s.keys.copies(id)}, effect).Err(); err != nil {
		return fmt.Errorf("store: abandon an attempt at copy %s of %s: %w", effect, id, err)
	}
	return nil
}

// beginCopy counts an attempt at sending one copy, and marks the request
// (copy_tried) so that closing it schedules the copies job even if no copy
// gets recorded: that job looks for a copy whose answer was lost.
//
//	KEYS[1] -> <p>:{sNN}:copies:<id>
//	KEYS[2] -> <p>:{sNN}:req:<id>
//	ARGV[1] -> effect
//	ARGV[2] -> now, Unix ms
//
// Returns {0, 0, copy JSON} when the copy is recorded, else {attempts
// started, first attempt ms, ""}.
var beginCopy = redis.NewScript(`
local c = redis.call('HGET', KEYS[1], 'copy:' .. ARGV[1])
if c then return {0, 0, c} end
local n = redis.call('HINCRBY', KEYS[1], 'try:' .. ARGV[1], 1)
if n == 1 then redis.call('HSET', KEYS[1], 'first:' .. ARGV[1], ARGV[2]) end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSETNX', KEYS[2], 'copy_tried', '1') end
return {n, tonumber(redis.call('HGET', KEYS[1], 'first:' .. ARGV[1])), ''}
`)

// BeginCopy counts an attempt at sending request id's copy effect, before
// the Slack call.
func (s *Store) BeginCopy(ctx context.Context, id, effect string) (Attempt, error) {
	res, err := beginCopy.Run(ctx, s.rdb, []string{s.keys.copies(id), s.keys.request(id)}, effect, s.nowMs()).Slice()
	if err != nil || len(res) != 3 {
		return Attempt{}, fmt.Errorf("store: begin copy %s of %s: %w", effect, id, err)
	}
	n, _ := res[0].(int64)
	if n == 0 {
		c, err := decodeCopy(effect, fmt.Sprint(res[2]))
		return Attempt{Done: true, Copy: c}, err
	}
	first, _ := res[1].(int64)
	return Attempt{N: int(n), FirstAt: fromMs(first)}, nil
}

// recordCopy records a copy, fenced: the first one recorded wins. It counts
// the request's copies (so closing it schedules their update), schedules
// that update itself when the request closed meanwhile, and a sweep when
// attempts overlapped.
//
//	KEYS[1] -> <p>:{sNN}:copies:<id>
//	KEYS[2] -> <p>:{sNN}:req:<id>
//	KEYS[3] -> <p>:{sNN}:jobs:due
//	ARGV[1] -> effect
//	ARGV[2] -> copy JSON
//	ARGV[3] -> now, Unix ms
//	ARGV[4] -> job id "copies:<id>"
//	ARGV[5] -> job id "sweep:<id>"
//	ARGV[6] -> sweep due, Unix ms
//	ARGV[7..] -> the open statuses
//
// Returns "" when this copy was recorded, else the winner's JSON.
var recordCopy = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'copy:' .. ARGV[1], ARGV[2]) == 0 then
  return redis.call('HGET', KEYS[1], 'copy:' .. ARGV[1])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'slack_copies', 1)
  local st, open = redis.call('HGET', KEYS[2], 'status'), false
  for i = 7, #ARGV do if st == ARGV[i] then open = true end end
  if not open then
    local due = redis.call('ZSCORE', KEYS[3], ARGV[4])
    if not due or tonumber(due) > tonumber(ARGV[3]) then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4]) end
  end
end
if tonumber(redis.call('HGET', KEYS[1], 'try:' .. ARGV[1]) or '0') > 1 then
  -- One sweep serves every effect of the request: it must wait for the
  -- latest overlap to end, so a later due time wins.
  local due = redis.call('ZSCORE', KEYS[3], ARGV[5])
  if not due or tonumber(due) < tonumber(ARGV[6]) then redis.call('ZADD', KEYS[3], ARGV[6], ARGV[5]) end
end
return ''
`)

// RecordCopy records copy c, fenced: when another attempt recorded its copy
// first, won is false and winner is that copy (the caller deletes its own).
func (s *Store) RecordCopy(ctx context.Context, id string, c Copy, sweepAt time.Time) (winner Copy, won bool, err error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return Copy{}, false, fmt.Errorf("store: encode copy %s of %s: %w", c.Effect, id, err)
	}
	args := []any{c.Effect, raw, s.nowMs(), jobID(JobCopies, id), jobID(JobSweep, id), sweepAt.UnixMilli()}
	for _, st := range []aah.Status{aah.StatusPending, aah.StatusPartial, aah.StatusEscalated} {
		args = append(args, string(st))
	}
	keys := []string{s.keys.copies(id), s.keys.request(id), s.keys.jobs(shardOf(id)).due}
	res, err := recordCopy.Run(ctx, s.rdb, keys, args...).Text()
	if err != nil {
		return Copy{}, false, fmt.Errorf("store: record copy %s of %s: %w", c.Effect, id, err)
	}
	if res == "" {
		return c, true, nil
	}
	winner, err = decodeCopy(c.Effect, res)
	return winner, false, err
}

// Copies lists what is stored about every copy effect of request id.
func (s *Store) Copies(ctx context.Context, id string) ([]CopyState, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.copies(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("store: read copies of %s: %w", id, err)
	}
	byEffect := map[string]*CopyState{}
	var out []*CopyState
	state := func(effect string) *CopyState {
		if cs, ok := byEffect[effect]; ok {
			return cs
		}
		cs := &CopyState{Effect: effect}
		byEffect[effect] = cs
		out = append(out, cs)
		return cs
	}
	for field, v := range h {
		kind, effect, _ := strings.Cut(field, ":")
		switch kind {
		case "try":
			state(effect).Attempts, _ = strconv.Atoi(v)
		case "first":
			ms, _ := strconv.ParseInt(v, 10, 64)
			state(effect).FirstAt = fromMs(ms)
		case "copy":
			c, err := decodeCopy(effect, v)
			if err != nil {
				return nil, err
			}
			state(effect).Copy = &c
		}
	}
	res := make([]CopyState, len(out))
	for i, cs := range out {
		res[i] = *cs
	}
	return res, nil
}

// markCopy rewrites a recorded copy's version, and nothing when the copy
// is not recorded.
//
//	KEYS[1] -> <p>:{sNN}:copies:<id>
//	ARGV[1] -> effect
//	ARGV[2] -> copy JSON
var markCopy = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'copy:' .. ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'copy:' .. ARGV[1], ARGV[2])
return 1
`)

// MarkCopySynced records that copy c now shows c.Version (and c.Final).
func (s *Store) MarkCopySynced(ctx context.Context, id string, c Copy) error {
	raw, err := json.Marshal(c)
	if err == nil {
		err = markCopy.Run(ctx, s.rdb, []string{s.keys.copies(id)}, c.Effect, raw).Err()
	}
	if err != nil {
		return fmt.Errorf("store: mark copy %s of %s synced: %w", c.Effect, id, err)
	}
	return nil
}

func decodeCopy(effect, raw string) (Copy, error) {
	var c Copy
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return Copy{}, fmt.Errorf("store: decode copy %s: %w", effect, err)
	}
	c.Effect = effect
	return c, nil
}

// NoteChannelID remembers the id Slack reported for a channel the bot
// posts to by name ("#approvals"): finding a message again needs the id.
func (s *Store) NoteChannelID(ctx context.Context, name, id string) error {
	if err := s.rdb.Set(ctx, s.keys.channelID(name), id, 0).Err(); err != nil {
		return fmt.Errorf("store: note the id of channel %s: %w", name, err)
	}
	return nil
}

// ChannelID returns the id noted for channel name, "" when none is.
func (s *Store) ChannelID(ctx context.Context, name string) (string, error) {
	id, err := s.rdb.Get(ctx, s.keys.channelID(name)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("store: read the id of channel %s: %w", name, err)
	}
	return id, nil
}
